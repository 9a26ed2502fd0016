/**
 * The intake's pure bookkeeping (lambda/core/intake): windows per tenant-tier, refills from the
 * index, the just-dispatched set, the registry state machine. A property test runs it against a
 * model of the task table, a lagging index, a tier queue and the registry on a fake clock.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { IntakeWindows, type QueuedRef } from '../../runtime/core/intake/index.ts';
import { PRIORITY_TIERS, type PriorityTier } from '../../runtime/core/task.ts';

const G = 15_000;

const ref = (taskId: string, overrides: Partial<QueuedRef> = {}): QueuedRef => ({
  taskId,
  tenantId: 'a',
  priority: 'normal',
  runtime: 'lambda',
  resources: { vcpu: 0.25, memoryMiB: 512 },
  agingFromMs: 0,
  runAtMs: 0,
  fence: 0,
  ...overrides,
});

const intake = (window = 2, bufferSize = 100) =>
  new IntakeWindows({ windowSize: () => window, bufferSize, indexLagMs: G, minQueryGapMs: 0 });

describe('IntakeWindows', () => {
  it('registers a new tenant-tier once and admits announced work up to the window', () => {
    const windows = intake(2);
    expect(windows.announced({ tenantId: 'a', tier: 'normal', ref: ref('t1') }, 0)).toEqual({
      register: true,
      admitted: ref('t1'),
    });
    // Registration in flight: no second write.
    expect(windows.announced({ tenantId: 'a', tier: 'normal', ref: ref('t2') }, 0)).toEqual({
      register: false,
      admitted: ref('t2'),
    });
    windows.registration('a', 'normal', 'tok-1');
    expect(windows.isRegistered('a', 'normal')).toBe(true);
    // Beyond the window: left to the index, which is read once the window has room.
    expect(windows.announced({ tenantId: 'a', tier: 'normal', ref: ref('t3') }, 0)).toEqual({ register: false });
    expect(windows.refillsDue(0)).toEqual([]);
    windows.taken('t1', 'a', 'normal');
    windows.dispatched(ref('t1'), 0, 1);
    expect(windows.refillsDue(1)).toEqual([{ tenantId: 'a', tier: 'normal', limit: 2 }]);
  });

  it('skips entries the index still lists for dispatched work, but not a retry with a higher fence', () => {
    const windows = intake(5);
    windows.announced({ tenantId: 'a', tier: 'normal', ref: ref('t1') }, 0);
    windows.registration('a', 'normal', 'tok');
    expect(windows.taken('t1', 'a', 'normal')).toEqual(ref('t1'));
    windows.dispatched(ref('t1'), 0, 10);
    windows.querying('a', 'normal', 20);
    expect(windows.listed({ tenantId: 'a', tier: 'normal' }, { refs: [ref('t1')], hasMore: false }, 20)).toEqual([]);
    windows.querying('a', 'normal', 30);
    const retry = ref('t1', { fence: 1, runAtMs: 25 });
    expect(windows.listed({ tenantId: 'a', tier: 'normal' }, { refs: [retry], hasMore: false }, 30)).toEqual([retry]);
  });

  it('deregisters only when the index, read G after the last announcement, shows nothing', () => {
    const windows = intake(5);
    windows.announced({ tenantId: 'a', tier: 'normal', ref: ref('t1') }, 0);
    windows.registration('a', 'normal', 'tok');
    windows.taken('t1', 'a', 'normal');
    windows.dispatched(ref('t1'), 0, 100);
    const [refill] = windows.refillsDue(100);
    expect(refill?.tenantId).toBe('a');
    windows.querying('a', 'normal', 100);
    windows.listed({ tenantId: 'a', tier: 'normal' }, { refs: [], hasMore: false }, 100);
    expect(windows.probesDue(100)).toEqual([]);
    expect(windows.probesDue(G)).toEqual([{ tenantId: 'a', tier: 'normal' }]);
    windows.querying('a', 'normal', G);
    expect(windows.probed({ tenantId: 'a', tier: 'normal' }, undefined, G)).toBe('tok');
    // An announcement while the delete is in flight: registered again, the deletion's outcome ignored.
    expect(windows.announced({ tenantId: 'a', tier: 'normal', ref: ref('t2') }, G + 1).register).toBe(true);
    windows.deregistered('a', 'normal', true, G + 2);
    expect(windows.activeCount).toBe(1);
    windows.registration('a', 'normal', 'tok-2');
    expect(windows.registered()).toEqual([{ tenantId: 'a', tier: 'normal' }]);
  });

  it('keeps a tenant-tier with work due later registered, and reads it when due', () => {
    const windows = intake(5);
    windows.announced({ tenantId: 'a', tier: 'low', ref: ref('later', { priority: 'low', runAtMs: 60_000 }) }, 0);
    windows.registration('a', 'low', 'tok');
    expect(windows.refillsDue(59_999)).toEqual([]);
    expect(windows.refillsDue(60_000)).toEqual([{ tenantId: 'a', tier: 'low', limit: 5 }]);
    // A probe that finds it keeps the registration.
    windows.querying('a', 'low', 0);
    expect(windows.probed({ tenantId: 'a', tier: 'low' }, ref('later', { runAtMs: 60_000 }), G + 1)).toBeUndefined();
  });

  it('shrinks every window towards 1 when many tenant-tiers share the buffer', () => {
    const windows = intake(20, 4);
    for (const tenantId of ['a', 'b', 'c', 'd', 'e']) {
      windows.announced({ tenantId, tier: 'normal', ref: ref(`${tenantId}1`, { tenantId }) }, 0);
    }
    expect(windows.windowOf('a')).toBe(1);
    // Each tenant's head is admitted; the next one waits in the index.
    expect(windows.announced({ tenantId: 'a', tier: 'normal', ref: ref('a2') }, 0).admitted).toBeUndefined();
    expect(windows.heldCount).toBe(5);
  });

  it('gives the oldest agingFrom held per tier', () => {
    const windows = intake(5);
    windows.announced({ tenantId: 'a', tier: 'high', ref: ref('h', { priority: 'high', agingFromMs: 7 }) }, 10);
    windows.announced(
      { tenantId: 'b', tier: 'high', ref: ref('h2', { tenantId: 'b', priority: 'high', agingFromMs: 3 }) },
      10,
    );
    windows.announced({ tenantId: 'a', tier: 'low', ref: ref('l', { priority: 'low', agingFromMs: 5 }) }, 10);
    expect(windows.oldestAgingFromMs()).toEqual(
      new Map([
        ['high', 3],
        ['low', 5],
      ]),
    );
  });
});

/**
 * A model of what the intake stands on: the task table (truth), the index (each item's entry
 * reaches it after a lag below G), one tier queue of announcements, and the registry.
 */
