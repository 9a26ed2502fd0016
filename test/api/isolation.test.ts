/**
 * Tenant isolation through the deployed API function (runtime/handlers/api.ts, built from the
 * environment the stack sets, pointed at the emulators): with `deploy.callers` mapping one role to
 * tenant `alpha` and another to `beta`, a caller acting for `beta` cannot read, change, cancel,
 * list, count or infer `alpha`'s work, and the same idempotency key, batch key or concurrency key
 * in the two tenants names two things.
 */
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Emulators, startEmulators } from '../../local/emulators.ts';
import { createCallerAuthorizer } from '../../runtime/api/authorization.ts';
import { createApiRouter } from '../../runtime/api/router.ts';
import { buildServices, type Services } from '../../runtime/app/wiring.ts';
import { OPEN_BATCH_SHARDS, openShardOf } from '../../runtime/core/batch.ts';
import { type ConfigInput, parseConfig } from '../../runtime/core/config.ts';
import { mostGenerous, settingsAbove } from '../../runtime/core/tenant-settings.ts';
import { type ApiEventInput, apiEvent, jsonOf } from '../helpers/api-events.ts';
import { runningTask, succeededTask } from '../helpers/factories.ts';
import { lambdaEnvironment } from '../helpers/services.ts';

const ACCOUNT = '111122223333';
const ALPHA = `arn:aws:sts::${ACCOUNT}:assumed-role/alpha-service/s1`;
const BETA = `arn:aws:sts::${ACCOUNT}:assumed-role/beta-service/s1`;
const OPS = `arn:aws:iam::${ACCOUNT}:user/ops`;

const CONFIG: ConfigInput = {
  tenants: { alpha: { weight: 1, maxConcurrency: 5 }, beta: { weight: 1, maxConcurrency: 5 } },
  deploy: {
    callers: {
      [`arn:aws:iam::${ACCOUNT}:role/alpha-service`]: ['alpha'],
      [`arn:aws:iam::${ACCOUNT}:role/beta-service`]: ['beta'],
      [OPS]: ['*'],
    },
  },
};

let emulators: Emulators;
let services: Services;
let handler: (event: APIGatewayProxyEventV2) => Promise<APIGatewayProxyStructuredResultV2>;
const saved = { ...process.env };

beforeAll(async () => {
  emulators = await startEmulators({ prefix: 'isolation' });
  Object.assign(process.env, lambdaEnvironment(emulators, CONFIG));
  // Imported only now: the module builds its services from the environment at load time.
  ({ handler } = await import('../../runtime/handlers/api.ts'));
  // The same tables and queues, to put tasks in states no API call makes.
  services = buildServices({
    config: parseConfig(CONFIG, 'test configuration'),
    clients: emulators.clients,
    resources: { tables: emulators.tables, queueUrls: emulators.queueUrls },
  });
});
afterAll(async () => {
  process.env = saved;
  await emulators.stop();
});

const as = (userArn: string, input: ApiEventInput) => handler(apiEvent({ ...input, iam: { userArn } }));
const submit = (userArn: string, body: Record<string, unknown>) =>
  as(userArn, { method: 'POST', path: '/v1/tasks', json: { type: 'demo.echo', ...body } });
const body = <T = Record<string, unknown>>(result: APIGatewayProxyStructuredResultV2) => jsonOf<T>(result);
type ErrorBody = { error: { code: string; message: string; details?: Record<string, unknown> } };

describe('Isolation: tasks by id', () => {
  it("answers beta's read, cancel and retry of alpha's task exactly as for an id that does not exist", async () => {
    // Prepare
    const queued = body(await submit(ALPHA, { tenantId: 'alpha' }));
    const alphaId = queued.taskId as string;
    const missingId = 'tsk_00000000000000000000000000000000';

    // Act
    const probe = async (taskId: string) =>
      Promise.all([
        as(BETA, { path: `/v1/tasks/${taskId}` }),
        as(BETA, { method: 'HEAD', path: `/v1/tasks/${taskId}` }),
        as(BETA, { method: 'POST', path: `/v1/tasks/${taskId}/cancel` }),
        as(BETA, { method: 'POST', path: `/v1/tasks/${taskId}/retry` }),
      ]);
    const foreign = await probe(alphaId);
    const missing = await probe(missingId);

    // Assess: the same status and body, the id aside.
    const shape = (results: APIGatewayProxyStructuredResultV2[], taskId: string) =>
      results.map((result) => ({ status: result.statusCode, body: (result.body ?? '').replaceAll(taskId, 'ID') }));
    expect(shape(foreign, alphaId)).toEqual(shape(missing, missingId));
    expect(foreign.map((result) => result.statusCode)).toEqual([404, 404, 404, 404]);
    expect(body(await as(ALPHA, { path: `/v1/tasks/${alphaId}` }))).toMatchObject({ state: 'QUEUED' });
  });

  it("does not let beta cancel alpha's running task", async () => {
    // Prepare
    const running = await runningTask(services, { tenantId: 'alpha' });

    // Act
    const cancel = await as(BETA, { method: 'POST', path: `/v1/tasks/${running.taskId}/cancel` });

    // Assess
    expect(cancel.statusCode).toBe(404);
    expect(await services.tasks.get(running.taskId)).toEqual(running);
  });
});

