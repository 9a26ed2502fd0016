/**
 * `PUT /v1/task-types/{type}` as a user meets it: the answer's parked count is the one `GET
 * /v1/task-types` shows, and a type the deployment does not know (a typo) is refused rather than
 * "paused" while the real type keeps running.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ApiRouter, createApiRouter } from '../../runtime/api/router.ts';
import type { SchedulerSnapshot } from '../../runtime/core/scheduler-snapshot.ts';
import { apiEvent, jsonOf } from '../helpers/api-events.ts';
import { snapshotWrites, startTestServices, type TestServices } from '../helpers/services.ts';

let services: TestServices;
let api: ApiRouter;

beforeAll(async () => {
  services = await startTestServices();
  api = createApiRouter(services);
});
afterAll(async () => {
  await services.stop();
});

const put = (type: string, body: unknown) =>
  api(
    apiEvent({
      method: 'PUT',
      path: `/v1/task-types/${type}`,
      body: JSON.stringify(body),
      headers: { 'content-type': 'application/json' },
    }),
  );

interface TypeView {
  type: string;
  paused: boolean;
  counts: { parked: number };
}

describe('Route: PUT /v1/task-types/{type}', () => {
  it("answers the parked count of the scheduler's snapshot, as GET /v1/task-types does", async () => {
    // Prepare: the scheduler holds 3 demo.echo tasks since the type was paused.
    expect((await put('demo.echo', { paused: true })).statusCode).toBe(200);
    const snapshot: SchedulerSnapshot = {
      at: new Date().toISOString(),
      policy: 'fair-share',
      pools: {
        lambda: { used: 0, capacity: 50 },
        fargate: { vcpuUsed: 0, vcpu: 16, memoryMiBUsed: 0, memoryMiB: 32768 },
      },
      tiers: {
        critical: { waiting: 0, oldestWaitSeconds: 0 },
        high: { waiting: 0, oldestWaitSeconds: 0 },
        normal: { waiting: 3, oldestWaitSeconds: 4 },
        low: { waiting: 0, oldestWaitSeconds: 0 },
      },
      tenants: {},
      dispatchRate: 0,
      parkedByType: { 'demo.echo': 3 },
    };
    await services.control.putSnapshot(snapshot);

    // Act: pause it again (a repeat of the same command).
    const answered = jsonOf(await put('demo.echo', { paused: true })) as TypeView;
    const listed = (jsonOf(await api(apiEvent({ path: '/v1/task-types' }))) as { items: TypeView[] }).items.find(
      (type) => type.type === 'demo.echo',
    );

    // Assess
    expect(listed?.counts.parked).toBe(3);
    expect(answered.counts).toEqual(listed?.counts);
    await put('demo.echo', { paused: false });
  });

  it('refuses to pause a type no task module defines with 400 unknown_task_type, writing nothing', async () => {
    // Prepare
    const before = await snapshotWrites(services);

    // Act
    const result = await put('demo.ech0', { paused: true });

    // Assess
    expect(result.statusCode).toBe(400);
    expect(jsonOf(result)).toMatchObject({
      error: {
        code: 'unknown_task_type',
        details: { type: 'demo.ech0', known: expect.arrayContaining(['demo.echo']) },
      },
    });
    expect(await snapshotWrites(services)).toEqual(before);
    const listed = (jsonOf(await api(apiEvent({ path: '/v1/task-types' }))) as { items: TypeView[] }).items;
    expect(listed.map((type) => type.type)).not.toContain('demo.ech0');
  });

  it('still lifts a pause stored for a type no module defines any more', async () => {
    // Prepare: a pause stored for a type since removed from the task modules.
    await services.control.putTaskType('retired.type', { paused: true }, new Date());

    // Act
    const result = await put('retired.type', { paused: false });

    // Assess
    expect(result.statusCode).toBe(200);
    expect(jsonOf(result)).toMatchObject({ type: 'retired.type', paused: false });
  });

  it('forgets a lifted pause of a type no module defines: GET /v1/task-types lists it no more', async () => {
    // Prepare: a pause stored for a typo before such pauses were refused, and one for a
    // retired type lifted earlier (stored unpaused).
    await services.control.putTaskType('nope.type', { paused: true }, new Date());
    await services.control.putTaskType('gone.type', { paused: false }, new Date());
    const names = async () =>
      (jsonOf(await api(apiEvent({ path: '/v1/task-types' }))) as { items: TypeView[] }).items.map((t) => t.type);
    expect(await names()).toContain('nope.type');

    // Act
    const lifted = await put('nope.type', { paused: false });

    // Assess: lifted, then gone from the list, as is the unpaused record; the known types stay.
    expect(lifted.statusCode).toBe(200);
    expect(jsonOf(lifted)).toMatchObject({ type: 'nope.type', paused: false });
    const after = await names();
    expect(after).not.toContain('nope.type');
    expect(after).not.toContain('gone.type');
    expect(after).toContain('demo.echo');
    expect(await services.control.getTaskType('nope.type')).toBeUndefined();
    // Lifting it again is a 400 like any unknown type: nothing is stored for it.
    expect((await put('nope.type', { paused: false })).statusCode).toBe(400);
  });
});
