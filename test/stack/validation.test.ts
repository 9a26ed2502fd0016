import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { App, Duration, Stack } from 'aws-cdk-lib';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as logs from 'aws-cdk-lib/aws-logs';
import { describe, expect, it } from 'vitest';
import { FargateWorkers } from '../../lib/fargate-workers.ts';
import { LambdaWorkers } from '../../lib/lambda-workers.ts';
import { Monitoring } from '../../lib/monitoring.ts';
import { NightlySchedules } from '../../lib/nightly-schedules.ts';
import { Redrive } from '../../lib/redrive.ts';
import { runtimeCode } from '../../lib/runtime-code.ts';
import { RuntimeFunction, type RuntimeSettings } from '../../lib/runtime-function.ts';
import { SchedulerLoop } from '../../lib/scheduler-loop.ts';
import { TaskApi } from '../../lib/task-api.ts';
import { TaskQueues } from '../../lib/task-queues.ts';
import { retentionDays, TaskSchedulerStack } from '../../lib/task-scheduler-stack.ts';
import { TaskTables } from '../../lib/task-tables.ts';
import { parseConfig, type ScheduleConfig } from '../../runtime/core/config.ts';
import { QUEUES, type QueueDefinition, workerQueue } from '../../runtime/infra/resources.ts';
import { cdkJsonContext, defaultConfigInput, projectFixture, REPO_ROOT, synthesize } from './helpers.ts';

/** A stack with the shared tables and queues, for constructing one construct at a time. */
function parts() {
  const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
  const stack = new Stack(app, 'Test');
  const tables = new TaskTables(stack, 'Tables');
  const queues = new TaskQueues(stack, 'Queues', { namePrefix: 'Test' });
  const runtime: RuntimeSettings = {
    code: runtimeCode({ projectRoot: projectFixture() }),
    environment: {},
    logRetention: logs.RetentionDays.ONE_WEEK,
  };
  return { stack, tables, queues, runtime };
}

const nightly: ScheduleConfig = {
  name: 'nightly',
  cron: 'cron(0 2 * * ? *)',
  timezone: 'UTC',
  enabled: true,
  task: { tenantId: 'finance', type: 'examples.payments-reconciliation', payload: {}, priority: 'normal' },
};

