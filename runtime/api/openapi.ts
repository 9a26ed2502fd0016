/**
 * The OpenAPI 3.1 document, generated from the same zod schemas the router validates with, so
 * the document cannot drift from the behaviour. Served at GET /openapi.json.
 */
import { z } from 'zod';
import { EXAMPLE_BATCH_ID, EXAMPLE_CURSOR, EXAMPLE_ERRORS, EXAMPLE_TASK_ID, EXAMPLE_TENANT_ID } from './examples.ts';
import { MAX_BODY_BYTES } from './limits.ts';
import type { AnyRoute } from './route.ts';
import { errorResponseSchema } from './views.ts';

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

/** An example value of each path and query parameter (contract tools need one to call). */
const PARAMETER_EXAMPLES: Readonly<Record<string, string>> = {
  taskId: EXAMPLE_TASK_ID,
  batchId: EXAMPLE_BATCH_ID,
  tenantId: EXAMPLE_TENANT_ID,
  state: 'SUCCEEDED',
  limit: '20',
  cursor: EXAMPLE_CURSOR,
  recent: '5',
  tenants: `${EXAMPLE_TENANT_ID},globex`,
};

/**
 * Refusals any operation can answer, besides the ones its route lists: an unknown path below
 * it (404 route_not_found), another method on its path (405), a body over the limit (413, read
 * before routing) and an unexpected failure (500, no internals, a request id).
 */
const COMMON_ERRORS: Readonly<Record<number, string>> = {
  404: 'No route for this method and path (`route_not_found`), or no such task (`task_not_found`)',
  405: 'The path exists but not with this method (`method_not_allowed`; the Allow header lists those that do)',
  413: `The body is larger than ${MAX_BODY_BYTES} bytes (\`body_too_large\`)`,
  500: 'Unexpected failure (`internal_error`); the message carries a request id and nothing internal',
};

/**
 * What API Gateway itself answers on the deployed stack, before the router runs, with a body of
 * its own (`{ "message": "..." }`; the SDK turns it into a SchedulerApiError with code
 * `http_<status>`): a refused signature (IAM authorization on every route), a path or method no
 * route has, the stage's throttling (lib/task-api.ts), a function that failed or was throttled.
 */
const GATEWAY_ANSWERS: Readonly<Record<number, { message: string; description: string }>> = {
  403: {
    message: 'Forbidden',
    description: 'API Gateway refused the request\'s SigV4 signature or credentials (`{ "message" }`)',
  },
  404: { message: 'Not Found', description: 'API Gateway has no route for the method and path (`{ "message" }`)' },
  429: {
    message: 'Too Many Requests',
    description:
      'Deployed: API Gateway\'s stage throttling refused the request (`{ "message" }`); a request safe to repeat can be sent again after a backoff, as the SDK does',
  },
  500: {
    message: 'Internal Server Error',
    description: 'API Gateway could not run the function (throttled or failed; `{ "message" }`)',
  },
};

const GATEWAY_MESSAGE_REF = { $ref: `${COMPONENTS_URI}GatewayMessage` };

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
      ...(PARAMETER_EXAMPLES[name] === undefined ? {} : { example: PARAMETER_EXAMPLES[name] }),
    };
  });
}

/** The JSON content of a response or request body, with its example. */
function jsonContent(schema: JsonSchema, example: unknown): Record<string, unknown> {
  return { 'application/json': { schema, ...(example === undefined ? {} : { example }) } };
}

export function buildOpenApiDocument(routes: readonly AnyRoute[]): Record<string, unknown> {
  const components: Record<string, JsonSchema> = {};
  const paths: Record<string, Record<string, unknown>> = {};
  const errorSchema = toSchema(errorResponseSchema, 'output', components);
  components.GatewayMessage = {
    type: 'object',
    description: "API Gateway's own answer on the deployed stack (not the API's `{ error }`)",
    properties: { message: { type: 'string' } },
    required: ['message'],
  };
  const errorExample = (status: number) => {
    const error = EXAMPLE_ERRORS[status];
    return error ? { error } : undefined;
  };
  for (const route of routes) {
    const responses: Record<string, unknown> = {};
    for (const [status, spec] of Object.entries(route.responses)) {
      const example = spec.example ?? (Number(status) >= 400 ? errorExample(Number(status)) : undefined);
      responses[status] = {
        description: spec.description,
        ...(spec.schema ? { content: jsonContent(toSchema(spec.schema, 'output', components), example) } : {}),
      };
    }
    for (const [status, description] of Object.entries(COMMON_ERRORS)) {
      responses[status] ??= { description, content: jsonContent(errorSchema, errorExample(Number(status))) };
    }
    // Deployed, API Gateway answers some statuses itself, before the router, as `{ "message" }`.
    for (const [status, gateway] of Object.entries(GATEWAY_ANSWERS)) {
      const own = responses[status] as { description: string; content?: Record<string, JsonSchema> } | undefined;
      const media = own?.content?.['application/json'] as { schema: JsonSchema; example?: unknown } | undefined;
      responses[status] = {
        description: own ? `${own.description}; deployed, also ${gateway.description}` : gateway.description,
        content: jsonContent(
          media ? { anyOf: [media.schema, GATEWAY_MESSAGE_REF] } : GATEWAY_MESSAGE_REF,
          media?.example ?? { message: gateway.message },
        ),
      };
    }
    const operation: Record<string, unknown> = {
      operationId: route.operationId,
      summary: route.summary,
      tags: [route.path.startsWith('/v1/tenants') ? 'tenants' : route.path.startsWith('/v1/') ? 'tasks' : 'service'],
      parameters: [...parameters(route.params, 'path', components), ...parameters(route.query, 'query', components)],
      responses,
    };
    if (route.body) {
      operation.requestBody = {
        required: route.body.required,
        content: jsonContent(toSchema(route.body.schema, 'input', components), route.body.example),
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
      license: { name: 'Apache-2.0', identifier: 'Apache-2.0' },
    },
    servers: [
      { url: 'http://127.0.0.1:3000', description: 'Local runtime (`npm start`); no authorization' },
      {
        url: 'https://{apiId}.execute-api.{region}.amazonaws.com',
        description: 'Deployed stack (API Gateway HTTP API, `$default` stage); see the ApiUrl stack output',
        variables: {
          apiId: { default: 'abcdef1234', description: 'The HTTP API id' },
          region: { default: 'eu-west-1', description: 'The AWS Region of the stack' },
        },
      },
    ],
    // Every route is IAM-authorized on AWS: requests are signed with SigV4 (service execute-api).
    security: [{ sigv4: [] }],
    tags: [
      { name: 'tasks', description: 'Submit, read, list, cancel and retry tasks; the status view' },
      { name: 'tenants', description: "A tenant's settings, counts and fair share" },
      { name: 'service', description: 'Liveness and this document' },
    ],
    paths,
    components: {
      schemas: components,
      securitySchemes: {
        sigv4: {
          type: 'apiKey',
          name: 'Authorization',
          in: 'header',
          description:
            'AWS Signature Version 4 (service `execute-api`): the Authorization, X-Amz-Date and, for ' +
            'temporary credentials, X-Amz-Security-Token headers. The local runtime does not check it.',
          'x-amazon-apigateway-authtype': 'awsSigv4',
        },
      },
    },
  };
}
