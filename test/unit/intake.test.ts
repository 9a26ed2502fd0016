/**
 * The intake's pure bookkeeping (runtime/core/intake): windows per tenant-tier, refills from the
 * index, the just-dispatched set, the registry state machine and its promise. A property test
 * runs it against a model of the task table, a lagging index, a tier queue, the registry and the
 * submit path (which skips the announcement under a promise, from a cached or stale read) on a
 * fake clock, and shows the property fails when the scheduler deregisters at `scanUntilMs`.
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
  it('counts the tenant-tiers restored after a restart until an index read has returned for each', () => {
    const windows = intake();
    windows.restore(
      [
        { tenantId: 'a', tier: 'normal', token: 'tok-a' },
        { tenantId: 'b', tier: 'high', token: 'tok-b' },
      ],
      0,
    );
    expect(windows.unreadSinceRestore()).toBe(2);
    windows.querying('a', 'normal', 1);
    // A read sent before a throttle that came back first does not count: it is read again.
    windows.throttled('a', 'normal', 2);
    windows.listed({ tenantId: 'a', tier: 'normal' }, { refs: [ref('t1')], hasMore: false }, 1);
    expect(windows.unreadSinceRestore()).toBeGreaterThanOrEqual(1);
    windows.querying('a', 'normal', 3);
    windows.listed({ tenantId: 'a', tier: 'normal' }, { refs: [ref('t1')], hasMore: false }, 10_000);
    windows.querying('b', 'high', 3);
    windows.listed({ tenantId: 'b', tier: 'high' }, { refs: [], hasMore: false }, 10_000);
    expect(windows.unreadSinceRestore()).toBe(0);
  });

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

  it('takes a registration the registry no longer holds as gone: forgotten when empty, registered again when holding work', () => {
    const windows = intake(2);
    windows.announced({ tenantId: 'a', tier: 'normal', ref: ref('t1') }, 0);
    windows.registration('a', 'normal', 'tok-1');
    windows.announced({ tenantId: 'b', tier: 'normal', ref: ref('u1', { tenantId: 'b' }) }, 0);
    windows.registration('b', 'normal', 'tok-2');
    windows.taken('u1', 'b', 'normal');
    windows.dispatched(ref('u1', { tenantId: 'b' }), 0, 1);
    windows.querying('b', 'normal', 1);
    windows.listed({ tenantId: 'b', tier: 'normal' }, { refs: [], hasMore: false }, 1);
    // a holds t1: register it again (the caller writes it); b holds nothing: forget it.
    expect(windows.registrationGone('a', 'normal')).toBe(true);
    expect(windows.isRegistered('a', 'normal')).toBe(false);
    windows.registration('a', 'normal', 'tok-3');
    expect(windows.isRegistered('a', 'normal')).toBe(true);
    expect(windows.registrationGone('b', 'normal')).toBe(false);
    expect(windows.announced({ tenantId: 'b', tier: 'normal', ref: ref('u2', { tenantId: 'b' }) }, 2).register).toBe(
      true,
    );
  });

  it('keeps a later due time known from an announcement across a read for an earlier one (chaos seed 9)', () => {
    // Prepare: t-late announced early (due at 160 s); the probe found t-soon (due at 94 s) first,
    // so the tenant-tier's next due time is 94 s.
    const windows = intake(2);
    windows.announced({ tenantId: 'a', tier: 'normal', ref: ref('t0') }, 0);
    windows.registration('a', 'normal', 'tok-1');
    windows.taken('t0', 'a', 'normal');
    windows.dispatched(ref('t0'), 0, 1);
    windows.announced({ tenantId: 'a', tier: 'normal', ref: ref('t-late', { runAtMs: 160_000 }) }, 70_000);
    windows.querying('a', 'normal', 80_000);
    windows.probed({ tenantId: 'a', tier: 'normal' }, ref('t-soon', { runAtMs: 94_000 }), 80_000);

    // Act: the read at 94 s lists t-soon, which is dispatched.
    windows.querying('a', 'normal', 94_000);
    windows.listed(
      { tenantId: 'a', tier: 'normal' },
      { refs: [ref('t-soon', { runAtMs: 94_000 })], hasMore: false },
      94_000,
    );
    windows.taken('t-soon', 'a', 'normal');
    windows.dispatched(ref('t-soon', { runAtMs: 94_000 }), 0, 95_000);

    // Assess: a refill is due by the time t-late is due, probes aside (a duplicate announcement
    // can clear the probe: the next test). The read at 94 s forgot 160 s.
    const next = windows.nextReadAtMs(95_000, false);
    expect(next).toBeDefined();
    expect(next!).toBeLessThanOrEqual(160_000);
  });

  it('still probes a tenant-tier emptied when a late duplicate announcement of a dispatched task comes (chaos seed 9)', () => {
    // Prepare: the one task dispatched, then the probe shows it listed still (the index lags).
    const windows = intake(2);
    windows.announced({ tenantId: 'a', tier: 'normal', ref: ref('t1') }, 0);
    windows.registration('a', 'normal', 'tok-1');
    windows.taken('t1', 'a', 'normal');
    windows.dispatched(ref('t1'), 0, 1_000);
    windows.querying('a', 'normal', 10_000);
    windows.probed({ tenantId: 'a', tier: 'normal' }, ref('t1'), 10_000);

    // Act: its announcement again (SQS delivers at least once), while it counts as just dispatched.
    windows.announced({ tenantId: 'a', tier: 'normal', ref: ref('t1') }, 10_001);

    // Assess: a probe is still due later (before, the announcement cleared it and none was set
    // again: the tenant-tier was never read, and work submitted under it unannounced never found).
    const next = windows.nextReadAtMs(10_001, true);
    expect(next).toBeDefined();
    expect(next!).toBeLessThanOrEqual(10_001 + G);
  });

  it('says when a read held back by the gap between reads comes due, so the tick waits no longer (issue 24, item 2)', () => {
    // Prepare: a window of 2 just read (at 1,000) while more waits in the index
    const windows = new IntakeWindows({ windowSize: () => 2, bufferSize: 100, indexLagMs: G, minQueryGapMs: 250 });
    windows.announced({ tenantId: 'a', tier: 'normal', ref: ref('t1') }, 0);
    windows.registration('a', 'normal', 'tok-1');
    windows.querying('a', 'normal', 1_000);
    windows.listed({ tenantId: 'a', tier: 'normal' }, { refs: [ref('t1'), ref('t2')], hasMore: true }, 1_000);
    expect(windows.nextReadAtMs(1_000, true)).toBeUndefined();

    // Act: the window drains at 1,100, before the gap since its read has passed
    for (const id of ['t1', 't2']) {
      windows.taken(id, 'a', 'normal');
      windows.dispatched(ref(id), 0, 1_100);
    }

    // Assess: not due at 1,100 (the gap), due at 1,250; the tick is told 1,250, not nothing
    expect(windows.refillsDue(1_100)).toEqual([]);
    expect(windows.nextReadAtMs(1_100, true)).toBe(1_250);
    expect(windows.refillsDue(1_250)).toHaveLength(1);
    // Due already: at or before now.
    expect(windows.nextReadAtMs(1_300, true)).toBeLessThanOrEqual(1_300);
  });

  it('backs a throttled tenant-tier off alone: no reads, nothing offered, doubling per throttle in a row', () => {
    const windows = intake(3);
    for (const [tenantId, id] of [
      ['a', 'a1'],
      ['a', 'a2'],
      ['b', 'b1'],
    ] as const) {
      windows.announced({ tenantId, tier: 'normal', ref: ref(id, { tenantId }) }, 0);
      windows.registration(tenantId, 'normal', `tok-${tenantId}`);
    }
    windows.taken('a1', 'a', 'normal');

    // a1's dispatch write is throttled: tenant a backs off 500 ms; its window leaves the engine.
    expect(windows.throttled('a', 'normal', 1_000)).toEqual([ref('a2')]);
    expect(windows.returned(ref('a1'), 1_000)).toBe(false);
    expect(windows.backoffUntilOf('a', 'normal')).toBe(1_500);
    // A second refusal in the same round is the same throttle.
    windows.throttled('a', 'normal', 1_010);
    expect(windows.backoffUntilOf('a', 'normal')).toBe(1_500);
    expect(windows.holds('a1', 'a', 'normal') || windows.holds('a2', 'a', 'normal')).toBe(false);
    // New work of a is left to the index too; b is untouched.
    expect(windows.announced({ tenantId: 'a', tier: 'normal', ref: ref('a3') }, 1_100)).toEqual({ register: false });
    expect(windows.holds('b1', 'b', 'normal')).toBe(true);
    const dueFor = (nowMs: number, tenantId: string) =>
      windows.refillsDue(nowMs).filter((due) => due.tenantId === tenantId);
    expect(dueFor(1_400, 'a')).toEqual([]);

    // After the back-off, a is read again from the index; throttled again, it waits twice as long.
    expect(dueFor(1_500, 'a')).toEqual([{ tenantId: 'a', tier: 'normal', limit: 3 }]);
    windows.querying('a', 'normal', 1_500);
    windows.throttled('a', 'normal', 1_600);
    expect(windows.backoffUntilOf('a', 'normal')).toBe(2_600);
    // A read that succeeds ends the streak: the next throttle is 500 ms again.
    windows.querying('a', 'normal', 2_600);
    const page = { refs: [ref('a1'), ref('a2'), ref('a3')], hasMore: false };
    expect(windows.listed({ tenantId: 'a', tier: 'normal' }, page, 2_600)).toEqual(page.refs);
    windows.throttled('a', 'normal', 3_000);
    expect(windows.backoffUntilOf('a', 'normal')).toBe(3_500);
  });

  it('drops a page read before a throttle that answered after it', () => {
    const windows = intake(3);
    windows.announced({ tenantId: 'a', tier: 'normal' }, 0);
    windows.registration('a', 'normal', 'tok');
    windows.querying('a', 'normal', 100);
    windows.throttled('a', 'normal', 150);
    expect(windows.listed({ tenantId: 'a', tier: 'normal' }, { refs: [ref('a1')], hasMore: false }, 100)).toEqual([]);
    expect(windows.refillsDue(650)).toEqual([{ tenantId: 'a', tier: 'normal', limit: 3 }]);
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
    // Emptied with nothing more known: no read now, the probe G after the last announcement.
    expect(windows.refillsDue(100)).toEqual([]);
    expect(windows.probesDue(100)).toEqual([]);
    expect(windows.probesDue(G - 1)).toEqual([]);
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

  it('admits the next announcement of a tenant-tier whose window emptied, without an index read first', () => {
    // Light load: each task is dispatched before its tenant's next arrives. A read after every
    // emptying made each next announcement wait for it (the gap between reads, 250 ms), and on
    // AWS a read the index answers before it lists the task left the task to the probe, G later.
    const windows = intake(5);
    windows.announced({ tenantId: 'a', tier: 'normal', ref: ref('t1') }, 0);
    windows.registration('a', 'normal', 'tok');
    windows.querying('a', 'normal', 0);
    windows.listed({ tenantId: 'a', tier: 'normal' }, { refs: [ref('t1')], hasMore: false }, 0);
    windows.taken('t1', 'a', 'normal');
    windows.dispatched(ref('t1'), 0, 100);
    expect(windows.refillsDue(400)).toEqual([]);
    expect(windows.announced({ tenantId: 'a', tier: 'normal', ref: ref('t2') }, 120)).toEqual({
      register: false,
      admitted: ref('t2'),
    });
  });

  it('still reads an emptied window while its tenant-tier has more work in the index, or a promise holds', () => {
    const windows = intake(1);
    windows.announced({ tenantId: 'a', tier: 'normal', ref: ref('t1') }, 0);
    windows.registration('a', 'normal', 'tok');
    // A second announcement finds the window full: the index holds more.
    windows.announced({ tenantId: 'a', tier: 'normal', ref: ref('t2') }, 0);
    windows.taken('t1', 'a', 'normal');
    windows.dispatched(ref('t1'), 0, 100);
    expect(windows.refillsDue(100).map((r) => r.tenantId)).toEqual(['a']);
  });

  it('admits an announced task the window refused once a read shows nothing older beyond it, though the lagging index does not list it yet', () => {
    // t2 is announced while the window is full; the read that follows comes back complete
    // without it (the GSI lags). Nothing else would read the partition before the probe, G
    // after the tenant's last announcement, and each new announcement would put that off again.
    const windows = intake(1);
    windows.announced({ tenantId: 'a', tier: 'normal', ref: ref('t1') }, 0);
    windows.registration('a', 'normal', 'tok');
    expect(windows.announced({ tenantId: 'a', tier: 'normal', ref: ref('t2', { agingFromMs: 5 }) }, 10).admitted).toBe(
      undefined,
    );
    windows.taken('t1', 'a', 'normal');
    windows.dispatched(ref('t1'), 0, 20);
    const [refill] = windows.refillsDue(20);
    expect(refill?.tenantId).toBe('a');
    windows.querying('a', 'normal', 20);
    const admitted = windows.listed({ tenantId: 'a', tier: 'normal' }, { refs: [ref('t1')], hasMore: false }, 20);
    expect(admitted.map((r) => r.taskId)).toEqual(['t2']);
    expect(windows.holds('t2', 'a', 'normal')).toBe(true);
  });

  it('admits a delayed task (a retry in backoff) once due, though the read at its due time comes back without it (the index lags)', () => {
    const windows = intake(5);
    windows.announced({ tenantId: 'a', tier: 'normal', ref: ref('retry', { runAtMs: 60_000, fence: 2 }) }, 0);
    windows.registration('a', 'normal', 'tok');
    expect(windows.refillsDue(60_000).map((r) => r.tenantId)).toEqual(['a']);
    windows.querying('a', 'normal', 60_000);
    const admitted = windows.listed({ tenantId: 'a', tier: 'normal' }, { refs: [], hasMore: false }, 60_000);
    expect(admitted.map((r) => [r.taskId, r.fence])).toEqual([['retry', 2]]);
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

  it('promises a backlogged tenant-tier, renews at H/2, and keeps reading until the promise ends + G', () => {
    const windows = new IntakeWindows({
      windowSize: () => 2,
      bufferSize: 100,
      indexLagMs: G,
      minQueryGapMs: 0,
      promiseMs: 60_000,
      promiseRereadMs: 1_000,
    });
    windows.announced({ tenantId: 'a', tier: 'normal', ref: ref('t1') }, 0);
    windows.announced({ tenantId: 'a', tier: 'normal', ref: ref('t2') }, 0);
    expect(windows.promisesDue(0)).toEqual([]); // Not backlogged yet, and not registered.
    windows.announced({ tenantId: 'a', tier: 'normal', ref: ref('t3') }, 0); // Beyond the window.
    expect(windows.promisesDue(0)).toEqual([]); // Not registered yet.
    windows.registration('a', 'normal', 'tok');
    expect(windows.promisesDue(1_000)).toEqual([{ tenantId: 'a', tier: 'normal', token: 'tok', scanUntilMs: 61_000 }]);
    expect(windows.promisesDue(1_000)).toEqual([]); // In flight.
    // The answer was lost: the promise is assumed to have landed (never shrinks).
    windows.promised('a', 'normal', undefined);
    expect(windows.scanUntilOf('a', 'normal')).toBe(61_000);
    expect(windows.promisesDue(30_000)).toEqual([]); // More than H/2 left.
    const [renewal] = windows.promisesDue(31_001);
    expect(renewal?.scanUntilMs).toBe(91_001);
    // Refused: the item holds a newer token and a later promise (another scheduler's). Adopted.
    windows.promised('a', 'normal', { token: 'tok-2', scanUntilMs: 95_000 });
    expect(windows.scanUntilOf('a', 'normal')).toBe(95_000);
    expect(windows.readsPromisedUntilMs()).toBe(95_000 + G);
    // The backlog drains: the empty partition is read every second until 95 s + G, then probed.
    for (const taskId of ['t1', 't2']) {
      windows.taken(taskId, 'a', 'normal');
      windows.dispatched(ref(taskId), 0, 40_000);
    }
    windows.querying('a', 'normal', 40_000);
    expect(
      windows
        .listed({ tenantId: 'a', tier: 'normal' }, { refs: [ref('t3')], hasMore: false }, 40_000)
        .map((r) => r.taskId),
    ).toEqual(['t3']);
    windows.taken('t3', 'a', 'normal');
    windows.dispatched(ref('t3'), 0, 40_000);
    windows.querying('a', 'normal', 40_000);
    windows.listed({ tenantId: 'a', tier: 'normal' }, { refs: [], hasMore: false }, 40_000);
    expect(windows.refillsDue(40_500)).toEqual([]);
    expect(windows.refillsDue(41_000)).toEqual([{ tenantId: 'a', tier: 'normal', limit: 5 }]);
    expect(windows.probesDue(95_000 + G - 1)).toEqual([]);
    expect(windows.refillsDue(95_000 + G)).toEqual([]); // The promise is over: no more rereads.
    expect(windows.probesDue(95_000 + G)).toEqual([{ tenantId: 'a', tier: 'normal' }]);
    windows.querying('a', 'normal', 95_000 + G);
    expect(windows.probed({ tenantId: 'a', tier: 'normal' }, undefined, 95_000 + G)).toBe('tok-2');
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
 * reaches it after a lag below G), one tier queue of announcements, the registry (token and
 * promise per tenant-tier, every version kept so a read can be stale), and the submit path.
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

/** The model's promise length (H) and the submit path's margin. */
const H = 30_000;
const MARGIN = 0;

