import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { TierMessage } from '../../runtime/adapters/queues.ts';
import { type ActiveTaskRef, TaskStore } from '../../runtime/adapters/task-store.ts';
import { createTask, dispatch, start, succeed } from '../../runtime/core/lifecycle.ts';
import type { TaskState } from '../../runtime/core/task.ts';
import { TASKS_TABLE } from '../../runtime/infra/resources.ts';
import { NO_INTAKE, Reconciler } from '../../runtime/scheduler/reconciler.ts';
import { taskSpec } from '../helpers/factories.ts';
import { startTestServices, type TestServices } from '../helpers/services.ts';

let services: TestServices;
beforeEach(async () => {
  services = await startTestServices({ config: { retry: { baseDelaySeconds: 0, maxDelaySeconds: 0 } } });
});
afterEach(async () => {
  await services.stop();
});

const DAY = 86_400_000;
const spec = taskSpec;
const reconcilerAt = (now: Date) =>
  new Reconciler({
    store: services.store,
    control: services.control,
    queues: services.queues,
    config: services.config,
    now: () => now,
  });

async function announced(tier = 'tier-normal') {
  const messages = await services.queues.receive<TierMessage>(tier, { waitSeconds: 0 });
  return messages.map((m) => m.body.taskId);
}

describe('Class: Reconciler (against the emulators)', () => {
  it('announces a task delayed beyond a message lifetime again as it comes due', async () => {
    // Prepare: written without a tier message, as if its 14-day-old message had expired.
    const submitted = new Date();
    const task = createTask('far-future', spec({ runAt: new Date(submitted.getTime() + 20 * DAY) }), submitted);
    await services.store.create(task);
    const near = createTask('near', spec({ runAt: new Date(submitted.getTime() + 60_000) }), submitted);
    await services.store.create(near);

    // Act: a week before it is due, not yet (only the orphaned near task, which is due);
    // two minutes before, once, and not again on the next pass.
    await reconcilerAt(new Date(submitted.getTime() + 13 * DAY)).run(NO_INTAKE, new Map());
    const early = await announced();
    const dueSoon = reconcilerAt(new Date(Date.parse(task.runAt) - 120_000));
    const first = await dueSoon.run(NO_INTAKE, new Map());
    // Announced ahead of time: SQS holds it back (DelaySeconds) until the task is due.
    const delayed = await services.queues.attributes('tier-normal', ['ApproximateNumberOfMessagesDelayed']);
    const second = await dueSoon.run(NO_INTAKE, new Map());

    // Assess
    expect(early).toEqual(['near']);
    // (`near`, received above but held by no scheduler, may be re-announced as an orphan too.)
    expect(first.reannounced).toBeGreaterThanOrEqual(1);
    expect(Number(delayed.ApproximateNumberOfMessagesDelayed)).toBe(1);
    expect(second.reannounced).toBe(0);
  });

  it('puts a task whose worker died back in the queue, counting the attempt, keeping tier and age', async () => {
    const { task } = await services.tasks.submit({ tenantId: 'acme', type: 'demo.echo', priority: 'high' });
    await services.queues.receive('tier-high', { waitSeconds: 0 }); // the submit's own message
    const dispatched = await services.store.apply(dispatch(task, new Date(), 60));
    await services.store.apply(start(dispatched, dispatched.fence, new Date(), 60));

    const result = await reconcilerAt(new Date(Date.now() + 61_000)).run(NO_INTAKE, new Map());

    const recovered = await services.store.get(task.taskId);
    expect(result.expired).toBe(1);
    expect(recovered).toMatchObject({
      state: 'QUEUED',
      attempts: 1,
      priority: 'high',
      agingFrom: task.agingFrom,
      error: { name: 'LeaseExpired' },
    });
    expect(await announced('tier-high')).toEqual([task.taskId]);
  });

  it('announces a QUEUED task that never got its message once the tier has drained', async () => {
    const orphan = createTask('orphan', spec(), new Date());
    await services.store.create(orphan);
    const result = await reconcilerAt(new Date(Date.now() + 120_000)).run(NO_INTAKE, new Map());
    expect(result.reannounced).toBe(1);
    expect(await announced()).toEqual(['orphan']);
  });

  it('replaces a lost message under steady load, when the tier never drains, once an hour at most', async () => {
    // Prepare: a busy tier (a visible message that is not the lost task's) and a task due for
    // 20 minutes whose message was lost.
    const busy = createTask('busy', spec(), new Date());
    await services.queues.announce([busy], new Date());
    const lost = createTask('lost', spec(), new Date(Date.now() - 20 * 60_000));
    await services.store.create(lost);
    const reconciler = reconcilerAt(new Date());

    // Act
    const first = await reconciler.run(NO_INTAKE, new Map());
    const again = await reconciler.run(NO_INTAKE, new Map());

    // Assess
    expect(first.reannounced).toBe(1);
    expect(again.reannounced).toBe(0);
    const messages = [...(await announced()), ...(await announced())];
    expect(messages.sort()).toEqual(['busy', 'lost']);
  });

  it('a fresh reconciler every minute, as the scheduler Lambda builds, re-announces a stale task once an hour (issue 10, item 2)', async () => {
    // Prepare: a busy tier, and a task due for 20 minutes whose message was lost.
    const busy = createTask('busy', spec(), new Date());
    await services.queues.announce([busy], new Date());
    const lost = createTask('lost', spec(), new Date(Date.now() - 20 * 60_000));
    await services.store.create(lost);

    // Act: a new reconciler at each of these minutes, each running once.
    let reannounced = 0;
    for (const minute of [0, 1, 2, 3, 4, 5, 30, 59, 61, 62, 63, 70]) {
      const result = await reconcilerAt(new Date(Date.now() + minute * 60_000)).run(NO_INTAKE, new Map());
      reannounced += result.reannounced;
    }

    // Assess: once at first, once more an hour later; not at every new reconciler.
    expect(reannounced).toBe(2);
  });

  it('frees capacity the scheduler still counts for a task that is no longer active', async () => {
    const result = await reconcilerAt(new Date()).run(
      NO_INTAKE,
      new Map([
        ['finished-long-ago', { fence: 1, sinceMs: Date.now() - 60_000 }],
        ['dispatched-just-now', { fence: 1, sinceMs: Date.now() }],
      ]),
    );
    // The index may lag a fresh dispatch: only the old entry is released.
    expect(result.released).toEqual(['finished-long-ago']);
  });

  describe('capacity and a lagging index (issue 10, item 4)', () => {
    /** A store whose `byActive` reads miss some tasks, as a lagging GSI does. */
    class LaggingStore extends TaskStore {
      readonly hidden = new Set<string>();
      override async *listActive(state: TaskState, dueBefore?: Date, dueFrom?: Date): AsyncGenerator<ActiveTaskRef> {
        for await (const ref of super.listActive(state, dueBefore, dueFrom))
          if (!this.hidden.has(ref.taskId)) yield ref;
      }
    }
    const lagging = () => new LaggingStore(services.clients.documents, services.emulators.tables[TASKS_TABLE.id]!);

    it('keeps counting an active task the index misses; frees it only once a consistent read shows it ended', async () => {
      const { task } = await services.tasks.submit({ tenantId: 'acme', type: 'demo.echo' });
      const dispatched = await services.store.transition(task.taskId, (t) => dispatch(t, new Date(), 120));
      const store = lagging();
      store.hidden.add(task.taskId);
      const reconciler = new Reconciler({
        store,
        control: services.control,
        queues: services.queues,
        config: services.config,
        now: () => new Date(),
      });
      const counted = new Map([[task.taskId, { fence: dispatched.fence, sinceMs: Date.now() - 60_000 }]]);

      const lagged = await reconciler.run(NO_INTAKE, counted);
      expect(lagged.released).toEqual([]);

      const started = await services.store.transition(task.taskId, (t) => start(t, dispatched.fence, new Date(), 60));
      const running = await reconciler.run(NO_INTAKE, counted);
      expect(running.released).toEqual([]);

      await services.store.apply(succeed(started, started.fence, new Date(), {}));
      const ended = await reconciler.run(NO_INTAKE, counted);
      expect(ended.released).toEqual([task.taskId]);
    });

    it('counts an active task the scheduler does not know of once the index shows it', async () => {
      const { task } = await services.tasks.submit({ tenantId: 'acme', type: 'demo.echo' });
      const dispatched = await services.store.transition(task.taskId, (t) => dispatch(t, new Date(), 120));
      const result = await reconcilerAt(new Date()).run(NO_INTAKE, new Map());
      expect(result.adopted).toEqual([expect.objectContaining({ taskId: task.taskId, fence: dispatched.fence })]);
    });
  });
});