describe('Isolation: listings and cursors', () => {
  it("refuses beta a listing of alpha's tasks or batches, and alpha's cursor on beta's listing", async () => {
    // Prepare: enough alpha tasks for a second page.
    for (let i = 0; i < 3; i++) await submit(ALPHA, { tenantId: 'alpha' });
    const page = body<{ nextCursor?: string }>(await as(ALPHA, { path: '/v1/tasks?tenantId=alpha&limit=1' }));
    expect(page.nextCursor).toBeDefined();

    // Act
    const list = await as(BETA, { path: '/v1/tasks?tenantId=alpha' });
    const listBatches = await as(BETA, { path: '/v1/batches?tenantId=alpha' });
    const foreignCursor = await as(BETA, { path: `/v1/tasks?tenantId=beta&cursor=${page.nextCursor}` });
    // Alpha's cursor edited to name beta: it pages beta's listing (only beta's keys are read).
    const edited = JSON.parse(Buffer.from(page.nextCursor!, 'base64url').toString('utf8'));
    const renamed = Buffer.from(JSON.stringify({ ...edited, tenantId: 'beta' })).toString('base64url');
    const renamedList = await as(BETA, { path: `/v1/tasks?tenantId=beta&cursor=${renamed}` });
    // A cursor naming beta and carrying the key of alpha's state listing as well.
    const forged = Buffer.from(
      JSON.stringify({ listKey: '9999', taskId: 'tsk_x', tenantId: 'beta', tenantState: 'alpha#QUEUED' }),
    ).toString('base64url');
    const forgedList = await as(BETA, { path: `/v1/tasks?tenantId=beta&cursor=${forged}` });

    // Assess
    expect([list.statusCode, listBatches.statusCode]).toEqual([403, 403]);
    expect(foreignCursor.statusCode).toBe(400);
    expect(body<ErrorBody>(foreignCursor).error.code).toBe('invalid_cursor');
    expect(renamedList.statusCode).toBe(200);
    for (const item of body<{ items: { tenantId: string }[] }>(renamedList).items) expect(item.tenantId).toBe('beta');
    expect(forgedList.statusCode).toBe(400);
  });

  it("lists beta's own tasks without any of alpha's, in every state", async () => {
    // Prepare
    await submit(ALPHA, { tenantId: 'alpha' });
    await succeededTask(services, { tenantId: 'alpha' });
    await submit(BETA, { tenantId: 'beta' });

    // Act
    const pages = await Promise.all(
      ['', '&state=QUEUED', '&state=RUNNING', '&state=SUCCEEDED'].map((state) =>
        as(BETA, { path: `/v1/tasks?tenantId=beta&limit=100${state}` }),
      ),
    );

    // Assess
    for (const page of pages) {
      expect(page.statusCode).toBe(200);
      for (const item of body<{ items: { tenantId: string }[] }>(page).items) expect(item.tenantId).toBe('beta');
    }
  });
});

