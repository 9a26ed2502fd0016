/**
 * Reservations (runtime/scheduler/reservation.ts): the real engine, an intake that records what
 * is done to it. A pick holds its capacity until it is committed or aborted, each once; the end
 * of a round finds one left open.
 */
import { describe, expect, it } from 'vitest';
import type { QueuedRef } from '../../runtime/core/intake/index.ts';
import { createTask } from '../../runtime/core/lifecycle.ts';
import type { TaskLogger } from '../../runtime/core/logger.ts';
import type { Task } from '../../runtime/core/task.ts';
import { ActiveAttempts } from '../../runtime/scheduler/attempts.ts';
import { Reservations, type ReservedIntake } from '../../runtime/scheduler/reservation.ts';
import { taskSpec } from '../helpers/factories.ts';
import { candidate, makePolicy } from './policy/helpers.ts';

const NOW = new Date('2026-12-02T08:00:00.000Z');
const SMALL_TASK = { vcpu: 0.25, memoryMiB: 512 };

function item(taskId: string, overrides: Partial<Task> = {}): Task {
  return { ...createTask(taskId, taskSpec({ tenantId: 't1' }), new Date(0)), ...overrides };
}

function ref(task: Task): QueuedRef {
  return {
    taskId: task.taskId,
    tenantId: task.tenantId,
    priority: task.priority,
    runtime: task.runtime,
    resources: task.resources,
    agingFromMs: Date.parse(task.agingFrom),
    runAtMs: Date.parse(task.runAt),
    fence: task.fence,
  };
}

/** Two waiting tasks in the engine and their refs in a window; everything done to the intake logged. */
function setUp() {
  const policy = makePolicy({ pools: { slots: 10 } });
  const items = [item('a'), item('b', { concurrencyKey: 'k' })];
  const window = new Map(items.map((task) => [task.taskId, ref(task)]));
  for (const task of items) policy.add(candidate({ taskId: task.taskId, tenantId: task.tenantId }));
  const log: string[] = [];
  const intake: ReservedIntake = {
    windows: {
      taken: (taskId) => window.get(taskId),
      dispatched: (taken, fromFence) => log.push(`dispatched ${taken.taskId} from ${fromFence}`),
      dropped: (taskId) => log.push(`dropped ${taskId}`),
    },
    returned: (returned) => log.push(`returned ${returned.taskId} at ${returned.fence}`),
    throttled: (tenantId, tier) => log.push(`throttled ${tenantId}/${tier}`),
  };
  const errors: string[] = [];
  const logger: TaskLogger = { info: () => {}, warn: () => {}, error: (message) => errors.push(message) };
  const counted: string[] = [];
  const releasedKeys: string[] = [];
  const reservations = new Reservations({
    policy,
    intake,
    flow: {
      releaseKey: async (_tenantId, key, taskId, fence) => {
        releasedKeys.push(`${key} ${taskId} at ${fence}`);
      },
    },
    onCommitted: (written) => counted.push(written.taskId),
    logger,
  });
  return { policy, items, reservations, log, errors, counted, releasedKeys };
}