const actionArb = fc.oneof(
  fc.record({
    kind: fc.constant('submit' as const),
    // Often the flood's tenant-tier (tenant0, normal), so submits meet its promise.
    tenant: fc.constantFrom(0, 0, 0, 1, 2, 3),
    tier: fc.constantFrom<PriorityTier>('normal', 'normal', 'normal', ...PRIORITY_TIERS),
    delayMs: fc.constantFrom(0, 0, 0, 5_000, 40_000),
    lagMs: fc.oneof(fc.integer({ min: 0, max: G - 1 }), fc.constant(G - 1)),
    // Which API container submits (each caches the promises it read), and whether its
    // eventually consistent read of the registry item returns the version before the latest.
    container: fc.integer({ min: 0, max: 1 }),
    staleRead: fc.boolean(),
  }),
  // A burst for one tenant-tier: enough to backlog it, so the scheduler makes a promise.
  fc.record({
    kind: fc.constant('flood' as const),
    count: fc.integer({ min: 4, max: 12 }),
    lagMs: fc.integer({ min: 0, max: G - 1 }),
    container: fc.integer({ min: 0, max: 1 }),
  }),
  fc.record({ kind: fc.constant('receive' as const), count: fc.integer({ min: 1, max: 10 }) }),
  fc.record({ kind: fc.constant('read' as const) }),
  fc.record({ kind: fc.constant('dispatch' as const), count: fc.integer({ min: 1, max: 5 }) }),
  fc.record({ kind: fc.constant('retry' as const), lagMs: fc.integer({ min: 0, max: G - 1 }) }),
  fc.record({ kind: fc.constant('tick' as const), ms: fc.integer({ min: 1, max: 20_000 }) }),
);