interface ModelTask {
  readonly taskId: string;
  readonly tenantId: string;
  readonly tier: PriorityTier;
  state: 'QUEUED' | 'DISPATCHED';
  fence: number;
  runAtMs: number;
  /** The index shows this version of the item from `indexedAtMs` on (the previous before). */
  indexed: { state: 'QUEUED' | 'DISPATCHED'; fence: number; runAtMs: number; atMs: number }[];
}

const actionArb = fc.oneof(
  fc.record({
    kind: fc.constant('submit' as const),
    tenant: fc.integer({ min: 0, max: 3 }),
    tier: fc.constantFrom(...PRIORITY_TIERS),
    delayMs: fc.constantFrom(0, 0, 0, 5_000, 40_000),
    lagMs: fc.integer({ min: 0, max: G - 1 }),
  }),
  fc.record({ kind: fc.constant('receive' as const), count: fc.integer({ min: 1, max: 10 }) }),
  fc.record({ kind: fc.constant('read' as const) }),
  fc.record({ kind: fc.constant('dispatch' as const), count: fc.integer({ min: 1, max: 5 }) }),
  fc.record({ kind: fc.constant('retry' as const), lagMs: fc.integer({ min: 0, max: G - 1 }) }),
  fc.record({ kind: fc.constant('tick' as const), ms: fc.integer({ min: 1, max: 20_000 }) }),
);

