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

  it('retries a firing whose submit failed for want of the store, as EventBridge retries its target: one task', async () => {
    // Before: the error was logged and the firing was lost (a nightly job skipped for a blip).
    const realNow = Date.now();
    const boundary = Math.ceil(realNow / 60_000) * 60_000 + 60_000;
    const offset = boundary - 300 - realNow;
    let calls = 0;
    const flaky = {
      submit: (async (input) => {
        calls += 1;
        if (calls <= 2) throw Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:8000'), { name: 'TimeoutError' });
        return services.tasks.submit(input);
      }) as TestServices['tasks']['submit'],
    };
    const logs: string[] = [];
    const runner = startScheduleRunner({
      schedules: [
        {
          name: 'flaky-minute',
          cron: 'cron(* * * * ? *)',
          timezone: 'UTC',
          enabled: true,
          task: { tenantId: 'sched-retry', type: 'demo.echo', payload: {}, priority: 'normal' },
        },
      ],
      tasks: flaky as unknown as TestServices['tasks'],
      logger: { info: (m) => logs.push(m), warn: (m) => logs.push(m), error: (m) => logs.push(m) },
      now: () => new Date(Date.now() + offset),
      retryDelayMs: () => 50,
    });

    // Act
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    runner.stop();

    // Assess
    const { items } = await services.tasks.list({ tenantId: 'sched-retry', limit: 10 });
    expect(calls).toBe(3);
    expect(items).toHaveLength(1);
    expect(logs).toContain('schedule flaky-minute fired');
  });

  it('does not retry a firing its task refuses (a payload the type rejects): it logs why, once', async () => {
    const realNow = Date.now();
    const boundary = Math.ceil(realNow / 60_000) * 60_000 + 60_000;
    const offset = boundary - 300 - realNow;
    let calls = 0;
    const counting = {
      submit: (async (input) => {
        calls += 1;
        return services.tasks.submit(input);
      }) as TestServices['tasks']['submit'],
    };
    const logs: string[] = [];
    const runner = startScheduleRunner({
      schedules: [
        {
          name: 'bad-minute',
          cron: 'cron(* * * * ? *)',
          timezone: 'UTC',
          enabled: true,
          task: { tenantId: 'sched-bad', type: 'demo.sleep', payload: { ms: 'soon' }, priority: 'normal' },
        },
      ],
      tasks: counting as unknown as TestServices['tasks'],
      logger: { info: (m) => logs.push(m), warn: (m) => logs.push(m), error: (m) => logs.push(m) },
      now: () => new Date(Date.now() + offset),
      retryDelayMs: () => 50,
    });
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    runner.stop();
    expect(calls).toBe(1);
    expect(logs).toContain('schedule bad-minute failed to submit');
  });
});