describe('Construct props are validated up front, with exact messages', () => {
  it('RuntimeFunction: timeout, memory, reserved concurrency', () => {
    const { stack, runtime } = parts();
    const base = {
      entry: runtime.code.handlerEntry('api'),
      projectRoot: runtime.code.projectRoot,
      description: 'test',
    };
    expect(() => new RuntimeFunction(stack, 'A', { ...base, timeout: Duration.seconds(901) })).toThrow(
      'RuntimeFunction A: timeout must be between 1 and 900 seconds, got 901',
    );
    expect(() => new RuntimeFunction(stack, 'B', { ...base, memorySize: 64 })).toThrow(
      'RuntimeFunction B: memorySize must be an integer from 128 to 10240 MiB, got 64',
    );
    expect(() => new RuntimeFunction(stack, 'C', { ...base, reservedConcurrentExecutions: 0 })).toThrow(
      'RuntimeFunction C: reservedConcurrentExecutions must be a positive integer, got 0',
    );
  });

  it('TaskQueues: required ids, receive count, dead-letter retention, name length', () => {
    const stack = new Stack(new App(), 'Test');
    const withoutCompletions = QUEUES.filter((queue) => queue.id !== 'completions');
    expect(() => new TaskQueues(stack, 'A', { namePrefix: 'T', definitions: withoutCompletions })).toThrow(
      'TaskQueues: definitions must include queue "completions"',
    );
    const lambdaQueue = workerQueue('lambda');
    const tweak = (deadLetter: Partial<NonNullable<QueueDefinition['deadLetter']>>): QueueDefinition[] =>
      QUEUES.map((queue) =>
        queue.id === lambdaQueue.id ? { ...queue, deadLetter: { ...queue.deadLetter!, ...deadLetter } } : queue,
      );
    expect(() => new TaskQueues(stack, 'B', { namePrefix: 'T', definitions: tweak({ maxReceiveCount: 1 }) })).toThrow(
      'Queue worker-lambda: maxReceiveCount must be an integer of at least 3, got 1',
    );
    expect(
      () => new TaskQueues(stack, 'C', { namePrefix: 'T', definitions: tweak({ retentionSeconds: 3600 }) }),
    ).toThrow(
      "Queue worker-lambda: dead-letter retention (3600 s) must be at least the queue's own (345600 s) and at most 1209600 s",
    );
    expect(() => new TaskQueues(stack, 'D', { namePrefix: 'x'.repeat(70) })).toThrow(
      `TaskQueues: queue name "${'x'.repeat(70)}-tier-critical" must be at most 80 letters, digits, hyphens or underscores; use a shorter name prefix (stack name)`,
    );
  });

  it('LambdaWorkers: queue visibility at least 6 × timeout, pool and batch sizes', () => {
    const { stack, tables, queues, runtime } = parts();
    const queue = queues.get('worker-lambda');
    const base = {
      runtime,
      tasksTable: tables.tasks,
      completionQueues: queues.completionQueues,
      tierQueues: queues.tiers,
      poolConcurrency: 10,
    };
    const shortVisibility = { ...queue, definition: { ...queue.definition, visibilityTimeoutSeconds: 600 } };
    expect(() => new LambdaWorkers(stack, 'A', { ...base, queue: shortVisibility })).toThrow(
      'LambdaWorkers: queue worker-lambda visibility timeout (600 s) must be at least 6 × the function timeout (6 × 900 s = 5400 s)',
    );
    expect(() => new LambdaWorkers(stack, 'B', { ...base, queue, poolConcurrency: 0 })).toThrow(
      'LambdaWorkers: poolConcurrency must be a positive integer, got 0',
    );
    expect(() => new LambdaWorkers(stack, 'C', { ...base, queue, batchSize: 11 })).toThrow(
      'LambdaWorkers: batchSize must be an integer from 1 to 10, got 11',
    );
  });

  it('Redrive: a drain ends before its dead letters reappear, and runs every 1 to 60 whole minutes', () => {
    const { stack, tables, queues, runtime } = parts();
    const base = {
      runtime,
      tasksTable: tables.tasks,
      workerQueues: queues.workers,
      tierQueues: queues.tiers,
      completionQueues: queues.completionQueues,
    };
    expect(() => new Redrive(stack, 'A', { ...base, timeout: Duration.seconds(120) })).toThrow(
      "Redrive: the timeout (120 s) must be shorter than a drained dead letter's visibility (120 s)",
    );
    expect(() => new Redrive(stack, 'B', { ...base, drainEvery: Duration.seconds(90) })).toThrow(
      'Redrive: drainEvery must be a whole number of minutes from 1 to 60, got 1.5',
    );
  });

  it('SchedulerLoop and TaskApi: timeout and throttling', () => {
    const { stack, tables, queues, runtime } = parts();
    expect(
      () =>
        new SchedulerLoop(stack, 'A', {
          runtime,
          tasksTable: tables.tasks,
          controlTable: tables.control,
          leasesTable: tables.leases,
          tierQueues: queues.tiers,
          workerQueues: queues.workers,
          completionQueues: queues.completionQueues,
          timeout: Duration.seconds(30),
        }),
    ).toThrow('SchedulerLoop: timeout must be from 60 seconds (the tick interval) to 900 seconds, got 30');
    const api = {
      runtime,
      tasksTable: tables.tasks,
      controlTable: tables.control,
      leasesTable: tables.leases,
      tierQueues: queues.tiers,
    };
    expect(() => new TaskApi(stack, 'B', { ...api, rateLimit: 0 })).toThrow(
      'TaskApi: rateLimit must be a positive number of requests per second, got 0',
    );
    expect(() => new TaskApi(stack, 'C', { ...api, burstLimit: 1.5 })).toThrow(
      'TaskApi: burstLimit must be a positive integer, got 1.5',
    );
  });

  it('NightlySchedules: cron shape, time zone, duplicates, retry policy', () => {
    const { stack, tables, queues, runtime } = parts();
    const base = { runtime, tasksTable: tables.tasks, controlTable: tables.control, tierQueues: queues.tiers };
    const create =
      (id: string, schedules: ScheduleConfig[], extra: object = {}) =>
      () =>
        new NightlySchedules(stack, id, { ...base, schedules, ...extra });
    expect(create('A', [{ ...nightly, cron: 'cron(0 2 * * *)' }])).toThrow(
      'Schedule "nightly": cron must have 6 fields (minutes hours day-of-month month day-of-week year), got "cron(0 2 * * *)"',
    );
    expect(create('B', [{ ...nightly, cron: 'cron(0 2 * * MON *)' }])).toThrow(
      'Schedule "nightly": cron must use "?" in day-of-month or day-of-week, got "cron(0 2 * * MON *)"',
    );
    expect(create('C', [{ ...nightly, timezone: 'Mars/Olympus' }])).toThrow(
      'Schedule "nightly": unknown time zone "Mars/Olympus"',
    );
    expect(create('D', [nightly, nightly])).toThrow('Schedule "nightly" is defined twice');
    expect(create('E', [nightly], { retryAttempts: 186 })).toThrow(
      'NightlySchedules: retryAttempts must be an integer from 0 to 185, got 186',
    );
    expect(create('F', [nightly], { maxEventAge: Duration.seconds(30) })).toThrow(
      'NightlySchedules: maxEventAge must be from 60 to 86400 seconds, got 30',
    );
  });

  it('FargateWorkers: Fargate task sizes and a pool that fits one worker', () => {
    const { stack, tables, queues, runtime } = parts();
    const base = {
      runtime,
      tasksTable: tables.tasks,
      queue: queues.get('worker-fargate'),
      completionQueues: queues.completionQueues,
      tierQueues: queues.tiers,
      pool: { vcpu: 16, memoryMiB: 32_768 },
    };
    expect(() => new FargateWorkers(stack, 'A', { ...base, workerCpu: 1024, workerMemoryMiB: 1024 })).toThrow(
      'FargateWorkers: 1024 CPU units with 1024 MiB is not a Fargate task size',
    );
    expect(() => new FargateWorkers(stack, 'B', { ...base, pool: { vcpu: 0.5, memoryMiB: 4096 } })).toThrow(
      'FargateWorkers: the fargate pool (0.5 vCPU, 4096 MiB) is smaller than one worker (1 vCPU, 2048 MiB)',
    );
    expect(() => new FargateWorkers(stack, 'C', { ...base, tasksPerWorker: 0 })).toThrow(
      'FargateWorkers: tasksPerWorker must be a positive integer, got 0',
    );
  });

  it('Monitoring: scheduler silence window', () => {
    const { stack, queues } = parts();
    const fn = lambda.Function.fromFunctionName(stack, 'Fn', 'any-function');
    expect(
      () =>
        new Monitoring(stack, 'A', {
          serviceName: 'x',
          tierQueues: queues.tiers,
          workerQueues: queues.workers,
          deadLetterQueues: [],
          redrive: { function: fn, every: Duration.minutes(5) },
          schedulerFunction: fn,
          workerFunctions: [{ memoryMiB: 512, function: fn }],
          apiFunction: fn,
          schedulerSilence: Duration.minutes(1),
        }),
    ).toThrow('Monitoring: schedulerSilence must be a whole number of minutes from 2 to 60, got 1');
  });

  it('deploy.logRetentionDays rounds up to a period CloudWatch Logs offers', () => {
    expect(retentionDays(30)).toBe(logs.RetentionDays.ONE_MONTH);
    expect(retentionDays(31)).toBe(logs.RetentionDays.TWO_MONTHS);
    expect(() => retentionDays(100_000)).toThrow(
      'deploy.logRetentionDays: 100000 is longer than CloudWatch Logs allows',
    );
  });

  it('refuses at synth a configuration that would overflow the 4 KB Lambda environment', () => {
    // Prepare: many tenants listed in the file.
    const tenants = Object.fromEntries(
      Array.from({ length: 60 }, (_, i) => [`tenant-${i}`, { weight: 1, maxConcurrency: 10 }]),
    );

    // Act
    const act = () => synthesize({ config: { ...defaultConfigInput(), tenants } });

    // Assess
    expect(act).toThrow(
      /RuntimeFunction Handler: the environment may reach \d+ bytes once deployed, over Lambda's 4096-byte limit \(largest: SCHEDULER_CONFIG_JSON \d+/,
    );
  });
});

