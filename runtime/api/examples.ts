/**
 * Examples for the OpenAPI document: one request and one response per operation and status,
 * so contract tools (dredd, Schemathesis, Prism) can build requests and compare answers. The
 * contract test checks every example against the schema it illustrates.
 */
import type { TaskView } from './views.ts';

export const EXAMPLE_TASK_ID = 'tsk_5f3a9c1e7b2d4e6f8a0b1c2d3e4f5a6b';
export const EXAMPLE_TENANT_ID = 'acme';

export const EXAMPLE_TASK: TaskView = {
  taskId: EXAMPLE_TASK_ID,
  tenantId: EXAMPLE_TENANT_ID,
  type: 'demo.echo',
  priority: 'normal',
  state: 'QUEUED',
  attempts: 0,
  maxAttempts: 3,
  runtime: 'lambda',
  resources: { vcpu: 0.25, memoryMiB: 512 },
  timeoutSeconds: 60,
  payload: { invoiceId: 'inv-1042', meta: { constructor: 'Acme Ltd' } },
  idempotencyKey: 'invoice-inv-1042',
  submittedAt: '2026-12-01T09:00:00.000Z',
  runAt: '2026-12-01T09:00:00.000Z',
  dispatchedAt: null,
  startedAt: null,
  finishedAt: null,
  result: null,
  error: null,
};

export const EXAMPLE_SUCCEEDED_TASK: TaskView = {
  ...EXAMPLE_TASK,
  state: 'SUCCEEDED',
  attempts: 1,
  dispatchedAt: '2026-12-01T09:00:00.120Z',
  startedAt: '2026-12-01T09:00:00.180Z',
  finishedAt: '2026-12-01T09:00:00.240Z',
  result: { echo: EXAMPLE_TASK.payload },
};

/** An opaque page cursor (base64url of the key the next page starts after). */
export const EXAMPLE_CURSOR =
  'eyJsaXN0S2V5IjoiMjAyNi0xMi0wMVQwOTowMDowMC4wMDBaI3Rza181ZjNhIiwidGFza0lkIjoidHNrXzVmM2EiLCJ0ZW5hbnRJZCI6ImFjbWUifQ';

export const EXAMPLE_SUBMIT = {
  tenantId: EXAMPLE_TENANT_ID,
  type: 'demo.echo',
  payload: EXAMPLE_TASK.payload,
  priority: 'normal',
  idempotencyKey: EXAMPLE_TASK.idempotencyKey,
};

/**
 * What GET /v1/tasks/{id} answers for EXAMPLE_TASK 7 s after its submit, with the Lambda pool full
 * and 12 other tenants waiting in it, the pool freeing at least 8 slots a second, its scheduler
 * handing over in 159 s (test/api/wait-example.ts; openapi.test.ts checks that the code gives exactly this).
 */
export const EXAMPLE_WAIT = {
  reason: 'capacity',
  message: 'The lambda pool has no room for it now',
  effectiveTier: 'normal',
  waitedSeconds: 7,
  secondsToTopTier: 593,
  maxWaitSeconds: 2.7,
  assumes:
    "its tenant submits nothing more (and none of its delayed work falls due) until it starts; the lambda pool keeps freeing slots at least at 8 a second, the fewest it freed in any 10 s of the last minute: 13 between 2026-12-01T09:00:06.000Z and 2026-12-01T09:00:07.625Z (however slowly it frees them, it starts within 20 s); a scheduler is running; neither its tenant nor its task type is paused meanwhile; it counts the 12 other tenants waiting in the lambda pool at the scheduler's snapshot of 09:00:06 UTC, and its tenant's running tasks then (its tenant submits nothing after it); its tenant's waiting (and, when read, running) tasks are as its indexes show them (they lag about a second); the scheduler acts on a freed slot within 2 s and hands over at 09:02:45 UTC and then no more often than every 285 s (its Lambda's time limit), each within 5 s; a crash, a stall or a restart after a failed call beyond that is not included; nor a worker's report of a task's end that reaches it late (a receive whose answer was lost: its lease sweep then finds the end)",
  worstCaseSeconds: 20,
  assumedFreed: { slots: 13, from: '2026-12-01T09:00:06.000Z', by: '2026-12-01T09:00:07.625Z' },
  asOf: '2026-12-01T09:00:06.000Z',
};

