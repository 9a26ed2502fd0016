/**
 * Issue 15 item 7, checked through the API (the explanation itself lives in core/policy and
 * belongs to the policy work): a task the scheduler does not hold yet (as during recovery,
 * waiting for the orphan sweep) with no higher-tier work waiting is not told that higher tiers
 * are ahead.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiRouter } from '../../runtime/api/router.ts';
import type { SchedulerSnapshot } from '../../runtime/core/scheduler-snapshot.ts';
import { apiEvent, jsonOf } from '../helpers/api-events.ts';
import { submitTask } from '../helpers/factories.ts';
import { startTestServices, type TestServices } from '../helpers/services.ts';

let services: TestServices;

beforeAll(async () => {
  services = await startTestServices();
});
afterAll(async () => {
  await services.stop();
});

describe('Wait explanation with nothing of a higher tier waiting', () => {
  it('does not say higher tiers are ahead', async () => {
    // Prepare: a fresh scheduler's snapshot (holds nothing, pools free) and a normal task.
    const snapshot: SchedulerSnapshot = {
      at: services.now().toISOString(),
      policy: services.config.policy,
      pools: {
        lambda: { used: 0, capacity: services.config.pools.lambda.concurrency },
        fargate: { vcpuUsed: 0, vcpu: 16, memoryMiBUsed: 0, memoryMiB: 32_768 },
      },
      tiers: {
        critical: { waiting: 0, oldestWaitSeconds: 0 },
        high: { waiting: 0, oldestWaitSeconds: 0 },
        normal: { waiting: 0, oldestWaitSeconds: 0 },
        low: { waiting: 0, oldestWaitSeconds: 0 },
      },
      tenants: {},
      dispatchRate: 0,
    };
    await services.control.putSnapshot(snapshot);
    const task = await submitTask(services, { tenantId: 'recovering' });

    // Act
    const result = await createApiRouter(services)(apiEvent({ path: `/v1/tasks/${task.taskId}` }));

    // Assess
    const { wait } = jsonOf(result) as { wait: { reason: string; message: string } };
    expect(wait.reason).not.toBe('priority');
    expect(wait.message).not.toMatch(/higher tier/i);
  });
});