interface RegistryItem {
  readonly token: string;
  readonly scanUntilMs: number;
}

/**
 * `graceMs`: how long after a promise ends the scheduler still reads the partition before it may
 * deregister (both its own decision and the registry's condition on the delete). G is right.
 */
function runModel(actions: readonly ActionValue[], graceMs = G) {
  let nowMs = 1_000_000;
  let seq = 0;
  const tasks = new Map<string, ModelTask>();
  const queue: { taskId: string; receives: number }[] = [];
  /** Every version of each registry item, latest last (undefined: deleted). */
  const registry = new Map<string, (RegistryItem | undefined)[]>();
  const windows = new IntakeWindows({
    windowSize: () => 3,
    bufferSize: 8,
    indexLagMs: G,
    promiseMs: H,
    promiseGraceMs: graceMs,
    promiseRereadMs: 1_000,
  });
  const maxReceives = { value: 0 };
  const counts = { announced: 0, skipped: 0 };
  /** Per API container, the promises it read and trusts while they last. */
  const caches = [new Map<string, number>(), new Map<string, number>()];
  const regKey = (tenantId: string, tier: PriorityTier) => `${tenantId}#${tier}`;
  const current = (key: string) => registry.get(key)?.at(-1);
  const write = (key: string, item: RegistryItem | undefined) => {
    const versions = registry.get(key) ?? [];
    versions.push(item);
    registry.set(key, versions);
  };

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
        // A fresh token; the promise the item holds (or this scheduler knows) is kept, never lowered.
        const key = regKey(task.tenantId, task.tier);
        const scanUntilMs = Math.max(current(key)?.scanUntilMs ?? 0, windows.scanUntilOf(task.tenantId, task.tier));
        const item = { token: `tok-${seq++}`, scanUntilMs };
        write(key, item);
        windows.registration(task.tenantId, task.tier, item.token, item.scanUntilMs);
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
      const item = current(regKey(tenantId, tier));
      // The registry's delete is conditional on the token and on the promise having ended.
      const deleted = item?.token === token && item.scanUntilMs + graceMs <= nowMs;
      if (deleted) write(regKey(tenantId, tier), undefined);
      windows.deregistered(tenantId, tier, deleted, nowMs);
    }
    for (const { tenantId, tier, token, scanUntilMs } of windows.promisesDue(nowMs)) {
      // Conditional on the token and on not lowering the stored promise; refused: what is stored.
      const key = regKey(tenantId, tier);
      const item = current(key);
      if (item?.token === token && item.scanUntilMs <= scanUntilMs) {
        write(key, { token, scanUntilMs });
        windows.promised(tenantId, tier, { token, scanUntilMs });
      } else {
        windows.promised(tenantId, tier, item);
      }
    }
  };
  /**
   * The submit path: the task is written, then the announcement is skipped while a promise
   * (cached, or read eventually consistently: possibly the version before the latest) holds.
   */
  const submitted = (task: ModelTask, container: number, staleRead: boolean) => {
    const key = regKey(task.tenantId, task.tier);
    const cache = caches[container]!;
    let scanUntilMs = cache.get(key) ?? 0;
    if (nowMs >= scanUntilMs - MARGIN) {
      const versions = registry.get(key) ?? [];
      const read = staleRead && versions.length > 1 ? versions.at(-2) : versions.at(-1);
      scanUntilMs = read?.scanUntilMs ?? 0;
      cache.set(key, scanUntilMs);
    }
    if (nowMs < scanUntilMs - MARGIN) {
      counts.skipped++;
      return;
    }
    counts.announced++;
    announce(task);
  };
  const submit = (tenantId: string, tier: PriorityTier, delayMs: number, lagMs: number) => {
    const task: ModelTask = {
      taskId: `t${seq++}`,
      tenantId,
      tier,
      state: 'QUEUED',
      fence: 0,
      runAtMs: nowMs + delayMs,
      indexed: [],
    };
    task.indexed.push({ state: 'QUEUED', fence: 0, runAtMs: task.runAtMs, atMs: nowMs + lagMs });
    tasks.set(task.taskId, task);
    return task;
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
        const task = submit(`tenant${action.tenant}`, action.tier, action.delayMs, action.lagMs);
        submitted(task, action.container, action.staleRead);
        break;
      }
      case 'flood':
        for (let i = 0; i < action.count; i++) {
          submitted(submit('tenant0', 'normal', 0, action.lagMs), action.container, false);
        }
        break;
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
  const registered = [...registry.values()].filter((versions) => versions.at(-1) !== undefined).length;
  return { tasks, registered, windows, maxReceives: maxReceives.value, counts };
}