describe('Isolation: keys that name things', () => {
  it('makes the same idempotency key in alpha and beta two tasks', async () => {
    // Act
    const inAlpha = await submit(ALPHA, { tenantId: 'alpha', idempotencyKey: 'order-1', payload: { a: 1 } });
    const inBeta = await submit(BETA, { tenantId: 'beta', idempotencyKey: 'order-1', payload: { b: 2 } });

    // Assess: both created (a different body under one key would have been a 409).
    expect([inAlpha.statusCode, inBeta.statusCode]).toEqual([202, 202]);
    expect(body(inAlpha).taskId).not.toBe(body(inBeta).taskId);
    expect(body(inBeta)).toMatchObject({ tenantId: 'beta', payload: { b: 2 } });
  });

  it('makes the same batch (same body but the tenant, or same batch key) in alpha and beta two batches', async () => {
    // Act
    const batch = (userArn: string, tenantId: string) =>
      as(userArn, {
        method: 'POST',
        path: '/v1/tasks/batch',
        json: { idempotencyKey: 'nightly', tasks: [{ tenantId, type: 'demo.echo', idempotencyKey: 'item-1' }] },
      });
    const inAlpha = body<{ batchId: string; results: { taskId: string }[] }>(await batch(ALPHA, 'alpha'));
    const inBeta = body<{ batchId: string; results: { taskId: string }[] }>(await batch(BETA, 'beta'));
    const readForeign = await as(BETA, { path: `/v1/batches/${inAlpha.batchId}` });
    const readForeignTasks = await as(BETA, { path: `/v1/batches/${inAlpha.batchId}/tasks` });
    const readOwnTasks = await as(ALPHA, { path: `/v1/batches/${inAlpha.batchId}/tasks` });
    const readMissing = await as(BETA, { path: '/v1/batches/bat_0000000000000000000000000' });

    // Assess
    expect(inAlpha.batchId).not.toBe(inBeta.batchId);
    expect(inAlpha.results[0]!.taskId).not.toBe(inBeta.results[0]!.taskId);
    expect(readForeign.statusCode).toBe(404);
    expect(body<ErrorBody>(readForeign).error.code).toBe(body<ErrorBody>(readMissing).error.code);
    // Its tasks too: another tenant's batch is not found, whatever is asked of it.
    expect(readForeignTasks.statusCode).toBe(404);
    expect(body<{ items: { taskId: string }[] }>(readOwnTasks).items.map((task) => task.taskId)).toEqual([
      inAlpha.results[0]!.taskId,
    ]);
  });

  it("refuses a beta batch whose items or then-task name alpha, writing nothing of alpha's", async () => {
    // Act
    const items = await as(BETA, {
      method: 'POST',
      path: '/v1/tasks/batch',
      json: { tasks: [{ tenantId: 'alpha', type: 'demo.echo' }] },
    });
    const then = await as(BETA, {
      method: 'POST',
      path: '/v1/tasks/batch',
      json: {
        tasks: [{ tenantId: 'beta', type: 'demo.echo' }],
        // biome-ignore lint/suspicious/noThenProperty: the field's name is pinned (PRODUCT.md, POST /v1/tasks/batch)
        then: { tenantId: 'alpha', type: 'demo.echo' },
      },
    });

    // Assess
    expect(items.statusCode).toBe(403);
    expect(then.statusCode).toBe(400);
    expect(body<ErrorBody>(then).error.code).toBe('mixed_tenants');
  });

  it('refuses a then-task with dependsOn or an idempotencyKey of its own at the route, as the OpenAPI document shows it', async () => {
    // Act
    const refused = await Promise.all(
      [{ dependsOn: ['tsk_00000000000000000000000000000001'] }, { idempotencyKey: 'then-key' }].map((extra) =>
        as(BETA, {
          method: 'POST',
          path: '/v1/tasks/batch',
          json: {
            tasks: [{ tenantId: 'beta', type: 'demo.echo' }],
            // biome-ignore lint/suspicious/noThenProperty: the field's name is pinned (PRODUCT.md, POST /v1/tasks/batch)
            then: { tenantId: 'beta', type: 'demo.echo', ...extra },
          },
        }),
      ),
    );
    // Assess
    expect(refused.map((r) => r.statusCode)).toEqual([400, 400]);
    expect(refused.map((r) => JSON.stringify(body(r)))).toEqual([
      expect.stringContaining('then.dependsOn'),
      expect.stringContaining('then.idempotencyKey'),
    ]);
  });

  it("refuses dependsOn naming alpha's task exactly as a task that does not exist", async () => {
    // Prepare
    const alphaTask = body(await submit(ALPHA, { tenantId: 'alpha' })).taskId as string;
    const missingId = 'tsk_00000000000000000000000000000001';

    // Act
    const foreign = await submit(BETA, { tenantId: 'beta', dependsOn: [alphaTask] });
    const missing = await submit(BETA, { tenantId: 'beta', dependsOn: [missingId] });
    const inBatch = await as(BETA, {
      method: 'POST',
      path: '/v1/tasks/batch',
      json: {
        tasks: [
          { tenantId: 'beta', type: 'demo.echo', dependsOn: [alphaTask] },
          { tenantId: 'beta', type: 'demo.echo', dependsOn: [missingId] },
        ],
      },
    });

    // Assess
    expect([foreign.statusCode, missing.statusCode]).toEqual([400, 400]);
    expect((foreign.body ?? '').replaceAll(alphaTask, 'ID')).toBe((missing.body ?? '').replaceAll(missingId, 'ID'));
    // Every item refused: the whole batch is (400 all_items_refused, nothing written), each item's error in it.
    expect(inBatch.statusCode).toBe(400);
    const { results } = body<{ error: { details: { results: { error: { code: string; message: string } }[] } } }>(
      inBatch,
    ).error.details;
    expect(results.map((result) => result.error.code)).toEqual(['unknown_dependency', 'unknown_dependency']);
    expect(results[0]!.error.message.replaceAll(alphaTask, 'ID')).toBe(
      results[1]!.error.message.replaceAll(missingId, 'ID'),
    );
  });

  it("does not let alpha's holders of a concurrency key hold beta's tasks of the same key", async () => {
    // Prepare: alpha's key "export" full (its one place held, as the scheduler holds it at dispatch).
    const alphaHolder = await services.tasks.submit({ tenantId: 'alpha', type: 'demo.echo', concurrencyKey: 'export' });
    const keep = async () => [];
    const taken = await services.control.flow.acquireKey(
      'alpha',
      'export',
      1,
      alphaHolder.task.taskId,
      alphaHolder.task.fence,
      Date.now(),
      keep,
    );
    expect(taken.acquired).toBe(true);
    const betaTask = body(await submit(BETA, { tenantId: 'beta', concurrencyKey: 'export' })).taskId as string;

    // Act
    const betaHolders = await services.control.flow.keyHolders('beta', 'export');
    const wait = body<{ wait?: { reason: string; message: string } }>(
      await as(BETA, { path: `/v1/tasks/${betaTask}` }),
    );
    const alphaWait = body<{ wait?: { reason: string } }>(
      await as(ALPHA, {
        path: `/v1/tasks/${body(await submit(ALPHA, { tenantId: 'alpha', concurrencyKey: 'export' })).taskId}`,
      }),
    );

    // Assess: alpha's second task waits on the key; beta's does not, and hears nothing of alpha.
    expect(alphaWait.wait?.reason).toBe('concurrency_key');
    expect(betaHolders).toEqual({});
    expect(wait.wait?.reason).not.toBe('concurrency_key');
    expect(JSON.stringify(wait)).not.toContain('alpha');
  });
});

