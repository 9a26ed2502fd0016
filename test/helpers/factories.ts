/**
 * Factories for tasks in any lifecycle state, written through the real store and the core's
 * transitions (so their items are exactly what the runtime would have stored).
 */
import type { TaskStore } from '../../runtime/adapters/task-store.ts';
import type { Services } from '../../runtime/app/wiring.ts';
import { dispatch, fail, start, succeed } from '../../runtime/core/lifecycle.ts';
import { SINGLE_SHARD } from '../../runtime/core/shards.ts';
import type { NewTaskSpec, Task } from '../../runtime/core/task.ts';
import { leasedRefOf } from '../../runtime/scheduler/dispatch.ts';
import { LeaseLedger } from '../../runtime/scheduler/lease-ledger.ts';

/**
 * QUEUED → DISPATCHED as the scheduler writes it: the attempt on the lease ledger first (a page of
 * its own), then the conditional write. Only the scheduler dispatches; a test that leases a task
 * itself must record it too, or no reader finds it leased.
 */
export async function dispatchAsScheduler(
  store: TaskStore,
  task: Task | string,
  now: Date = new Date(),
  leaseSeconds = 120,
  epoch?: number,
): Promise<Task> {
  const taskId = typeof task === 'string' ? task : task.taskId;
  const current = typeof task === 'string' ? (await store.getMany([taskId])).get(taskId) : task;
  if (!current) throw new Error(`dispatchAsScheduler: no task ${taskId}`);
  const plan = dispatch(current, now, leaseSeconds, epoch);
  await new LeaseLedger(store.leasePages!, SINGLE_SHARD).record([leasedRefOf(plan.next)], now.getTime());
  return store.apply(plan);
}

/** A complete task spec (what TaskService resolves a submit into), for `createTask` in tests. */
export function taskSpec(overrides: Partial<NewTaskSpec> = {}): NewTaskSpec {
  return {
    tenantId: 'acme',
    type: 'demo.echo',
    payload: {},
    priority: 'normal',
    resources: { vcpu: 0.25, memoryMiB: 512 },
    runtime: 'lambda',
    timeoutSeconds: 60,
    maxAttempts: 3,
    ...overrides,
  };
}

export interface SubmitOverrides {
  readonly tenantId?: string;
  readonly type?: string;
  readonly payload?: unknown;
  readonly idempotencyKey?: string;
  readonly maxAttempts?: number;
}

export async function submitTask(services: Services, overrides: SubmitOverrides = {}): Promise<Task> {
  const { task } = await services.tasks.submit({
    tenantId: overrides.tenantId ?? 'tenant-a',
    type: overrides.type ?? 'demo.echo',
    payload: overrides.payload ?? { hello: 'world' },
    ...(overrides.idempotencyKey ? { idempotencyKey: overrides.idempotencyKey } : {}),
    ...(overrides.maxAttempts ? { maxAttempts: overrides.maxAttempts } : {}),
  });
  return task;
}

/** QUEUED → DISPATCHED → RUNNING, as the scheduler and a worker would. */
export async function runningTask(services: Services, overrides: SubmitOverrides = {}): Promise<Task> {
  const queued = await submitTask(services, overrides);
  const now = services.now();
  const dispatched = await dispatchAsScheduler(services.store, queued.taskId, now);
  return services.store.transition(dispatched.taskId, (t) => start(t, dispatched.fence, now, 60));
}

export async function succeededTask(services: Services, overrides: SubmitOverrides = {}): Promise<Task> {
  const running = await runningTask(services, overrides);
  return services.store.transition(running.taskId, (t) => succeed(t, running.fence, services.now(), { ok: true }));
}

/** A task that failed its only attempt with a non-retryable error. */
export async function failedTask(services: Services, overrides: SubmitOverrides = {}): Promise<Task> {
  const running = await runningTask(services, { maxAttempts: 1, ...overrides });
  return services.store.transition(running.taskId, (t) =>
    fail(t, running.fence, services.now(), { name: 'Error', message: 'boom', retryable: false }, 0),
  );
}