export const EXAMPLE_TENANT_SETTINGS = { weight: 2, maxConcurrency: 20, maxStartsPerSecond: 4, burst: 4 };

export const EXAMPLE_TASK_TYPE = {
  type: 'examples.photo-resize',
  paused: true,
  pausedBy: 'arn:aws:iam::111122223333:user/ops',
  pausedAt: '2026-12-01T08:55:00.000Z',
  updatedAt: '2026-12-01T08:55:00.000Z',
  counts: { parked: 3 },
};

export const EXAMPLE_TENANT = {
  tenantId: EXAMPLE_TENANT_ID,
  weight: 2,
  maxConcurrency: 20,
  maxStartsPerSecond: 4,
  burst: 4,
  source: 'stored',
  counts: { queued: 12, queuedExact: true, dispatched: 1, running: 4 },
};

export const EXAMPLE_STORED_TENANT = {
  tenantId: EXAMPLE_TENANT_ID,
  ...EXAMPLE_TENANT_SETTINGS,
  updatedAt: '2026-12-01T08:59:00.000Z',
};

export const EXAMPLE_STATUS = {
  at: '2026-12-01T09:00:05.000Z',
  policy: 'fair-share',
  agingSeconds: 300,
  scheduler: { at: '2026-12-01T09:00:04.000Z', ageSeconds: 1, dispatchRate: 12.5 },
  pools: {
    lambda: { used: 50, capacity: 50 },
    fargate: { vcpuUsed: 2, vcpu: 16, memoryMiBUsed: 4096, memoryMiB: 32768 },
  },
  tiers: [
    { tier: 'critical', waiting: 0, waitingExact: true, held: 0, oldestWaitSeconds: 0 },
    { tier: 'high', waiting: 3, waitingExact: true, held: 3, oldestWaitSeconds: 1.5 },
    { tier: 'normal', waiting: 2880, waitingExact: true, held: 40, oldestWaitSeconds: 4.2 },
    { tier: 'low', waiting: 0, waitingExact: true, held: 0, oldestWaitSeconds: 0 },
  ],
  tenants: [
    {
      tenantId: EXAMPLE_TENANT_ID,
      running: 5,
      queued: 2880,
      queuedExact: true,
      weight: 2,
      maxConcurrency: 20,
      dominantShare: 0.1,
      entitlement: 0.5,
      recentlyFinished: { succeeded: 1500, failed: 2, cancelled: 0, lastFinishedAt: '2026-12-01T09:00:03.000Z' },
      paused: false,
      maxStartsPerSecond: 4,
      burst: 4,
      rateLimited: true,
      parked: 3,
    },
  ],
  pausedTypes: [
    {
      type: 'examples.photo-resize',
      pausedBy: 'arn:aws:iam::111122223333:user/ops',
      pausedAt: '2026-12-01T08:55:00.000Z',
      parked: 3,
    },
  ],
  recentTasks: [{ ...EXAMPLE_TASK, wait: EXAMPLE_WAIT }],
  openBatches: [
    {
      batchId: 'bat_Q2x7mN4pR8sT1vW5yZ9aB3cD6e',
      tenantId: EXAMPLE_TENANT_ID,
      createdAt: '2026-12-01T08:59:40.000Z',
      total: 1000,
      counts: { succeeded: 612, failed: 3, cancelled: 0, excluded: 2, pending: 383 },
    },
  ],
};

/** An error body of each code the API answers with, by HTTP status. */
/** POST /v1/tasks with a `dependsOn` naming a task its tenant does not have: refused, nothing written. */
export const EXAMPLE_UNKNOWN_DEPENDENCY = {
  code: 'unknown_dependency',
  message: `dependsOn names 1 task tenant ${EXAMPLE_TENANT_ID} does not have: tsk_0e9d8c7b6a5f4e3d2c1b0a9f8e7d6c5b`,
  details: { field: 'dependsOn', missing: ['tsk_0e9d8c7b6a5f4e3d2c1b0a9f8e7d6c5b'] },
};