type ActionValue = typeof actionArb extends fc.Arbitrary<infer T> ? T : never;

const modelProperty = (graceMs: number) =>
  fc.property(fc.array(actionArb, { maxLength: 120, size: 'max' }), (actions) => {
    const { tasks, registered, windows, maxReceives } = runModel(actions, graceMs);
    const stranded = [...tasks.values()].filter((task) => task.state === 'QUEUED').map((task) => task.taskId);
    expect(stranded, 'stranded').toEqual([]);
    expect(maxReceives).toBeLessThanOrEqual(1);
    expect(registered).toBe(0);
    expect(windows.activeCount).toBe(0);
  });

describe('IntakeWindows against a lagging index (property)', () => {
  it('strands no task, receives each announcement once, and ends with nothing registered', () => {
    fc.assert(modelProperty(G), { numRuns: 500 });
  });

  it('skips announcements under a promise (the model exercises the promise)', () => {
    // A flood into one tenant-tier, then time for the scheduler to see its backlog and promise.
    const flood = { kind: 'flood', count: 12, lagMs: 0, container: 0 } as const;
    const { counts, tasks } = runModel([
      flood,
      { kind: 'receive', count: 10 },
      { kind: 'read' },
      { kind: 'receive', count: 10 },
      { kind: 'read' },
      flood,
      { kind: 'tick', ms: 1_000 },
      flood,
    ]);
    expect(counts).toEqual({ announced: 12, skipped: 24 });
    expect([...tasks.values()].filter((task) => task.state === 'QUEUED')).toEqual([]);
  });

  it('finds a task written just before the promise ends and indexed late; deregistering at scanUntilMs strands it', () => {
    const actions: ActionValue[] = [
      { kind: 'flood', count: 6, lagMs: 0, container: 0 },
      { kind: 'receive', count: 10 },
      { kind: 'read' }, // Backlogged: promised until now + H.
      { kind: 'dispatch', count: 5 },
      { kind: 'read' },
      { kind: 'dispatch', count: 5 }, // The backlog is gone; the promise still has 30 s to run.
      { kind: 'tick', ms: 20_000 },
      // Skips its announcement (10 s of promise left); the index shows it 14 s later.
      { kind: 'submit', tenant: 0, tier: 'normal', delayMs: 0, lagMs: 14_000, container: 0, staleRead: false },
    ];
    const queued = (graceMs: number) =>
      [...runModel(actions, graceMs).tasks.values()].filter((task) => task.state === 'QUEUED').length;
    expect(queued(G)).toBe(0);
    expect(queued(0)).toBe(1);
  });

  it('fails when the scheduler deregisters before scanUntilMs + G (a task written under the promise, not yet indexed, is stranded)', () => {
    // The same property and generator, with the scheduler deregistering as soon as the promise
    // ends: fast-check finds a stranded task (seed fixed so the run is the same every time; with
    // this generator about 1 run in 250 hits the interleaving).
    const result = fc.check(modelProperty(0), { numRuns: 1_000, seed: 2, endOnFailure: true });
    expect(result.failed).toBe(true);
    expect(String(result.errorInstance)).toContain('stranded');
  });
});