describe('Isolation: what a refused read costs', () => {
  it("reads no more for another tenant's task or batch than for an id that does not exist", async () => {
    // Prepare: the router over services whose every DynamoDB call is counted. A task id derived
    // from a guessed idempotency key (tenant + key, a public hash) must not show, by the work
    // done (a wait explanation's reads, a batch's counters), that alpha submitted it.
    const router = createApiRouter(services, { authorize: createCallerAuthorizer(CONFIG.deploy!.callers!)! });
    const documents = services.clients.documents;
    const send = documents.send.bind(documents);
    let calls = 0;
    documents.send = ((...args: Parameters<typeof send>) => {
      calls++;
      return send(...args);
    }) as typeof documents.send;
    const alphaTask = body(await submit(ALPHA, { tenantId: 'alpha', idempotencyKey: 'guessable' })).taskId as string;
    const alphaBatch = body(
      await as(ALPHA, {
        method: 'POST',
        path: '/v1/tasks/batch',
        json: { tasks: [{ tenantId: 'alpha', type: 'demo.echo' }] },
      }),
    ).batchId as string;
    const callsOf = async (path: string) => {
      calls = 0;
      const result = await router(apiEvent({ path, iam: { userArn: BETA } }));
      expect(result.statusCode).toBe(404);
      return calls;
    };

    // Act
    const foreignTask = await callsOf(`/v1/tasks/${alphaTask}`);
    const missingTask = await callsOf('/v1/tasks/tsk_00000000000000000000000000000002');
    const foreignBatch = await callsOf(`/v1/batches/${alphaBatch}`);
    const missingBatch = await callsOf('/v1/batches/bat_00000000000000000000000002');
    documents.send = send;

    // Assess
    expect(foreignTask).toBe(missingTask);
    expect(foreignBatch).toBe(missingBatch);
  });
});