describe('TaskSchedulerStack: the schedules are checked at synth, as npm start checks them', () => {
  const withSchedule = (task: { type: string; payload?: unknown; timeoutSeconds?: number }) => ({
    ...defaultConfigInput(),
    schedules: [{ name: 'nightly', cron: 'cron(0 2 * * ? *)', task: { tenantId: 'finance', ...task } }],
  });

  it('refuses a schedule of an unknown type, a payload its type refuses, or a timeout its pool refuses', () => {
    expect(() => synthesize({ config: withSchedule({ type: 'no.such.type' }) })).toThrow(
      /schedules\[0\] "nightly": unknown_task_type: .*no\.such\.type/,
    );
    expect(() => synthesize({ config: withSchedule({ type: 'demo.sleep', payload: { ms: 'soon' } }) })).toThrow(
      /schedules\[0\] "nightly": invalid_payload: /,
    );
    expect(() =>
      synthesize({ config: withSchedule({ type: 'demo.sleep', payload: { ms: 1 }, timeoutSeconds: 90_000 }) }),
    ).toThrow(/schedules\[0\] "nightly": timeout_over_cap: /);
  });

  it("checks a schedule of a task module's type against that module's schema", () => {
    // Prepare: a module of the user's project, as `taskModules` names it.
    const module = path.join(projectFixture(), 'shop-tasks.mjs');
    writeFileSync(
      module,
      `import { defineTaskType, z } from ${JSON.stringify(path.join(REPO_ROOT, 'index.ts'))};
export default [defineTaskType({ type: 'shop.order-total', description: 'd', payload: z.strictObject({ orderId: z.string() }), handler: async () => 1 })];
`,
    );
    const build = (task: { type: string; payload?: unknown }) => () => {
      const app = new App({ context: { ...cdkJsonContext(), 'aws:cdk:bundling-stacks': [] } });
      new TaskSchedulerStack(app, 'Shop', {
        config: parseConfig(withSchedule(task)),
        projectRoot: projectFixture(),
        taskModules: [module],
      });
    };

    // Act, Assess
    expect(build({ type: 'shop.order-total', payload: {} })).toThrow(/schedules\[0\] "nightly": invalid_payload: /);
    expect(build({ type: 'shop.order-totl', payload: {} })).toThrow(/schedules\[0\] "nightly": unknown_task_type: /);
    expect(build({ type: 'shop.order-total', payload: { orderId: 'o-1' } })).not.toThrow();
  });

  it('refuses a webhook filtering on a task type there is none of (it would get no event), naming the key', () => {
    const withFilter = (taskType: string) => ({
      ...defaultConfigInput(),
      events: {
        webhooks: [{ url: 'https://hooks.example.com/t', secret: 's'.repeat(16), filters: { taskType: [taskType] } }],
      },
    });
    expect(() => synthesize({ config: withFilter('examples.photo-resise') })).toThrow(
      /events\.webhooks\.0\.filters\.taskType: unknown task type "examples\.photo-resise", so no event would pass/,
    );
  });

  it('builds a schedule whose task is valid', () => {
    expect(() => synthesize({ config: withSchedule({ type: 'demo.sleep', payload: { ms: 1 } }) })).not.toThrow();
  });
});

