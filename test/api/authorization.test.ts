import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  callerIdentity,
  createCallerAuthorizer,
  mayActFor,
  principalMatches,
  tenantsForCaller,
} from '../../runtime/api/authorization.ts';
import { type ApiRouter, createApiRouter } from '../../runtime/api/router.ts';
import { apiEvent, jsonOf } from '../helpers/api-events.ts';
import { runningTask, submitTask } from '../helpers/factories.ts';
import { snapshotWrites, startTestServices, type TestServices } from '../helpers/services.ts';

const ACCOUNT = '111122223333';
const ORDERS_ROLE = `arn:aws:iam::${ACCOUNT}:role/orders-service`;
const ORDERS_SESSION = `arn:aws:sts::${ACCOUNT}:assumed-role/orders-service/i-0abc`;
const OPS_USER = `arn:aws:iam::${ACCOUNT}:user/ops`;
const STRANGER = `arn:aws:iam::${ACCOUNT}:user/stranger`;

const CALLERS = {
  [ORDERS_ROLE]: ['orders'],
  [`arn:aws:iam::${ACCOUNT}:role/service-role/billing`]: ['billing', 'invoices'],
  [`arn:aws:sts::${ACCOUNT}:assumed-role/reports/nightly`]: ['reports'],
  [`arn:aws:sts::${ACCOUNT}:assumed-role/audit`]: ['audit'],
  [OPS_USER]: ['*'],
};

describe('Function: principalMatches', () => {
  it.each([
    ['an identical ARN', OPS_USER, OPS_USER, true],
    ['a session of the configured role', ORDERS_ROLE, ORDERS_SESSION, true],
    [
      'a session of a role with an IAM path',
      `arn:aws:iam::${ACCOUNT}:role/service-role/billing`,
      `arn:aws:sts::${ACCOUNT}:assumed-role/billing/s1`,
      true,
    ],
    ['a session of another role', ORDERS_ROLE, `arn:aws:sts::${ACCOUNT}:assumed-role/orders-service-admin/s`, false],
    ['the same role in another account', ORDERS_ROLE, `arn:aws:sts::444455556666:assumed-role/orders-service/s`, false],
    [
      'the same role in another partition',
      ORDERS_ROLE,
      `arn:aws-cn:sts::${ACCOUNT}:assumed-role/orders-service/s`,
      false,
    ],
    [
      'one configured session, the same session',
      `arn:aws:sts::${ACCOUNT}:assumed-role/reports/nightly`,
      `arn:aws:sts::${ACCOUNT}:assumed-role/reports/nightly`,
      true,
    ],
    [
      'one configured session, another session',
      `arn:aws:sts::${ACCOUNT}:assumed-role/reports/nightly`,
      `arn:aws:sts::${ACCOUNT}:assumed-role/reports/adhoc`,
      false,
    ],
    [
      'a session-less assumed-role entry, any session',
      `arn:aws:sts::${ACCOUNT}:assumed-role/audit`,
      `arn:aws:sts::${ACCOUNT}:assumed-role/audit/x`,
      true,
    ],
    ['a role entry and an IAM user of the same name', `arn:aws:iam::${ACCOUNT}:role/ops`, OPS_USER, false],
    ['a malformed caller ARN', ORDERS_ROLE, 'not-an-arn', false],
  ])('%s → %s', (_name, configured, caller, expected) => {
    // Act
    const matches = principalMatches(configured, caller);

    // Assess
    expect(matches).toBe(expected);
  });
});

describe('Function: tenantsForCaller and mayActFor', () => {
  it('unions the tenants of every entry that covers the caller', () => {
    // Prepare
    const callers = { ...CALLERS, [ORDERS_SESSION]: ['returns'] };

    // Act
    const tenants = tenantsForCaller(callers, ORDERS_SESSION);

    // Assess
    expect([...tenants].sort()).toEqual(['orders', 'returns']);
  });

  it('lets "*" act for every tenant and an unknown caller for none', () => {
    // Act / Assess
    expect(mayActFor(CALLERS, OPS_USER, 'anything')).toBe(true);
    expect(mayActFor(CALLERS, STRANGER, 'orders')).toBe(false);
    expect(mayActFor(CALLERS, ORDERS_SESSION, 'orders')).toBe(true);
    expect(mayActFor(CALLERS, ORDERS_SESSION, 'billing')).toBe(false);
  });
});

describe('Function: callerIdentity', () => {
  it('reads the IAM identity API Gateway attaches, and nothing when absent', () => {
    // Act
    const identity = callerIdentity(
      apiEvent({ path: '/health', iam: { userArn: ORDERS_SESSION, callerId: 'AROA:i-0abc' } }),
    );
    const none = callerIdentity(apiEvent({ path: '/health' }));

    // Assess
    expect(identity).toEqual({ userArn: ORDERS_SESSION, accountId: ACCOUNT, callerId: 'AROA:i-0abc' });
    expect(none).toBeUndefined();
  });
});

