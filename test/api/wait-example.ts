/**
 * The situation the OpenAPI document's Wait example describes: the code's answer to it must be
 * the example (openapi.test.ts), so the document never shows what the API cannot say.
 */
import { EXAMPLE_TASK } from '../../runtime/api/examples.ts';
import { parseConfig } from '../../runtime/core/config.ts';
import type { SchedulerSnapshot } from '../../runtime/core/scheduler-snapshot.ts';
import type { Task } from '../../runtime/core/task.ts';

export function exampleWaitFixture() {
  const config = parseConfig({});
  const task = {
    ...EXAMPLE_TASK,
    agingFrom: EXAMPLE_TASK.submittedAt,
    idempotencyKey: undefined,
    fence: 0,
    version: 1,
  } as unknown as Task;
  // Taken 6 s after the submit: the pool is full; 13 tenants wait in it, acme among them; the pool
  // freed at least 80 slots in every 10 s of the minute before; its scheduler hands over in 159 s.
  const snapshot: SchedulerSnapshot = {
    at: '2026-12-01T09:00:06.000Z',
    policy: 'fair-share',
    pools: {
      lambda: { used: 50, capacity: 50 },
      fargate: { vcpuUsed: 4, vcpu: 16, memoryMiBUsed: 8192, memoryMiB: 32_768 },
    },
    tiers: {
      critical: { waiting: 0, oldestWaitSeconds: 0 },
      high: { waiting: 3, oldestWaitSeconds: 40 },
      normal: { waiting: 180, oldestWaitSeconds: 95 },
      low: { waiting: 0, oldestWaitSeconds: 0 },
    },
    tenants: {
      acme: {
        running: 0,
        queued: 1,
        weight: 2,
        maxConcurrency: 20,
        dominantShare: 0,
        entitlement: 0.133,
        waitingTaskId: EXAMPLE_TASK.taskId,
      },
    },
    dispatchRate: 9.5,
    queue: {
      lambda: {
        leader: { taskId: 'tsk_0c1d', tenantId: 'globex', weightedShare: 0, effectiveRank: 2 },
        heldForTaskId: null,
      },
      fargate: { leader: null, heldForTaskId: null },
    },
    rotation: {
      lambda: {
        waiting: 13,
        joinedLastMinute: 4,
        freeBy: [
          [1, 1],
          [2, 3],
          [4, 6],
          [8, 11],
          [16, 19],
          [32, 38],
          [50, 52],
        ],
        reservedFor: null,
        freedPerSecond: 8,
      },
      fargate: { waiting: 0, joinedLastMinute: 0, freeBy: [[1, 240]], reservedFor: null },
      busyFor: {},
      complete: true,
      // The scheduler Lambda took over at 08:58:00 and hands over at 09:02:45 (5 minute timeout).
      handover: { inSeconds: 159, everySeconds: 285 },
    },
  };
  return {
    task,
    input: {
      config,
      tenant: { weight: 2, maxConcurrency: 20 },
      snapshot,
      now: new Date('2026-12-01T09:00:07.000Z'),
      facts: { waiting: 1 },
    },
  };
}
