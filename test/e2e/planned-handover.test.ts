/**
 * The local runtime restarting its scheduler on a timer (SCHEDULER_FAULTS schedulerRestartSeconds,
 * as the Lambda hands over at its time limit on AWS) publishes the plan as the Lambda does, so the
 * API counts those handovers and only those (runtime/app/wait.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { consoleLogger } from '../../local/console-logger.ts';
import { type LocalRuntime, startLocalRuntime } from '../../local/runtime.ts';
import { parseConfig } from '../../runtime/core/config.ts';
import type { SchedulerSnapshot } from '../../runtime/core/scheduler-snapshot.ts';

let runtime: LocalRuntime;

beforeAll(async () => {
  runtime = await startLocalRuntime({
    config: parseConfig({ pools: { lambda: { concurrency: 2 }, fargate: { vcpu: 1, memoryMiB: 2048 } } }),
    summaryEverySeconds: 0,
    logger: consoleLogger({ quiet: true }),
    faults: {
      seed: 1,
      lostResponseRate: 0,
      throttleRate: 0,
      duplicateDeliveryRate: 0,
      indexLagMs: 0,
      schedulerRestartSeconds: 6,
    },
  });
});
afterAll(async () => {
  await runtime?.stop();
});

describe('Local runtime: a scheduler restarted on a timer', () => {
  it("publishes its planned handover in the snapshot: no later than its restart, each run's length", async () => {
    // Act: work keeps the scheduler from stopping idle; wait for a snapshot with a plan
    await runtime.services.tasks.submit({ tenantId: 't', type: 'demo.sleep', payload: { ms: 3000 } });
    let snapshot: SchedulerSnapshot | undefined;
    const deadline = Date.now() + 20_000;
    while (!snapshot?.rotation?.handover) {
      if (Date.now() > deadline) throw new Error('no snapshot with a planned handover within 20 s');
      await new Promise((resolve) => setTimeout(resolve, 100));
      snapshot = await runtime.services.control.getSnapshot<SchedulerSnapshot>();
    }
    // Assess
    expect(snapshot.rotation?.handover?.everySeconds).toBe(6);
    expect(snapshot.rotation?.handover?.inSeconds).toBeLessThanOrEqual(6);
  }, 30_000);
});
