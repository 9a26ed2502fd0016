/**
 * The OpenAPI 3.1 document, generated from the same zod schemas the router validates with, so
 * the document cannot drift from the behaviour. Served at GET /openapi.json.
 */
import { z } from 'zod';
import type { AnyRoute } from './route.ts';

type JsonSchema = Record<string, unknown>;

const COMPONENTS_URI = '#/components/schemas/';

/** JSON Schema of a zod schema for OpenAPI: no `$schema`, named schemas as component refs. */
function toSchema(schema: z.ZodType, io: 'input' | 'output', components: Record<string, JsonSchema>): JsonSchema {
  const json = z.toJSONSchema(schema, {
    io,
    target: 'draft-2020-12',
    unrepresentable: 'any',
  }) as JsonSchema;
  delete json.$schema;
  // Named sub-schemas (`.meta({ id })`) come back under $defs: hoist them into components.
  const defs = json.$defs as Record<string, JsonSchema> | undefined;
  if (defs) {
    for (const [id, def] of Object.entries(defs)) components[id] = stripId(def);
    delete json.$defs;
  }
  const id = typeof json.id === 'string' ? json.id : undefined;
  if (id) {
    components[id] = stripId(json);
    return { $ref: `${COMPONENTS_URI}${id}` };
  }
  return rewriteDefRefs(json);
}

function stripId(schema: JsonSchema): JsonSchema {
  const { id: _id, $id: _dollarId, ...rest } = schema;
  return rewriteDefRefs(rest);
}

/** `#/$defs/X` → `#/components/schemas/X` anywhere inside the schema. */
function rewriteDefRefs(schema: JsonSchema): JsonSchema {
  return JSON.parse(JSON.stringify(schema).replaceAll('"#/$defs/', `"${COMPONENTS_URI}`)) as JsonSchema;
}

/** The properties of a strict object schema, each as one OpenAPI parameter. */
function parameters(
  schema: z.ZodType,
  location: 'path' | 'query',
  components: Record<string, JsonSchema>,
): JsonSchema[] {
  const shape = (schema as unknown as { shape?: Record<string, z.ZodType> }).shape ?? {};
  return Object.entries(shape).map(([name, property]) => {
    const json = toSchema(property, 'input', components);
    const { description, ...rest } = json;
    return {
      name,
      in: location,
      required: location === 'path' || !property.safeParse(undefined).success,
      ...(typeof description === 'string' ? { description } : {}),
      schema: rest,
    };
  });
}

export function buildOpenApiDocument(routes: readonly AnyRoute[]): Record<string, unknown> {
  const components: Record<string, JsonSchema> = {};
  const paths: Record<string, Record<string, unknown>> = {};
  for (const route of routes) {
    const operation: Record<string, unknown> = {
      operationId: route.operationId,
      summary: route.summary,
      parameters: [...parameters(route.params, 'path', components), ...parameters(route.query, 'query', components)],
      responses: Object.fromEntries(
        Object.entries(route.responses).map(([status, spec]) => [
          status,
          {
            description: spec.description,
            ...(spec.schema
              ? { content: { 'application/json': { schema: toSchema(spec.schema, 'output', components) } } }
              : {}),
          },
        ]),
      ),
    };
    if (route.body) {
      operation.requestBody = {
        required: route.body.required,
        content: { 'application/json': { schema: toSchema(route.body.schema, 'input', components) } },
      };
    }
    paths[route.path] ??= {};
    paths[route.path]![route.method.toLowerCase()] = operation;
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'Task scheduler API',
      version: '1',
      description:
        'Submit, inspect, cancel and retry tasks; read and set tenant settings. Errors are ' +
        '`{ "error": { "code", "message", "details"? } }`. Deployed behind API Gateway with IAM (SigV4) authorization.',
    },
    paths,
    components: { schemas: components },
  };
}
