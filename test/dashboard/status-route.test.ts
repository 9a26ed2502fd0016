import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DASHBOARD_HTML } from '../../client/dashboard/page.ts';
import { dashboardResult, dashboardRoutes } from '../../client/dashboard/routes.ts';
import { createApiRouter } from '../../runtime/api/router.ts';
import { MAX_RECENT_TASKS, statusSchema } from '../../runtime/api/status.ts';
import { dispatch } from '../../runtime/core/lifecycle.ts';
import type { SchedulerSnapshot } from '../../runtime/core/scheduler-snapshot.ts';
import { apiEvent, jsonOf } from '../helpers/api-events.ts';
import { dispatchAsScheduler, runningTask, submitTask, succeededTask } from '../helpers/factories.ts';
import { startTestServices, type TestServices } from '../helpers/services.ts';

const NOW = new Date('2030-01-01T12:00:00.000Z');

let services: TestServices;

beforeAll(async () => {
  services = await startTestServices({
    config: { tenants: { configured: { weight: 1, maxConcurrency: 3 } } },
    now: () => NOW,
  });
});
afterAll(async () => {
  await services.stop();
});

function snapshot(): SchedulerSnapshot {
  return {
    at: new Date(NOW.getTime() - 1500).toISOString(),
    policy: 'fair-share',
    pools: {
      lambda: { used: 7, capacity: 50 },
      fargate: { vcpuUsed: 2, vcpu: 16, memoryMiBUsed: 4096, memoryMiB: 32768 },
    },
    tiers: {
      critical: { waiting: 0, oldestWaitSeconds: 0 },
      high: { waiting: 3, oldestWaitSeconds: 12.345 },
      normal: { waiting: 1, oldestWaitSeconds: 2 },
      low: { waiting: 0, oldestWaitSeconds: 0 },
    },
    tenants: {
      busy: { running: 5, queued: 9, weight: 1, maxConcurrency: 5, dominantShare: 0.1, entitlement: 0.5 },
      calm: { running: 2, queued: 0, weight: 1, maxConcurrency: 10, dominantShare: 0.04, entitlement: 0.5 },
    },
    dispatchRate: 1.5,
  };
}

