import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { SchedulerSnapshot } from '../../runtime/core/scheduler-snapshot.ts';
import { Scheduler } from '../../runtime/scheduler/scheduler.ts';
import {
  LAMBDA_SAFETY_MARGIN_MS,
  lambdaInvocationTiming,
  runSchedulerLoop,
  SCHEDULER_LEASE,
} from '../../runtime/scheduler/scheduler-loop.ts';
import { startTestServices, type TestServices } from '../helpers/services.ts';

let services: TestServices;
// Fresh emulators per test: whether a lease item exists is the point.
beforeEach(async () => {
  services = await startTestServices();
});
afterEach(async () => {
  await services.stop();
});

const newScheduler = () =>
  new Scheduler({ store: services.store, control: services.control, queues: services.queues, config: services.config });

describe('Function: runSchedulerLoop', () => {
  it('resumes no sooner than the index settle time after its predecessor handed back', async () => {
    // Prepare: a predecessor held the lease and has just released it.
    const previous = await services.control.acquireLease(SCHEDULER_LEASE, 'previous', Date.now(), 30_000);
    const releasedAtMs = Date.now();
    await services.control.releaseLease(previous!, releasedAtMs);
    const stop = new AbortController();
    let resumedAtMs = 0;
    const events: string[] = [];

    // Act
    await runSchedulerLoop({
      control: services.control,
      signal: stop.signal,
      ownerId: 'next',
      waitSeconds: 0,
      indexSettleMs: 600,
      onLease: (event, lease) => events.push(`${event}:${lease.token}`),
      createScheduler: () => {
        resumedAtMs = Date.now();
        return newScheduler();
      },
      onTick: () => stop.abort(),
    });

    // Assess: the successor took token 2 at once but built its view only after the settle time.
    expect(events).toEqual(['acquired:2', 'released:2']);
    expect(resumedAtMs - releasedAtMs).toBeGreaterThanOrEqual(590);
  });

  it('says in its snapshot when it took over from a predecessor, and not when it had none (the wait bound waits for its intake)', async () => {
    const run = async (leaseName: string) => {
      const stop = new AbortController();
      let scheduler: Scheduler | undefined;
      await runSchedulerLoop({
        control: services.control,
        signal: stop.signal,
        leaseName,
        waitSeconds: 0,
        indexSettleMs: 0,
        createScheduler: () => {
          scheduler = newScheduler();
          return scheduler;
        },
        onTick: () => stop.abort(),
      });
      return scheduler!.snapshot().rotation;
    };
    // A lease no one held: nothing to take in again.
    expect((await run('lease#fresh-holder'))?.resumedAt).toBeUndefined();
    // The same lease again, now handed back by that holder: a takeover.
    expect((await run('lease#fresh-holder'))?.resumedAt).toEqual(expect.any(String));
  });

  it("publishes no snapshot after taking over until it has taken the waiting work in again: its predecessor's stands", async () => {
    const { ControlStore } = await import('../../runtime/adapters/control-store.ts');
    const stored = () =>
      new ControlStore(services.clients.documents, services.emulators.tables.control!).getSnapshot<{ at: string }>();
    const oneTick = async () => {
      const stop = new AbortController();
      await runSchedulerLoop({
        control: services.control,
        signal: stop.signal,
        waitSeconds: 0,
        indexSettleMs: 0,
        createScheduler: newScheduler,
        onTick: () => stop.abort(),
      });
    };
    // A first holder publishes at its first tick.
    await oneTick();
    expect((await stored())?.at).toEqual(expect.any(String));
    // A predecessor's last snapshot, then a takeover: for its first 5 s the successor does not replace it.
    await services.control.putSnapshot({ at: 'the predecessor' });
    await oneTick();
    expect((await stored())?.at).toBe('the predecessor');
  });

  it('a first holder (no lease item yet) resumes at once', async () => {
    const stop = new AbortController();
    const startedMs = Date.now();
    let resumedAtMs = 0;
    await runSchedulerLoop({
      control: services.control,
      signal: stop.signal,
      ownerId: 'first',
      waitSeconds: 0,
      indexSettleMs: 60_000,
      createScheduler: () => {
        resumedAtMs = Date.now();
        return newScheduler();
      },
      onTick: () => stop.abort(),
    });
    // With a 60 s settle time, only skipping the wait lets this finish within the test timeout.
    expect(resumedAtMs).toBeGreaterThan(0);
    expect(resumedAtMs - startedMs).toBeLessThan(30_000);
  });
});