describe('TaskSchedulerStack: deploy-only limits of the configuration, named by key', () => {
  const base = defaultConfigInput();
  const named = (stackName: string, extra: object = {}) => ({
    ...base,
    ...extra,
    deploy: { ...base.deploy, stackName },
  });
  const webhooks = { events: { webhooks: [{ url: 'https://hooks.example.com/x', secret: '0123456789abcdef' }] } };

  it('refuses a stack name that makes a queue name longer than SQS allows, saying how long it may be', () => {
    // 60 characters: within the 61 the default queues allow, not the webhook queues' 52.
    const sixty = `A${'b'.repeat(59)}`;
    expect(() => synthesize({ config: named(sixty, webhooks) })).toThrow(
      `deploy.stackName: "${sixty}" (60 characters) would name the queue "${sixty}-webhook-deliveries-dlq.fifo" (88 characters; SQS allows 80): at most 52 characters with this configuration`,
    );
    expect(() =>
      synthesize({
        config: named(sixty, { scheduler: { shards: 16 }, pools: { ...base.pools, lambda: { concurrency: 50 } } }),
      }),
    ).toThrow(/^deploy\.stackName: .* at most 58 characters with this configuration$/);
    expect(() => synthesize({ config: named(`A${'b'.repeat(51)}`, webhooks) })).not.toThrow();
  });

  it('names the scheduler function uniquely for stack names that share their first 54 characters', () => {
    // Prepare: Lambda allows 64 characters; "-scheduler" leaves 54 of the stack name.
    const prefix = `A${'b'.repeat(53)}`;
    const schedulerName = (stackName: string) =>
      Object.values(synthesize({ config: named(stackName) }).template.findResources('AWS::Lambda::Function'))
        .map((fn) => (fn as { Properties: { FunctionName?: string } }).Properties.FunctionName)
        .find((name) => name?.endsWith('-scheduler'));
    // Act
    const names = [`${prefix}-blue`, `${prefix}-green`, prefix].map(schedulerName);
    // Assess
    expect(new Set(names).size).toBe(3);
    for (const name of names) expect(name?.length).toBeLessThanOrEqual(64);
    expect(names[2]).toBe(`${prefix}-scheduler`); // a name that fits is kept as it is
  });

  it('refuses a Fargate pool smaller than one worker, naming pools.fargate', () => {
    expect(() =>
      synthesize({
        config: { ...base, pools: { lambda: { concurrency: 50 }, fargate: { vcpu: 0.5, memoryMiB: 1024 } } },
      }),
    ).toThrow(
      'pools.fargate: 0.5 vCPU and 1024 MiB hold no Fargate worker (1 vCPU, 2048 MiB each): give at least vcpu 1 and memoryMiB 2048',
    );
  });
});