describe('Class: Reservations', () => {
  describe('Method: pickAll', () => {
    it('reserves each pick with its window entry, its capacity held until decided', () => {
      // Prepare
      const { policy, reservations } = setUp();
      // Act
      const picked = reservations.pickAll(NOW.getTime());
      // Assess
      expect(picked.map((r) => r.taskId)).toEqual(['a', 'b']);
      expect(policy.activeCount).toBe(2);
      expect(reservations.openCount).toBe(2);
    });
  });

  describe('Method: abort', () => {
    it('frees the capacity and returns the task to its window, once', () => {
      // Prepare
      const { policy, items, reservations, log } = setUp();
      const [a] = reservations.pickAll(NOW.getTime());
      // Act
      const first = a!.abort('changed', { item: { ...items[0]!, fence: 2 } });
      const second = a!.abort('gone');
      // Assess: waits again as the item says (fence 2); the second abort changes nothing
      expect([first, second]).toEqual([true, false]);
      expect(log).toEqual(['returned a at 2']);
      expect(policy.activeCount).toBe(1);
      expect(() => a!.commit(items[0]!, NOW.getTime())).toThrow(/after it was aborted/);
    });

    it('drops the task from its window when it is gone, moved tier, or a refused write names no waiting item', () => {
      const { items, reservations, log } = setUp();
      const [a, b] = reservations.pickAll(NOW.getTime());
      a!.abort('changed', { item: { ...items[0]!, priority: 'high' } });
      b!.read(items[1]!);
      b!.writing();
      b!.abort('refused', { item: { ...items[1]!, state: 'CANCELLED' } });
      expect(log).toEqual(['dropped a', 'dropped b']);
    });

    it('hands the key place back unless the dispatch write may have landed', async () => {
      // Prepare
      const { items, reservations, releasedKeys, log } = setUp();
      const [, b] = reservations.pickAll(NOW.getTime());
      b!.read(items[1]!);
      b!.keyTaken();
      // Act: the round failed before the write
      b!.abort('round-failed');
      await reservations.released();
      // Assess
      expect(releasedKeys).toEqual(['k b at 1']);
      expect(log).toEqual(['returned b at 0']);
    });

    it('keeps the key place when the write went out unanswered, and hands it back when it was refused', async () => {
      const unanswered = setUp();
      const [, b1] = unanswered.reservations.pickAll(NOW.getTime());
      b1!.read(unanswered.items[1]!);
      b1!.keyTaken();
      b1!.writing();
      b1!.abort('write-failed', { error: new Error('socket hang up') });
      await unanswered.reservations.released();
      expect(unanswered.releasedKeys).toEqual([]);

      const refused = setUp();
      const [, b2] = refused.reservations.pickAll(NOW.getTime());
      b2!.read(refused.items[1]!);
      b2!.keyTaken();
      b2!.writing();
      b2!.abort('refused', { item: { ...refused.items[1]!, fence: 2 } });
      await refused.reservations.released();
      expect(refused.releasedKeys).toEqual(['k b at 1']);
      expect(refused.log).toEqual(['returned b at 2']);
    });

    it('backs a throttled tenant-tier off, then returns the task', () => {
      const { items, reservations, log } = setUp();
      const [a] = reservations.pickAll(NOW.getTime());
      a!.read(items[0]!);
      a!.abort('throttled', { error: new Error('throttled') });
      expect(log).toEqual(['throttled t1/normal', 'returned a at 0']);
    });
  });

  describe('Method: commit', () => {
    it('moves the attempt to the committed set once and keeps its capacity held', () => {
      const { policy, items, reservations, log, counted } = setUp();
      const [a] = reservations.pickAll(NOW.getTime());
      a!.read(items[0]!);
      const written = { ...items[0]!, state: 'DISPATCHED' as const, fence: 1 };
      expect(a!.commit(written, NOW.getTime())).toBe(true);
      expect(a!.commit(written, NOW.getTime())).toBe(false);
      expect(a!.abort('round-failed')).toBe(false);
      expect(counted).toEqual(['a']);
      expect(log).toEqual(['dispatched a from 0']);
      expect(policy.activeCount).toBe(2);
    });
  });

  describe('Method: endRound', () => {
    it('reports and aborts a reservation the round left open, so its quota is not leaked', () => {
      // Prepare: a round that decided one pick and forgot the other
      const { policy, items, reservations, errors, log } = setUp();
      const [a] = reservations.pickAll(NOW.getTime());
      a!.read(items[0]!);
      a!.commit({ ...items[0]!, state: 'DISPATCHED', fence: 1 }, NOW.getTime());
      // Act
      const leaked = reservations.endRound();
      // Assess
      expect(leaked).toBe(1);
      expect(errors).toEqual(['a reservation was neither committed nor aborted by its round; aborted']);
      expect(log).toEqual(['dispatched a from 0', 'returned b at 0']);
      expect(policy.activeCount).toBe(1);
      expect(reservations.openCount).toBe(0);
      expect(reservations.endRound()).toBe(0);
    });
  });
});

describe('Class: ActiveAttempts', () => {
  it('counts a committed attempt until it ends, then lets go of the engine and its key place', async () => {
    // Prepare: a pick committed with its key (the engine counts it since the pick)
    const { policy, items, reservations } = setUp();
    const releasedKeys: string[] = [];
    const attempts = new ActiveAttempts({
      policy,
      flow: {
        releaseKey: async (_tenantId, key, taskId, fence) => void releasedKeys.push(`${key} ${taskId} at ${fence}`),
      },
    });
    const [, b] = reservations.pickAll(NOW.getTime());
    b!.read(items[1]!);
    b!.commit({ ...items[1]!, state: 'DISPATCHED', fence: 1 }, NOW.getTime());
    attempts.committed({ ...items[1]!, state: 'DISPATCHED', fence: 1 }, NOW.getTime(), NOW.getTime() + 60_000);
    // Act
    const counted = [attempts.size, policy.activeCount];
    await attempts.end('b');
    // Assess
    expect(counted).toEqual([1, 2]);
    expect([attempts.size, policy.activeCount]).toEqual([0, 1]);
    expect(releasedKeys).toEqual(['k b at 1']);
  });

  it('adopts an attempt found in DynamoDB once, counted by the engine too', () => {
    const policy = makePolicy({ pools: { slots: 10 } });
    const attempts = new ActiveAttempts({ policy, flow: { releaseKey: async () => {} } });
    const leased = { taskId: 'x', tenantId: 't1', runtime: 'lambda' as const, resources: SMALL_TASK, fence: 3 };
    expect([attempts.adopt(leased, 0), attempts.adopt(leased, 0)]).toEqual([true, false]);
    expect([attempts.get('x')?.fence, policy.activeCount]).toEqual([3, 1]);
  });
});
