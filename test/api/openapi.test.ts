import { describe, expect, it } from 'vitest';
import { EXAMPLE_WAIT } from '../../runtime/api/examples.ts';
import { buildOpenApiDocument } from '../../runtime/api/openapi.ts';
import { API_ROUTES } from '../../runtime/api/routes.ts';
import { explainWait } from '../../runtime/app/wait.ts';
import { exampleWaitFixture } from './wait-example.ts';

interface Document {
  openapi: string;
  paths: Record<
    string,
    Record<
      string,
      {
        operationId: string;
        parameters: { name: string; in: string; required: boolean }[];
        requestBody?: unknown;
        responses: Record<string, unknown>;
      }
    >
  >;
  components: { schemas: Record<string, unknown> };
}

const document = buildOpenApiDocument(API_ROUTES) as unknown as Document;

describe('Function: buildOpenApiDocument', () => {
  it('documents dependsOn, its 400 unknown_dependency and the DEPENDENCY_FAILED code (issue 25)', () => {
    const submit = document.paths['/v1/tasks']!.post! as unknown as {
      requestBody: {
        content: { 'application/json': { schema: { properties: Record<string, Record<string, unknown>> } } };
      };
      responses: Record<string, { description: string; content: { 'application/json': { example: unknown } } }>;
    };
    const dependsOn = submit.requestBody.content['application/json'].schema.properties.dependsOn!;
    expect(dependsOn).toMatchObject({ type: 'array', minItems: 1, maxItems: 100 });
    expect(String(dependsOn.description)).toContain('DEPENDENCY_FAILED');
    expect(submit.responses['400']!.content['application/json'].example).toMatchObject({
      error: { code: 'unknown_dependency', details: { missing: [expect.any(String)] } },
    });
    const task = document.components.schemas.Task as { properties: Record<string, { anyOf?: unknown[] }> };
    expect(Object.keys(task.properties)).toEqual(expect.arrayContaining(['dependsOn', 'waitingOn', 'error']));
    expect(JSON.stringify(task.properties.error)).toContain('DEPENDENCY_FAILED');
    expect(JSON.stringify(document.components.schemas.Wait)).toContain('dependencies');
  });

  it("documents a batch's then-task without the fields the route refuses (dependsOn, idempotencyKey)", () => {
    const batch = document.paths['/v1/tasks/batch']!.post! as unknown as {
      requestBody: { content: { 'application/json': { schema: { properties: Record<string, unknown> } } } };
    };
    const then = batch.requestBody.content['application/json'].schema.properties.then as {
      properties: Record<string, unknown>;
      additionalProperties?: boolean;
    };
    expect(Object.keys(then.properties)).toEqual(expect.arrayContaining(['tenantId', 'type', 'payload', 'runAt']));
    expect(Object.keys(then.properties)).not.toContain('dependsOn');
    expect(Object.keys(then.properties)).not.toContain('idempotencyKey');
    expect(then.additionalProperties).toBe(false);
  });

  it('shows a Wait example the code gives: the explanation of the situation it describes', () => {
    // Prepare
    const { task, input } = exampleWaitFixture();
    // Act
    const wait = explainWait(task, input);
    // Assess
    expect(wait).toEqual(EXAMPLE_WAIT);
  });

  it('says a listing ends where nextCursor is absent, not where a page is short', () => {
    // Pages merge index shards (runtime/adapters/index-keys.ts mergePages): a page may stop short
    // of `limit`, or hold nothing, and still have a nextCursor (GET /v1/tasks?state=SUCCEEDED over
    // 2,506 tasks of one tenant, local runtime, default limit 20: 130 pages, 25 short before the
    // last). A client that stops at the first short page misses tasks.
    const schemas = document.components.schemas as Record<
      string,
      { properties: { nextCursor: { description: string } } }
    >;
    for (const page of ['TaskPage', 'BatchPage']) {
      const description = schemas[page]!.properties.nextCursor.description;
      expect(description).toMatch(/fewer items than `limit`, or none, and still have one/);
    }
  });

  it('is OpenAPI 3.1', () => {
    expect(document.openapi).toBe('3.1.0');
  });

  it('documents every route of the router, and nothing else', () => {
    // Prepare
    const routes = API_ROUTES.map((route) => `${route.method} ${route.path}`).sort();

    // Act
    const documented = Object.entries(document.paths)
      .flatMap(([path, operations]) => Object.keys(operations).map((method) => `${method.toUpperCase()} ${path}`))
      .sort();

    // Assess
    expect(documented).toEqual(routes);
    // At least the routes of PRODUCT.md "HTTP API" (other read-only views may be added).
    expect(documented).toEqual(
      expect.arrayContaining([
        'GET /health',
        'GET /openapi.json',
        'GET /v1/tasks',
        'GET /v1/tasks/{taskId}',
        'GET /v1/tenants/{tenantId}',
        'POST /v1/tasks',
        'POST /v1/tasks/{taskId}/cancel',
        'POST /v1/tasks/{taskId}/retry',
        'PUT /v1/tenants/{tenantId}',
      ]),
    );
  });

  it('generates parameters and bodies from the zod schemas', () => {
    // Act
    const list = document.paths['/v1/tasks']!.get!;
    const submit = document.paths['/v1/tasks']!.post!;
    const getTask = document.paths['/v1/tasks/{taskId}']!.get!;

    // Assess
    expect(list.parameters.map((p) => [p.name, p.in, p.required])).toEqual([
      ['tenantId', 'query', true],
      ['state', 'query', false],
      ['limit', 'query', false],
      ['cursor', 'query', false],
    ]);
    expect(getTask.parameters).toEqual([
      expect.objectContaining({
        name: 'taskId',
        in: 'path',
        required: true,
        schema: expect.objectContaining({ maxLength: 128 }),
      }),
    ]);
    expect(submit.requestBody).toMatchObject({
      required: true,
      content: {
        'application/json': {
          schema: {
            type: 'object',
            additionalProperties: false,
            required: ['tenantId', 'type'],
            properties: { timeoutSeconds: { type: 'integer', minimum: 1, maximum: 86_400 } },
          },
        },
      },
    });
    expect(Object.keys(submit.responses).sort()).toEqual([
      '200',
      '202',
      '400',
      '403',
      '404',
      '405',
      '409',
      '413',
      '415',
      '429',
      '500',
    ]);
  });

  it('resolves every $ref to a component schema', () => {
    // Act
    const refs = [...JSON.stringify(document).matchAll(/"\$ref":"([^"]+)"/g)].map((match) => match[1]!);

    // Assess
    expect(refs.length).toBeGreaterThan(0);
    for (const ref of refs) {
      expect(ref).toMatch(/^#\/components\/schemas\//);
      expect(document.components.schemas).toHaveProperty(ref.slice('#/components/schemas/'.length));
    }
    expect(JSON.stringify(document)).not.toContain('$defs');
  });
});