describe('Isolation: record kinds', () => {
  it('answers a batch id on the task routes as an unknown task, and refuses it in dependsOn', async () => {
    // Prepare: a batch's item lives in the task table beside the tasks, under its batch id.
    const batch = await as(ALPHA, {
      method: 'POST',
      path: '/v1/tasks/batch',
      json: { tasks: [{ tenantId: 'alpha', type: 'demo.echo' }] },
    });
    const { batchId } = body<{ batchId: string }>(batch);
    const notFound = {
      error: { code: 'task_not_found', message: `No task with id ${batchId}`, details: { taskId: batchId } },
    };

    // Act
    const read = await as(ALPHA, { path: `/v1/tasks/${batchId}` });
    const cancel = await as(ALPHA, { method: 'POST', path: `/v1/tasks/${batchId}/cancel` });
    const retry = await as(ALPHA, { method: 'POST', path: `/v1/tasks/${batchId}/retry` });
    const dependent = await submit(ALPHA, { tenantId: 'alpha', dependsOn: [batchId] });

    // Assess: not a 500 (a batch read as a task) nor a task held on a batch.
    for (const result of [read, cancel, retry]) {
      expect(result.statusCode).toBe(404);
      expect(body(result)).toEqual(notFound);
    }
    expect(dependent.statusCode).toBe(400);
    expect(body<ErrorBody>(dependent).error).toMatchObject({
      code: 'unknown_dependency',
      details: { missing: [batchId] },
    });
    expect(body(await as(ALPHA, { path: `/v1/batches/${batchId}` }))).toMatchObject({ batchId, total: 1 });
  });
});

describe('Isolation: tenants, task types and the status', () => {
  it("refuses beta reading, changing or deleting alpha's settings", async () => {
    // Act
    const results = await Promise.all([
      as(BETA, { path: '/v1/tenants/alpha' }),
      as(BETA, { method: 'PUT', path: '/v1/tenants/alpha', json: { weight: 0.001, maxConcurrency: 1, paused: true } }),
      as(BETA, { method: 'DELETE', path: '/v1/tenants/alpha' }),
      as(BETA, { path: '/v1/task-types' }),
      as(BETA, { method: 'PUT', path: '/v1/task-types/demo.echo', json: { paused: true } }),
    ]);

    // Assess
    expect(results.map((result) => result.statusCode)).toEqual([403, 403, 403, 403, 403]);
    expect(await services.control.getTenant('alpha')).toBeUndefined();
  });

  it("shows beta no tenant, task or batch of alpha's in the status, even when asked for alpha", async () => {
    // Prepare
    await submit(ALPHA, { tenantId: 'alpha' });
    await as(ALPHA, {
      method: 'POST',
      path: '/v1/tasks/batch',
      json: { tasks: [{ tenantId: 'alpha', type: 'demo.echo' }] },
    });

    // Act
    const status = await as(BETA, { path: '/v1/status?tenants=alpha,beta&recent=20' });

    // Assess
    expect(status.statusCode).toBe(200);
    const view = body<{
      tenants: { tenantId: string }[];
      recentTasks: { tenantId: string }[];
      openBatches?: { tenantId: string }[];
    }>(status);
    expect(view.tenants.map((tenant) => tenant.tenantId)).toEqual(['beta']);
    expect(view.recentTasks.every((task) => task.tenantId === 'beta')).toBe(true);
    expect((view.openBatches ?? []).every((batch) => batch.tenantId === 'beta')).toBe(true);
  });
});

