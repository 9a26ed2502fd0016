/**
 * Issue 27, done when: with 3,000 of a tenant's tasks queued, `/v1/status` (and so the dashboard
 * and `tasks watch`, which draw it) show about 3,000 for it, not the few the scheduler holds in
 * its intake window; and a tenant whose work just finished stays in view. Fails on the code
 * before: `tenants[].queued` was the window (a handful).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { plainStyle } from '../../client/cli/format.ts';
import { renderStatus } from '../../client/cli/watch.ts';
import { buildStatus } from '../../runtime/api/status.ts';
import { newTaskId } from '../../runtime/app/task-service.ts';
import { createTask } from '../../runtime/core/lifecycle.ts';
import type { SchedulerSnapshot } from '../../runtime/core/scheduler-snapshot.ts';
import { BACKLOG_COUNT_CAP, countIntervalMs } from '../../runtime/scheduler/backlog.ts';
import { Scheduler } from '../../runtime/scheduler/scheduler.ts';
import { taskSpec } from '../helpers/factories.ts';
import { startTestServices, type TestServices } from '../helpers/services.ts';

let services: TestServices;

beforeAll(async () => {
  services = await startTestServices({
    config: { tenants: { flood: { weight: 1, maxConcurrency: 2 } } },
  });
});
afterAll(async () => {
  await services.stop();
});

const everyone = async () => true;

describe('The real backlog in the views', () => {
  it('shows about 3,000 for a tenant with 3,000 queued, in /v1/status and tasks watch', async () => {
    // Prepare: 3,000 queued tasks (written directly: the submits' announcements are not the point)
    const now = new Date();
    const ids = Array.from({ length: 3000 }, () => newTaskId());
    for (let i = 0; i < ids.length; i += 50) {
      await Promise.all(
        ids.slice(i, i + 50).map((id) => services.store.create(createTask(id, taskSpec({ tenantId: 'flood' }), now))),
      );
    }
    await services.tasks.submit({ tenantId: 'flood', type: 'demo.echo' });
    const scheduler = new Scheduler({
      store: services.store,
      control: services.control,
      queues: services.queues,
      config: services.config,
    });
    await scheduler.resume();

    // Act: a few ticks (announcement, window read, dispatches up to the quota, the paced count)
    for (let tick = 0; tick < 4; tick++) await scheduler.tick();
    await services.control.putSnapshot(scheduler.snapshot());
    const status = await buildStatus(services, { recent: 0, mayActFor: everyone });

    // Assess
    const flood = status.tenants.find((tenant) => tenant.tenantId === 'flood');
    expect(scheduler.heldCount).toBeLessThan(50);
    expect(flood?.queued).toBeGreaterThanOrEqual(2990);
    expect(flood?.queued).toBeLessThanOrEqual(3001);
    expect(flood?.queuedExact).toBe(true);
    const normal = status.tiers.find((tier) => tier.tier === 'normal');
    expect(normal?.waiting).toBe(flood?.queued);
    expect(normal?.held).toBeLessThan(50);
    const frame = renderStatus(status, { endpoint: 'http://local', style: plainStyle });
    expect(frame).toMatch(new RegExp(`^normal\\s+${normal?.waiting}\\s+${normal?.held}\\s`, 'm'));
    expect(frame).toMatch(new RegExp(`^flood\\s.*\\s${flood?.queued}\\s`, 'm'));
  }, 120_000);

  it('keeps a tenant whose tasks finished in view, with what finished, across a scheduler restart', async () => {
    // Prepare
    const first = new Scheduler({
      store: services.store,
      control: services.control,
      queues: services.queues,
      config: services.config,
    });
    await first.resume();
    await services.queues.reportCompletions([]);
    for (let tick = 0; tick < 3; tick++) await first.tick();
    const dispatchedIds = (await services.store.list({ tenantId: 'flood', state: 'DISPATCHED', limit: 10 })).items;
    await services.queues.reportCompletions(
      dispatchedIds.map((task) => ({
        taskId: task.taskId,
        fence: task.fence,
        tenantId: 'flood',
        state: 'SUCCEEDED' as const,
      })),
    );
    await first.tick();
    await services.control.putSnapshot(first.snapshot());

    // Act: a new scheduler starts from the stored snapshot
    const second = new Scheduler({
      store: services.store,
      control: services.control,
      queues: services.queues,
      config: services.config,
    });
    await second.resume();
    const view = second.snapshot().recentlyFinished;

    // Assess
    expect(dispatchedIds.length).toBeGreaterThan(0);
    expect(view?.tenants.flood?.succeeded).toBe(dispatchedIds.length);
    expect(view?.windowSeconds).toBe(900);
  });

  it('counts big backlogs less often, up to the cap', () => {
    expect(countIntervalMs(10)).toBe(15_000);
    expect(countIntervalMs(3000)).toBe(30_000);
    expect(countIntervalMs(BACKLOG_COUNT_CAP)).toBe(100_000);
    expect(countIntervalMs(10 * BACKLOG_COUNT_CAP)).toBe(120_000);
    const snapshot: Partial<SchedulerSnapshot> = {};
    expect(snapshot.backlog).toBeUndefined();
  });
});