export const EXAMPLE_ERRORS: Readonly<Record<number, { code: string; message: string; details?: unknown }>> = {
  400: {
    code: 'invalid_request',
    message: 'Invalid request body: tenantId: only letters, digits and _ . : @ - are allowed',
    details: { in: 'body', issues: [{ path: 'tenantId', message: 'only letters, digits and _ . : @ - are allowed' }] },
  },
  403: {
    code: 'forbidden',
    message: `The caller may not act for tenant ${EXAMPLE_TENANT_ID}`,
    details: { tenantId: EXAMPLE_TENANT_ID },
  },
  404: { code: 'task_not_found', message: `No task with id ${EXAMPLE_TASK_ID}`, details: { taskId: EXAMPLE_TASK_ID } },
  405: {
    code: 'method_not_allowed',
    message: 'DELETE is not allowed on /v1/tasks; use POST or GET or HEAD',
    details: { allowed: ['POST', 'GET', 'HEAD'] },
  },
  409: {
    code: 'invalid_state',
    message: `Cannot retry task ${EXAMPLE_TASK_ID} in state SUCCEEDED: requires FAILED or CANCELLED`,
    details: { taskId: EXAMPLE_TASK_ID, state: 'SUCCEEDED', transition: 'retry' },
  },
  413: { code: 'body_too_large', message: 'The request body exceeds 262144 bytes', details: { limitBytes: 262144 } },
  415: {
    code: 'unsupported_media_type',
    message: 'The body must be JSON (Content-Type: application/json), not text/plain',
  },
  500: {
    code: 'internal_error',
    message: 'Internal error (request 8d0c8f5e-2f0a-4d43-9c55-0d4f4f3f8a11); it has been logged',
  },
};

export const EXAMPLE_BATCH_ID = 'bat_Q2x7mN4pR8sT1vW5yZ9aB3cD6e';

/** Three photos to resize, the second one refused, and a report when all have ended. */
export const EXAMPLE_BATCH_SUBMIT = {
  tasks: [
    { tenantId: EXAMPLE_TENANT_ID, type: 'demo.echo', payload: { photo: 'p-001.jpg' } },
    { tenantId: EXAMPLE_TENANT_ID, type: 'demo.nope', payload: { photo: 'p-002.jpg' } },
    { tenantId: EXAMPLE_TENANT_ID, type: 'demo.echo', payload: { photo: 'p-003.jpg' }, idempotencyKey: 'photo-p-003' },
  ],
  // biome-ignore lint/suspicious/noThenProperty: the field's name is pinned (PRODUCT.md, POST /v1/tasks/batch)
  then: { tenantId: EXAMPLE_TENANT_ID, type: 'demo.echo', payload: { report: 'photos-2026-12-01' } },
};

export const EXAMPLE_BATCH_RESULT = {
  batchId: EXAMPLE_BATCH_ID,
  results: [
    { taskId: 'tsk_kP3vQ8nR2sT6wX0yA4bC7dE9fG', state: 'QUEUED' as const, created: true },
    { error: { code: 'unknown_task_type', message: 'Unknown task type "demo.nope"' } },
    { taskId: 'tsk_hJ5kL9mN3pQ7rS1tU5vW8xY2zA', state: 'QUEUED' as const, created: true },
  ],
};

export const EXAMPLE_BATCH = {
  batchId: EXAMPLE_BATCH_ID,
  tenantId: EXAMPLE_TENANT_ID,
  createdAt: '2026-12-01T09:00:00.000Z',
  total: 3,
  counts: { succeeded: 2, failed: 0, cancelled: 0, excluded: 1, pending: 0 },
  endedAt: '2026-12-01T09:00:04.120Z',
  thenTaskId: 'tsk_Zt0aB4cD8eF2gH6iJ0kL4mN8oP',
};