describe('Route: GET /v1/status', () => {
  it('answers before any snapshot with zero usage, configured capacity and scheduler null', async () => {
    // Act
    const result = await createApiRouter(services)(apiEvent({ path: '/v1/status' }));

    // Assess
    expect(result.statusCode).toBe(200);
    const status = statusSchema.parse(jsonOf(result));
    expect(status.scheduler).toBeNull();
    expect(status.pools).toEqual({
      lambda: { used: 0, capacity: 50 },
      fargate: { vcpuUsed: 0, vcpu: 16, memoryMiBUsed: 0, memoryMiB: 32768 },
    });
    expect(status.tiers.every((tier) => tier.waiting === 0)).toBe(true);
    expect(status.tenants).toEqual([
      {
        tenantId: 'configured',
        running: 0,
        queued: 0,
        queuedExact: true,
        recentlyFinished: null,
        weight: 1,
        maxConcurrency: 3,
        dominantShare: 0,
        entitlement: 0,
        paused: false,
        rateLimited: false,
        parked: 0,
      },
    ]);
    expect(status.pausedTypes).toEqual([]);
  });

  it('shows the snapshot: tiers in order, pools, busiest tenants first, then configured and asked-for ones', async () => {
    // Prepare
    await services.control.putSnapshot(snapshot());
    await services.tasks.submit({ tenantId: 'busy', type: 'demo.echo', delaySeconds: 60 });
    await services.tasks.submit({ tenantId: 'quiet', type: 'demo.echo' });

    // Act
    const result = await createApiRouter(services)(apiEvent({ path: '/v1/status?tenants=quiet&recent=3' }));

    // Assess
    expect(result.statusCode).toBe(200);
    const status = statusSchema.parse(jsonOf(result));
    expect(status).toMatchObject({
      at: NOW.toISOString(),
      policy: 'fair-share',
      agingSeconds: 300,
      scheduler: { ageSeconds: 1.5, dispatchRate: 1.5 },
      pools: snapshot().pools,
    });
    expect(status.tiers).toEqual([
      { tier: 'critical', waiting: 0, waitingExact: true, held: 0, oldestWaitSeconds: 0 },
      { tier: 'high', waiting: 3, waitingExact: true, held: 3, oldestWaitSeconds: 12.3 },
      { tier: 'normal', waiting: 1, waitingExact: true, held: 1, oldestWaitSeconds: 2 },
      { tier: 'low', waiting: 0, waitingExact: true, held: 0, oldestWaitSeconds: 0 },
    ]);
    expect(status.tenants.map((tenant) => tenant.tenantId)).toEqual(['busy', 'calm', 'quiet', 'configured']);
    expect(status.tenants[0]).toEqual({
      tenantId: 'busy',
      ...snapshot().tenants.busy,
      queuedExact: true,
      recentlyFinished: null,
      paused: false,
      rateLimited: false,
      parked: 0,
    });
    expect(status.tenants[2]).toMatchObject({ tenantId: 'quiet', running: 0, queued: 1 });
    // Both were submitted at the same (fixed) instant, so find each by tenant.
    const quietTask = status.recentTasks.find((task) => task.tenantId === 'quiet');
    const busyTask = status.recentTasks.find((task) => task.tenantId === 'busy');
    expect(status.recentTasks).toHaveLength(2);
    // The snapshot names no higher-tier work ahead of it, so not "priority" (issue 12).
    expect(quietTask).toMatchObject({ tenantId: 'quiet', state: 'QUEUED', wait: { reason: 'queue' } });
    expect(busyTask).toMatchObject({ tenantId: 'busy', state: 'QUEUED', wait: { reason: 'delayed' } });
    expect(busyTask).not.toHaveProperty('version');
  });

  it("shows the scheduler's count of the real backlog per tenant and tier, capped and marked, and tenants whose work just finished (issue 27)", async () => {
    // Prepare: the scheduler holds 5 of backlog's 288, counted 10,000+ of heavy's, and idle finished 1,500
    await services.control.putSnapshot({
      ...snapshot(),
      tiers: { ...snapshot().tiers, normal: { waiting: 15, oldestWaitSeconds: 2 } },
      tenants: {
        backlog: { running: 5, queued: 5, weight: 1, maxConcurrency: 5, dominantShare: 0.1, entitlement: 0.5 },
        heavy: { running: 5, queued: 10, weight: 1, maxConcurrency: 5, dominantShare: 0.1, entitlement: 0.5 },
      },
      backlog: {
        backlog: { normal: { queued: 288, oldestWaitSeconds: 40, countedAt: NOW.toISOString() } },
        heavy: {
          normal: { queued: 10_000, capped: true, oldestWaitSeconds: 90, countedAt: NOW.toISOString() },
          low: { queued: 7, oldestWaitSeconds: 1 },
        },
      },
      recentlyFinished: {
        windowSeconds: 900,
        tenants: { idle: { succeeded: 1500, failed: 0, cancelled: 0, lastFinishedAt: NOW.toISOString() } },
      },
    });
    await succeededTask(services, { tenantId: 'idle' });

    // Act
    const status = statusSchema.parse(jsonOf(await createApiRouter(services)(apiEvent({ path: '/v1/status' }))));

    // Assess
    expect(status.tenants.find((t) => t.tenantId === 'backlog')).toMatchObject({ queued: 288, queuedExact: true });
    expect(status.tenants.find((t) => t.tenantId === 'heavy')).toMatchObject({ queued: 10_007, queuedExact: false });
    expect(status.tenants.find((t) => t.tenantId === 'idle')).toMatchObject({
      queued: 0,
      recentlyFinished: { succeeded: 1500, failed: 0, cancelled: 0 },
    });
    expect(status.recentTasks.some((task) => task.tenantId === 'idle' && task.state === 'SUCCEEDED')).toBe(true);
    expect(status.tiers.find((t) => t.tier === 'normal')).toEqual({
      tier: 'normal',
      waiting: 10_288,
      waitingExact: false,
      held: 15,
      oldestWaitSeconds: 90,
    });
    expect(status.tiers.find((t) => t.tier === 'low')).toMatchObject({ waiting: 7, waitingExact: true });
    await services.control.putSnapshot(snapshot());
  });

  it('counts a tenant the snapshot does not cover from the store: queued, dispatched and running', async () => {
    // Prepare: one task of each state for a tenant the scheduler snapshot does not list.
    const tenantId = 'quiet-leased';
    await runningTask(services, { tenantId });
    const dispatched = await submitTask(services, { tenantId });
    await dispatchAsScheduler(services.store, dispatched.taskId, NOW, 60);
    await submitTask(services, { tenantId });

    // Act
    const result = await createApiRouter(services)(apiEvent({ path: `/v1/status?tenants=${tenantId}&recent=0` }));

    // Assess
    const status = statusSchema.parse(jsonOf(result));
    expect(status.tenants.find((tenant) => tenant.tenantId === tenantId)).toMatchObject({ running: 2, queued: 1 });
  });

  it('shows a task held on its dependencies as waiting on them, naming them (issue 25)', async () => {
    // Prepare
    const tenantId = 'held-deps';
    const dependency = await runningTask(services, { tenantId });
    const { task } = await services.tasks.submit({
      tenantId,
      type: 'demo.echo',
      dependsOn: [dependency.taskId],
    });

    // Act
    const result = await createApiRouter(services)(apiEvent({ path: `/v1/status?tenants=${tenantId}&recent=5` }));

    // Assess
    const status = statusSchema.parse(jsonOf(result));
    const shown = status.recentTasks.find((recent) => recent.taskId === task.taskId);
    expect(shown).toMatchObject({ state: 'QUEUED', waitingOn: [dependency.taskId], wait: { reason: 'dependencies' } });
    expect(shown?.wait?.message).toContain(dependency.taskId);
  });

  it('shows a caller only the tenants it may act for (tiers and pools are aggregates)', async () => {
    // Prepare
    const api = createApiRouter(services, { authorize: (_event, tenantId) => tenantId === 'busy' });

    // Act
    const result = await api(apiEvent({ path: '/v1/status?tenants=quiet' }));

    // Assess
    const status = statusSchema.parse(jsonOf(result));
    expect(status.tenants.map((tenant) => tenant.tenantId)).toEqual(['busy']);
    expect(status.recentTasks.every((task) => task.tenantId === 'busy')).toBe(true);
    expect(status.tiers[1]?.waiting).toBe(3);
  });

  it('caps recent tasks and can leave them out', async () => {
    // Act
    const none = statusSchema.parse(jsonOf(await createApiRouter(services)(apiEvent({ path: '/v1/status?recent=0' }))));

    // Assess
    expect(none.recentTasks).toEqual([]);
    expect(MAX_RECENT_TASKS).toBeGreaterThan(0);
  });

  it.each([
    ['recent=99', 'recent'],
    ['recent=x', 'recent'],
    ['tenants=bad%20id', 'tenants'],
    ['verbose=1', 'verbose'],
  ])('refuses ?%s with 400 invalid_request naming %s', async (query, path) => {
    // Act
    const result = await createApiRouter(services)(apiEvent({ path: `/v1/status?${query}` }));

    // Assess
    expect(result.statusCode).toBe(400);
    expect(jsonOf(result)).toMatchObject({
      error: { code: 'invalid_request', details: { in: 'query', issues: [{ path }] } },
    });
  });

  it('is documented in the OpenAPI document', async () => {
    // Act
    const document = jsonOf(await createApiRouter(services)(apiEvent({ path: '/openapi.json' }))) as {
      paths: Record<string, Record<string, { operationId: string }>>;
      components: { schemas: Record<string, unknown> };
    };

    // Assess
    expect(document.paths['/v1/status']?.get?.operationId).toBe('getStatus');
    expect(document.components.schemas.Status).toBeDefined();
  });

  it('shows paused and rate-limited tenants, their parked tasks, and the paused task types (issue 26)', async () => {
    // Prepare
    await services.tasks.putTenant('limited', { weight: 1, maxConcurrency: 5, maxStartsPerSecond: 2, burst: 3 });
    await services.tasks.putTenant('stopped', { weight: 1, maxConcurrency: 5, paused: true }, 'ops');
    await services.tasks.putTaskType('demo.sleep', { paused: true }, 'ops');
    await services.control.putSnapshot({
      ...snapshot(),
      tenants: {
        limited: {
          running: 1,
          queued: 4,
          weight: 1,
          maxConcurrency: 5,
          dominantShare: 0.02,
          entitlement: 1,
          hold: 'rate',
          parked: 2,
        },
      },
      parkedByType: { 'demo.sleep': 2 },
    });

    // Act
    const result = await createApiRouter(services)(apiEvent({ path: '/v1/status?tenants=stopped' }));

    // Assess
    const status = statusSchema.parse(jsonOf(result));
    expect(status.tenants.find((t) => t.tenantId === 'limited')).toMatchObject({
      paused: false,
      maxStartsPerSecond: 2,
      burst: 3,
      rateLimited: true,
      parked: 2,
    });
    expect(status.tenants.find((t) => t.tenantId === 'stopped')).toMatchObject({ paused: true, rateLimited: false });
    expect(status.pausedTypes).toEqual([
      { type: 'demo.sleep', pausedBy: 'ops', pausedAt: NOW.toISOString(), parked: 2 },
    ]);
    await services.tasks.putTaskType('demo.sleep', { paused: false });
    await services.tasks.putTenant('stopped', { weight: 1, maxConcurrency: 5 });
  });
});

describe('Dashboard routes', () => {
  it('serve the page at GET and HEAD / and /index.html only', () => {
    expect(dashboardRoutes('GET', '/')).toBeTypeOf('function');
    expect(dashboardRoutes('HEAD', '/index.html')).toBeTypeOf('function');
    expect(dashboardRoutes('POST', '/')).toBeUndefined();
    expect(dashboardRoutes('GET', '/v1/status')).toBeUndefined();
  });

  it('is self-contained: no external assets, only relative API URLs', () => {
    expect(DASHBOARD_HTML).not.toMatch(/\b(src|href)=/);
    expect(DASHBOARD_HTML).not.toMatch(/https?:\/\//);
    expect(DASHBOARD_HTML).toContain("dir + 'v1/status");
  });

  it('has a Lambda result with a CSP allowing only its own inline script and style', () => {
    const result = dashboardResult();
    expect(result.statusCode).toBe(200);
    expect(result.headers?.['content-type']).toBe('text/html; charset=utf-8');
    expect(String(result.headers?.['content-security-policy'])).toMatch(
      /^default-src 'none'; script-src 'sha256-[A-Za-z0-9+/=]+'; style-src 'sha256-[A-Za-z0-9+/=]+'; connect-src 'self'/,
    );
  });
});