describe('Function: createCallerAuthorizer', () => {
  it('with no callers configured, refuses every caller for every tenant (secure by default)', async () => {
    const authorize = createCallerAuthorizer({});
    expect(authorize).toBeDefined();
    const event = apiEvent({ path: '/v1/tasks', iam: { userArn: ORDERS_SESSION } });
    expect(await authorize!(event, 'orders')).toBe(false);
  });

  it('is open (no hook) only with the explicit opt-out allowAnyCaller', () => {
    expect(createCallerAuthorizer({}, { allowAnyCaller: true })).toBeUndefined();
    // A configured map wins over the opt-out: the map is what the operator wrote down.
    expect(createCallerAuthorizer(CALLERS, { allowAnyCaller: true })).toBeDefined();
  });

  it('refuses an event without an IAM identity', async () => {
    // Prepare
    const authorize = createCallerAuthorizer(CALLERS)!;

    // Act
    const allowed = await authorize(apiEvent({ path: '/health' }), 'orders');

    // Assess
    expect(allowed).toBe(false);
  });
});

describe('Router: with caller authorization', () => {
  let services: TestServices;
  let api: ApiRouter;
  const as = (userArn: string) => ({ iam: { userArn } });

  beforeAll(async () => {
    services = await startTestServices();
    api = createApiRouter(services, { authorize: createCallerAuthorizer(CALLERS)! });
  });
  afterAll(async () => {
    await services.stop();
  });

  it('accepts a submit from an assumed-role session for its own tenant', async () => {
    // Act
    const result = await api(
      apiEvent({
        method: 'POST',
        path: '/v1/tasks',
        json: { tenantId: 'orders', type: 'demo.echo' },
        ...as(ORDERS_SESSION),
      }),
    );

    // Assess
    expect(result.statusCode).toBe(202);
  });

  it('refuses a submit for another tenant with 403 forbidden and writes nothing', async () => {
    // Prepare
    const before = await snapshotWrites(services);

    // Act
    const result = await api(
      apiEvent({
        method: 'POST',
        path: '/v1/tasks',
        json: { tenantId: 'billing', type: 'demo.echo' },
        ...as(ORDERS_SESSION),
      }),
    );

    // Assess
    expect(result.statusCode).toBe(403);
    expect(jsonOf(result)).toEqual({
      error: {
        code: 'forbidden',
        message: 'The caller may not act for tenant billing',
        details: { tenantId: 'billing' },
      },
    });
    expect(await snapshotWrites(services)).toEqual(before);
  });

  it('refuses listing, reading and changing another tenant with 403', async () => {
    // Act
    const list = await api(apiEvent({ path: '/v1/tasks?tenantId=billing', ...as(ORDERS_SESSION) }));
    const read = await api(apiEvent({ path: '/v1/tenants/billing', ...as(ORDERS_SESSION) }));
    const put = await api(
      apiEvent({
        method: 'PUT',
        path: '/v1/tenants/billing',
        json: { weight: 9, maxConcurrency: 9 },
        ...as(ORDERS_SESSION),
      }),
    );
    const anonymous = await api(apiEvent({ path: '/v1/tenants/orders' }));

    // Assess
    expect([list.statusCode, read.statusCode, put.statusCode, anonymous.statusCode]).toEqual([403, 403, 403, 403]);
    expect(await services.control.getTenant('billing')).toBeUndefined();
  });

  it('answers a cross-tenant task read, cancel or retry with 404, leaving the task untouched', async () => {
    // Prepare
    const task = await runningTask(services, { tenantId: 'billing' });

    // Act
    const read = await api(apiEvent({ path: `/v1/tasks/${task.taskId}`, ...as(ORDERS_SESSION) }));
    const cancel = await api(
      apiEvent({ method: 'POST', path: `/v1/tasks/${task.taskId}/cancel`, ...as(ORDERS_SESSION) }),
    );
    const retry = await api(
      apiEvent({ method: 'POST', path: `/v1/tasks/${task.taskId}/retry`, ...as(ORDERS_SESSION) }),
    );
    const missing = await api(apiEvent({ path: '/v1/tasks/tsk_missing', ...as(ORDERS_SESSION) }));

    // Assess
    for (const result of [read, cancel, retry]) {
      expect(result.statusCode).toBe(404);
      expect(jsonOf(result)).toEqual({
        error: { code: 'task_not_found', message: `No task with id ${task.taskId}`, details: { taskId: task.taskId } },
      });
    }
    // Indistinguishable from a task that does not exist (apart from the id it names).
    expect(jsonOf(missing)).toMatchObject({ error: { code: 'task_not_found' } });
    expect(await services.tasks.get(task.taskId)).toEqual(task);
  });

  it('lets the owner and a "*" caller act on the task', async () => {
    // Prepare
    const task = await submitTask(services, { tenantId: 'billing' });
    const billingSession = `arn:aws:sts::${ACCOUNT}:assumed-role/billing/worker`;

    // Act
    const read = await api(apiEvent({ path: `/v1/tasks/${task.taskId}`, ...as(billingSession) }));
    const cancel = await api(apiEvent({ method: 'POST', path: `/v1/tasks/${task.taskId}/cancel`, ...as(OPS_USER) }));

    // Assess
    expect(read.statusCode).toBe(200);
    expect(cancel.statusCode).toBe(200);
    expect(jsonOf(cancel)).toMatchObject({ state: 'CANCELLED' });
  });

  it('does not authorize routes without a tenant', async () => {
    // Act
    const health = await api(apiEvent({ path: '/health' }));
    const openapi = await api(apiEvent({ path: '/openapi.json', ...as(STRANGER) }));

    // Assess
    expect([health.statusCode, openapi.statusCode]).toEqual([200, 200]);
  });
});