describe('bin/app.ts', () => {
  it('stops with one line per bad schedule, no stack trace, before building anything', () => {
    // Prepare
    const file = path.join(projectFixture(), 'bad-schedule.json');
    writeFileSync(
      file,
      JSON.stringify({
        schedules: [{ name: 'nightly', cron: 'cron(0 2 * * ? *)', task: { tenantId: 'finance', type: 'no.such' } }],
      }),
    );

    // Act
    const result = spawnSync(
      process.execPath,
      ['--experimental-strip-types', '--no-warnings=ExperimentalWarning', 'bin/app.ts'],
      {
        cwd: REPO_ROOT,
        env: { ...process.env, SCHEDULER_CONFIG: file, CDK_OUTDIR: projectFixture() },
        encoding: 'utf8',
      },
    );

    // Assess
    expect(result.status).toBe(1);
    expect(result.stderr).toContain('schedules[0] "nightly": unknown_task_type:');
    expect(result.stderr).not.toMatch(/^\s+at /m);
  });

  it('stops with the validation problems, by key, for an invalid configuration file', () => {
    // Prepare
    const file = path.join(projectFixture(), 'bad-config.json');
    writeFileSync(file, JSON.stringify({ pools: { lambda: { concurrency: 0 } }, deploy: { stackName: '1bad' } }));

    // Act
    const result = spawnSync(
      process.execPath,
      ['--experimental-strip-types', '--no-warnings=ExperimentalWarning', 'bin/app.ts'],
      {
        cwd: REPO_ROOT,
        env: { ...process.env, SCHEDULER_CONFIG: file, CDK_OUTDIR: projectFixture() },
        encoding: 'utf8',
      },
    );

    // Assess
    expect(result.status).toBe(1);
    expect(result.stderr).toContain(`Invalid configuration ${file}:`);
    expect(result.stderr).toContain('pools.lambda.concurrency:');
    expect(result.stderr).toContain('deploy.stackName:');
  });
});