describe("Isolation: a tenant's own settings", () => {
  const put = (userArn: string, tenantId: string, settings: Record<string, unknown>) =>
    as(userArn, { method: 'PUT', path: `/v1/tenants/${tenantId}`, json: settings });

  it("refuses alpha's caller raising alpha's weight or quota above the configured ones, storing nothing", async () => {
    // Act: each would take contended capacity from beta (weight 1000 against 1: beta's share 1/1001).
    const refused = await Promise.all([
      put(ALPHA, 'alpha', { weight: 1000, maxConcurrency: 5 }),
      put(ALPHA, 'alpha', { weight: 1, maxConcurrency: 100_000 }),
    ]);

    // Assess
    for (const result of refused) {
      expect(result.statusCode).toBe(403);
      expect(body<ErrorBody>(result).error).toMatchObject({
        code: 'settings_above_configured',
        details: { tenantId: 'alpha' },
      });
    }
    expect(body<ErrorBody>(refused[0]!).error.details?.fields).toEqual([{ field: 'weight', value: 1000, allowed: 1 }]);
    expect(await services.control.getTenant('alpha')).toBeUndefined();
  });

  it("lets alpha's caller pause, resume and lower alpha within the configured settings, and delete what it stored", async () => {
    // Act
    const paused = await put(ALPHA, 'alpha', { weight: 1, maxConcurrency: 5, paused: true });
    const lowered = await put(ALPHA, 'alpha', { weight: 0.5, maxConcurrency: 2, maxStartsPerSecond: 1 });
    const raisedBack = await put(ALPHA, 'alpha', { weight: 1, maxConcurrency: 5 });
    const deleted = await as(ALPHA, { method: 'DELETE', path: '/v1/tenants/alpha' });

    // Assess
    expect([paused, lowered, raisedBack, deleted].map((result) => result.statusCode)).toEqual([200, 200, 200, 200]);
    expect(body(deleted)).toMatchObject({ tenantId: 'alpha', source: 'config', weight: 1, maxConcurrency: 5 });
  });

  it("lets alpha's caller pause alpha at the settings a caller for every tenant raised it to, and no higher", async () => {
    // Prepare: the operator gives alpha more than the file does.
    expect((await put(OPS, 'alpha', { weight: 5, maxConcurrency: 20 })).statusCode).toBe(200);

    // Act: what `tasks tenants pause` sends (the settings as they are, paused), then more.
    const paused = await put(ALPHA, 'alpha', { weight: 5, maxConcurrency: 20, paused: true });
    const resumed = await put(ALPHA, 'alpha', { weight: 5, maxConcurrency: 20 });
    const more = await put(ALPHA, 'alpha', { weight: 6, maxConcurrency: 20 });
    await as(OPS, { method: 'DELETE', path: '/v1/tenants/alpha' });

    // Assess
    expect([paused.statusCode, resumed.statusCode, more.statusCode]).toEqual([200, 200, 403]);
    expect(body<ErrorBody>(more).error.details?.fields).toEqual([{ field: 'weight', value: 6, allowed: 5 }]);
  });

  it("does not let alpha's caller lift a pause a caller for every tenant made, by a PUT or by deleting the settings; the operator may", async () => {
    // Prepare: the operator holds alpha (an incident)
    expect((await put(OPS, 'alpha', { weight: 1, maxConcurrency: 5, paused: true })).statusCode).toBe(200);

    // Act
    const resumed = await put(ALPHA, 'alpha', { weight: 1, maxConcurrency: 5 });
    const deleted = await as(ALPHA, { method: 'DELETE', path: '/v1/tenants/alpha' });
    const stillPaused = await put(ALPHA, 'alpha', { weight: 0.5, maxConcurrency: 2, paused: true });
    // The pause keeps who made it first: alpha's own pause on top does not make it alpha's to lift.
    const resumedAgain = await put(ALPHA, 'alpha', { weight: 0.5, maxConcurrency: 2 });
    const byOperator = await as(OPS, { method: 'DELETE', path: '/v1/tenants/alpha' });

    // Assess: both lifts refused and nothing changed; lowering while paused is fine; the operator lifts it
    expect([resumed.statusCode, deleted.statusCode, resumedAgain.statusCode]).toEqual([403, 403, 403]);
    for (const refused of [resumed, deleted, resumedAgain]) {
      expect(body<ErrorBody>(refused).error).toMatchObject({
        code: 'settings_above_configured',
        details: { tenantId: 'alpha', fields: [{ field: 'paused', value: false, allowed: true }] },
      });
    }
    expect([stillPaused.statusCode, byOperator.statusCode]).toEqual([200, 200]);
    expect(body(byOperator)).toMatchObject({ tenantId: 'alpha', source: 'config' });
  });

  it('allows the more generous of the configured and the current settings, field by field', async () => {
    // Act / Assess
    expect(
      mostGenerous(
        { weight: 2, maxConcurrency: 5, maxStartsPerSecond: 1, burst: 8, paused: true },
        { weight: 1, maxConcurrency: 9, maxStartsPerSecond: 3, paused: true },
      ),
    ).toEqual({ weight: 2, maxConcurrency: 9, maxStartsPerSecond: 3, burst: 8, paused: true });
    // No rate on either side is no rate; one side unpaused is unpaused.
    expect(
      mostGenerous(
        { weight: 1, maxConcurrency: 1, maxStartsPerSecond: 1 },
        { weight: 1, maxConcurrency: 1, paused: true },
      ),
    ).toEqual({ weight: 1, maxConcurrency: 1 });
  });

  it('lets a caller for every tenant set any settings', async () => {
    // Act
    const raised = await put(OPS, 'alpha', { weight: 1000, maxConcurrency: 100_000 });
    const restored = await as(OPS, { method: 'DELETE', path: '/v1/tenants/alpha' });

    // Assess
    expect([raised.statusCode, restored.statusCode]).toEqual([200, 200]);
  });

  it('counts lifting or raising an allowed start rate, or lifting an allowed pause, as asking for more', async () => {
    // Prepare
    const ceiling = { weight: 1, maxConcurrency: 5 };

    // Act
    const check = (allowed: Record<string, unknown>, settings: Record<string, unknown>) =>
      settingsAbove({ ...ceiling, ...allowed }, { ...ceiling, ...settings });

    // Assess
    expect(check({ maxStartsPerSecond: 2, burst: 4 }, {})).toEqual([
      { field: 'maxStartsPerSecond', value: null, allowed: 2 },
    ]);
    expect(check({ maxStartsPerSecond: 2, burst: 4 }, { maxStartsPerSecond: 3 })).toEqual([
      { field: 'maxStartsPerSecond', value: 3, allowed: 2 },
    ]);
    expect(check({ maxStartsPerSecond: 2, burst: 4 }, { maxStartsPerSecond: 2, burst: 5 })).toEqual([
      { field: 'burst', value: 5, allowed: 4 },
    ]);
    // burst left out is one second of the rate: 2, within 4.
    expect(check({ maxStartsPerSecond: 2, burst: 4 }, { maxStartsPerSecond: 2 })).toEqual([]);
    expect(check({ maxStartsPerSecond: 1 }, { maxStartsPerSecond: 0.5 })).toEqual([]);
    expect(check({ paused: true }, {})).toEqual([{ field: 'paused', value: false, allowed: true }]);
    expect(check({ paused: true }, { paused: true, weight: 0.5 })).toEqual([]);
  });
});