function runModel(actions: readonly ActionValue[]) {
  let nowMs = 1_000_000;
  let seq = 0;
  const tasks = new Map<string, ModelTask>();
  const queue: { taskId: string; receives: number }[] = [];
  const registry = new Map<string, string>();
  const windows = new IntakeWindows({ windowSize: () => 3, bufferSize: 8, indexLagMs: G });
  const maxReceives = { value: 0 };
  const regKey = (tenantId: string, tier: PriorityTier) => `${tenantId}#${tier}`;

  const indexedVersion = (task: ModelTask) => task.indexed.filter((v) => v.atMs <= nowMs).at(-1);
  const refOf = (task: ModelTask, version: { fence: number; runAtMs: number } = task): QueuedRef =>
    ref(task.taskId, {
      tenantId: task.tenantId,
      priority: task.tier,
      runAtMs: version.runAtMs,
      agingFromMs: 0,
      fence: version.fence,
    });
  const listDue = (tenantId: string, tier: PriorityTier, limit: number) => {
    const entries = [...tasks.values()]
      .filter((task) => task.tenantId === tenantId && task.tier === tier)
      .flatMap((task) => {
        const version = indexedVersion(task);
        return version?.state === 'QUEUED' ? [{ task, version }] : [];
      })
      .sort((a, b) => a.version.runAtMs - b.version.runAtMs || (a.task.taskId < b.task.taskId ? -1 : 1));
    const due = entries.filter(({ version }) => version.runAtMs <= nowMs);
    return {
      due: { refs: due.slice(0, limit).map(({ task, version }) => refOf(task, version)), hasMore: due.length > limit },
      first: entries[0] ? refOf(entries[0].task, entries[0].version) : undefined,
    };
  };
  const announce = (task: ModelTask) => queue.push({ taskId: task.taskId, receives: 0 });

  const receive = (count: number) => {
    const batch = queue.splice(0, count);
    for (const message of batch) {
      message.receives++;
      maxReceives.value = Math.max(maxReceives.value, message.receives);
      const task = tasks.get(message.taskId)!;
      const decision = windows.announced({ tenantId: task.tenantId, tier: task.tier, ref: refOf(task) }, nowMs);
      if (decision.register) {
        const token = `tok-${seq++}`;
        registry.set(regKey(task.tenantId, task.tier), token);
        windows.registration(task.tenantId, task.tier, token);
      }
      // Deleted: registered (now or before) and in the window or left to the index.
    }
  };
  const read = () => {
    for (const { tenantId, tier, limit } of windows.refillsDue(nowMs)) {
      windows.querying(tenantId, tier, nowMs);
      windows.listed({ tenantId, tier }, listDue(tenantId, tier, limit).due, nowMs);
    }
    for (const { tenantId, tier } of windows.probesDue(nowMs)) {
      windows.querying(tenantId, tier, nowMs);
      const token = windows.probed({ tenantId, tier }, listDue(tenantId, tier, 1).first, nowMs);
      if (token === undefined) continue;
      const deleted = registry.get(regKey(tenantId, tier)) === token;
      if (deleted) registry.delete(regKey(tenantId, tier));
      windows.deregistered(tenantId, tier, deleted, nowMs);
    }
  };
  const dispatchSome = (count: number) => {
    for (const held of [...windows.refs()].slice(0, count)) {
      const taken = windows.taken(held.taskId, held.tenantId, held.priority)!;
      const task = tasks.get(held.taskId)!;
      if (task.state !== 'QUEUED') {
        windows.dropped(held.taskId, held.tenantId, held.priority);
      } else if (task.fence !== taken.fence || task.runAtMs > nowMs) {
        windows.returned(refOf(task));
      } else {
        task.state = 'DISPATCHED';
        task.fence++;
        task.indexed.push({ state: 'DISPATCHED', fence: task.fence, runAtMs: task.runAtMs, atMs: nowMs + 1 });
        windows.dispatched(taken, taken.fence, nowMs);
      }
    }
  };

  for (const action of actions) {
    switch (action.kind) {
      case 'submit': {
        const task: ModelTask = {
          taskId: `t${seq++}`,
          tenantId: `tenant${action.tenant}`,
          tier: action.tier,
          state: 'QUEUED',
          fence: 0,
          runAtMs: nowMs + action.delayMs,
          indexed: [],
        };
        task.indexed.push({ state: 'QUEUED', fence: 0, runAtMs: task.runAtMs, atMs: nowMs + action.lagMs });
        tasks.set(task.taskId, task);
        announce(task);
        break;
      }
      case 'receive':
        receive(action.count);
        break;
      case 'read':
        read();
        break;
      case 'dispatch':
        dispatchSome(action.count);
        break;
      case 'retry': {
        const running = [...tasks.values()].find((task) => task.state === 'DISPATCHED');
        if (!running) break;
        running.state = 'QUEUED';
        running.runAtMs = nowMs + 1_000;
        running.indexed.push({
          state: 'QUEUED',
          fence: running.fence,
          runAtMs: running.runAtMs,
          atMs: nowMs + action.lagMs,
        });
        announce(running);
        break;
      }
      case 'tick':
        nowMs += action.ms;
        break;
    }
  }
  // Quiesce: no more submits; the scheduler keeps receiving, reading and dispatching.
  for (let round = 0; round < 400; round++) {
    receive(10);
    read();
    dispatchSome(10);
    nowMs += 1_000;
  }
  return { tasks, registry, windows, maxReceives: maxReceives.value };
}

type ActionValue = typeof actionArb extends fc.Arbitrary<infer T> ? T : never;

describe('IntakeWindows against a lagging index (property)', () => {
  it('strands no task, receives each announcement once, and ends with nothing registered', () => {
    fc.assert(
      fc.property(fc.array(actionArb, { maxLength: 120 }), (actions) => {
        const { tasks, registry, windows, maxReceives } = runModel(actions);
        const stranded = [...tasks.values()].filter((task) => task.state === 'QUEUED').map((task) => task.taskId);
        expect(stranded).toEqual([]);
        expect(maxReceives).toBeLessThanOrEqual(1);
        expect(registry.size).toBe(0);
        expect(windows.activeCount).toBe(0);
      }),
      { numRuns: 200 },
    );
  });
});