describe('Function: runSchedulerLoop, a Lambda invocation', () => {
  it("publishes when it will hand over, and how long an invocation runs, in its scheduler's snapshot", async () => {
    // Prepare: an invocation with 100 s left of its time limit
    const stop = new AbortController();
    const endsAtMs = Date.now() + 100_000;
    let scheduler: Scheduler | undefined;
    // Act
    await runSchedulerLoop({
      control: services.control,
      signal: stop.signal,
      ...lambdaInvocationTiming(() => endsAtMs - Date.now()),
      // No long polls: the test stops after the first tick.
      waitSeconds: 0,
      idleWaitSeconds: 0,
      createScheduler: () => {
        scheduler = newScheduler();
        return scheduler;
      },
      onTick: () => stop.abort(),
    });
    // Assess: it plans to stop at the margin before its end; an invocation runs 100 s less the margin
    const snapshot = scheduler!.snapshot();
    const handover = snapshot.rotation?.handover;
    const plannedAtMs = endsAtMs - LAMBDA_SAFETY_MARGIN_MS;
    expect(handover?.everySeconds).toBeGreaterThanOrEqual(84);
    expect(handover?.everySeconds).toBeLessThanOrEqual(85);
    const publishedAtMs = Date.parse(snapshot.at) + (handover?.inSeconds ?? Number.NaN) * 1000;
    // Rounded down to the second, never later than planned.
    expect(publishedAtMs).toBeLessThanOrEqual(plannedAtMs);
    expect(publishedAtMs).toBeGreaterThan(plannedAtMs - 2_000);
  });

  it('publishes an idle stop as its handover: the next task needs a wake', async () => {
    // Prepare: an invocation with 100 s left that stops after 200 ms with nothing to do
    const endsAtMs = Date.now() + 100_000;
    // Act
    const end = await runSchedulerLoop({
      control: services.control,
      signal: new AbortController().signal,
      ...lambdaInvocationTiming(() => endsAtMs - Date.now()),
      waitSeconds: 0,
      idleWaitSeconds: 0,
      idleStop: { afterMs: 200, graceMs: 1_500, hasWork: async () => false },
      createScheduler: newScheduler,
    });
    // Assess: its last snapshot plans the handover at the stop, not at the Lambda's end 85 s away
    expect(end).toBe('idle');
    const snapshot = await services.control.getSnapshot<SchedulerSnapshot>();
    expect(snapshot?.rotation?.handover?.inSeconds).toBeLessThanOrEqual(2);
    expect(snapshot?.rotation?.handover?.everySeconds).toBeGreaterThanOrEqual(84);
  });

  it('publishes no handover without a time limit (the long-lived service, the local runtime)', async () => {
    const stop = new AbortController();
    let scheduler: Scheduler | undefined;
    await runSchedulerLoop({
      control: services.control,
      signal: stop.signal,
      waitSeconds: 0,
      createScheduler: () => {
        scheduler = newScheduler();
        return scheduler;
      },
      onTick: () => stop.abort(),
    });
    expect(scheduler!.snapshot().rotation?.handover).toBeUndefined();
  });
});

describe('Function: runSchedulerLoop, stopping', () => {
  it('hands its signal to the tick: a stop during a tick dispatches nothing more (issue 28)', async () => {
    // Prepare: a task ready to go; the stop arrives while the tick runs (its long poll, on AWS or Ctrl-C).
    const { task } = await services.tasks.submit({ tenantId: 'acme', type: 'demo.echo', payload: {} });
    const stop = new AbortController();
    let ticks = 0;

    // Act
    await runSchedulerLoop({
      control: services.control,
      signal: stop.signal,
      waitSeconds: 0,
      indexSettleMs: 0,
      createScheduler: () => {
        const scheduler = newScheduler();
        const tick = scheduler.tick.bind(scheduler);
        scheduler.tick = (options) => {
          ticks++;
          stop.abort();
          return tick(options);
        };
        return scheduler;
      },
    });

    // Assess
    expect(ticks).toBe(1);
    expect((await services.store.get(task.taskId))?.state).toBe('QUEUED');
  });
});