describe("Isolation: the status's open batches", () => {
  it('shows beta its open batch however many alpha has open', async () => {
    // Prepare: alpha's open batches fill the first places of every open list (5 a list are read).
    const alphaBatches: string[] = [];
    for (let i = 0; i < 40; i++) {
      const result = await as(ALPHA, {
        method: 'POST',
        path: '/v1/tasks/batch',
        json: { idempotencyKey: `crowd-${i}`, tasks: [{ tenantId: 'alpha', type: 'demo.echo' }] },
      });
      alphaBatches.push(body(result).batchId as string);
    }
    for (let shard = 0; shard < OPEN_BATCH_SHARDS; shard++) {
      expect(alphaBatches.filter((id) => openShardOf(id) === shard).length).toBeGreaterThanOrEqual(5);
    }
    const betaBatch = body(
      await as(BETA, {
        method: 'POST',
        path: '/v1/tasks/batch',
        json: { idempotencyKey: 'mine', tasks: [{ tenantId: 'beta', type: 'demo.echo' }] },
      }),
    ).batchId as string;

    // Act
    const status = body<{ openBatches?: { batchId: string; tenantId: string }[] }>(
      await as(BETA, { path: '/v1/status?tenants=beta&recent=0' }),
    );
    const ops = body<{ openBatches?: { batchId: string }[] }>(await as(OPS, { path: '/v1/status?recent=0' }));

    // Assess: beta sees its own, and only its own; a caller for every tenant still sees open batches.
    expect(status.openBatches?.map((batch) => batch.batchId)).toContain(betaBatch);
    expect(status.openBatches?.every((batch) => batch.tenantId === 'beta')).toBe(true);
    expect(ops.openBatches?.length).toBeGreaterThan(0);
  });
});

describe('Isolation: the caller for every tenant', () => {
  it("reads alpha's and beta's tasks", async () => {
    // Prepare
    const alphaTask = body(await submit(ALPHA, { tenantId: 'alpha' })).taskId as string;

    // Act
    const read = await as(OPS, { path: `/v1/tasks/${alphaTask}` });

    // Assess
    expect(read.statusCode).toBe(200);
  });
});
