import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startScheduleRunner } from '../../local/schedule-runner.ts';
import { startTestServices, type TestServices } from '../helpers/services.ts';

let services: TestServices;
beforeAll(async () => {
  services = await startTestServices();
});
afterAll(async () => {
  await services.stop();
});

describe('Function: startScheduleRunner', () => {
  it('submits one task per firing through the task service', async () => {
    // Prepare: a clock 300 ms before the next minute boundary, so the every-minute schedule fires now.
    const realNow = Date.now();
    const boundary = Math.ceil(realNow / 60_000) * 60_000 + 60_000;
    const offset = boundary - 300 - realNow;
    const now = () => new Date(Date.now() + offset);
    const logs: string[] = [];
    const runner = startScheduleRunner({
      schedules: [
        {
          name: 'every-minute',
          cron: 'cron(* * * * ? *)',
          timezone: 'UTC',
          enabled: true,
          task: { tenantId: 'sched', type: 'demo.echo', payload: { at: '{{date}}' }, priority: 'high' },
        },
      ],
      tasks: services.tasks,
      logger: { info: (m) => logs.push(m), warn: (m) => logs.push(m), error: (m) => logs.push(m) },
      now,
    });

    // Act
    expect(runner.nextFirings()['every-minute']).toBe(new Date(boundary).toISOString());
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    runner.stop();

    // Assess
    const { items } = await services.tasks.list({ tenantId: 'sched', limit: 10 });
    expect(items).toHaveLength(1);
    expect(items[0]).toMatchObject({
      priority: 'high',
      idempotencyKey: `schedule:every-minute:${new Date(boundary).toISOString().slice(0, 16)}`,
      payload: { at: new Date(boundary).toISOString().slice(0, 10) },
    });
    expect(logs).toContain('schedule every-minute fired');
  });
});
