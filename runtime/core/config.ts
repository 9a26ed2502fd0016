/**
 * The one configuration file. The same JSON feeds the local runtime and the CDK app, and is
 * validated here (zod) with messages that name the offending key.
 */
import { z } from 'zod';
import { CronSyntaxError, parseAwsCron } from './cron.ts';
import { ConfigError } from './errors.ts';
import { ownEntry } from './records.ts';
import { MAX_SCHEDULER_SHARDS } from './shards.ts';
import { LAMBDA_LIMITS, PRIORITY_TIERS, RUNTIMES, TASK_STATES } from './task.ts';
import { type TenantSettings, tenantSettingsFields, tenantSettingsSchema } from './tenant-settings.ts';

export const POLICIES = ['fifo', 'priority', 'fair-share'] as const;
/** Where the scheduler runs: on demand in Lambda, or always on as a Fargate service (one task a shard). */
export const SCHEDULER_MODES = ['lambda', 'service'] as const;
export type SchedulerMode = (typeof SCHEDULER_MODES)[number];
export type PolicyName = (typeof POLICIES)[number];

/** A nightly (or any cron) job: an EventBridge Scheduler schedule that submits a task. */
const scheduleSchema = z.strictObject({
  name: z.string().regex(/^[A-Za-z0-9_.-]{1,64}$/, 'letters, digits, _ . - (at most 64)'),
  /** EventBridge Scheduler cron expression, e.g. "cron(0 2 * * ? *)". */
  cron: z.string().regex(/^cron\(.+\)$/, 'must look like cron(0 2 * * ? *)'),
  timezone: z.string().min(1).default('UTC'),
  enabled: z.boolean().default(true),
  task: z.strictObject({
    tenantId: z.string().min(1).max(128),
    type: z.string().min(1).max(128),
    payload: z.unknown().default({}),
    priority: z.enum(PRIORITY_TIERS).default('normal'),
    timeoutSeconds: z.number().int().positive().optional(),
    maxAttempts: z.number().int().min(1).max(100).optional(),
  }),
});
export type ScheduleConfig = z.infer<typeof scheduleSchema>;

/**
 * An IAM principal as API Gateway names a caller (or a role covering its sessions): any other key
 * of `deploy.callers` would match no caller (runtime/api/authorization.ts).
 */
const IAM_PRINCIPAL_ARN = /^arn:aws[a-z-]*:(iam|sts)::\d{12}:\S+$/;

/**
 * A tenant a caller may act for: a tenant id as the API takes them (runtime/api/schemas.ts,
 * `idSchema`) or `*`. Anything else names no tenant: `orders-*` reads as every orders tenant and
 * grants none.
 */
const CALLER_TENANT = /^(\*|[A-Za-z0-9_.:@-]{1,128})$/;

/** ARN of a Secrets Manager secret (a webhook's secret on AWS, kept out of the configuration). */
const SECRET_ARN = /^arn:aws[a-z-]*:secretsmanager:[a-z0-9-]+:\d{12}:secret:[A-Za-z0-9/_+=.@-]+$/;

/** A webhook: each task event that passes its filters is POSTed to `url`, signed with `secret`. */
const webhookSchema = z.strictObject({
  url: z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' }),
  /**
   * The HMAC key of `x-signature`: the secret itself (at least 16 characters), or on AWS
   * `{ "secretArn": ... }`, a Secrets Manager secret the stack grants the delivery function.
   */
  secret: z.union([
    z.string().min(16, 'at least 16 characters').max(4096),
    z.strictObject({ secretArn: z.string().regex(SECRET_ARN, 'a Secrets Manager secret ARN') }),
  ]),
  /** Each list given narrows the events: the event's value must be in it. */
  filters: z
    .strictObject({
      tenantId: z.array(z.string().min(1).max(128)).min(1).max(100).optional(),
      taskType: z.array(z.string().min(1).max(128)).min(1).max(100).optional(),
      state: z.array(z.enum(TASK_STATES)).min(1).optional(),
    })
    .optional(),
});
export type WebhookConfig = z.infer<typeof webhookSchema>;

export const configSchema = z.strictObject({
  policy: z.enum(POLICIES).default('fair-share'),
  /** Waiting this long raises a task by one tier. */
  agingSeconds: z.number().int().min(1).max(86_400).default(300),
  pools: z
    .strictObject({
      lambda: z.strictObject({
        concurrency: z.number().int().min(1).max(1000),
        /** The longest timeoutSeconds a task may ask for here (τ of the wait bound, docs/policy.md). */
        maxTimeoutSeconds: z.number().int().min(1).max(LAMBDA_LIMITS.maxTimeoutSeconds).default(900),
      }),
      fargate: z.strictObject({
        vcpu: z.number().positive().max(4096),
        memoryMiB: z
          .number()
          .int()
          .min(512)
          .max(30 * 1024 * 1024),
        maxTimeoutSeconds: z.number().int().min(1).max(86_400).default(86_400),
      }),
    })
    .default({
      lambda: { concurrency: 50, maxTimeoutSeconds: 900 },
      fargate: { vcpu: 16, memoryMiB: 32_768, maxTimeoutSeconds: 86_400 },
    }),
  tenantDefaults: tenantSettingsSchema.default({ weight: 1, maxConcurrency: 10 }),
  /**
   * Per-tenant settings applied at start-up (the API can change them at run time). A field an
   * entry leaves out is `tenantDefaults`' (parseConfig merges them): `{"ops": {"paused": true}}`.
   */
  tenants: z.record(z.string().min(1).max(128), tenantSettingsFields.partial()).default({}),
  /** Defaults for fields a submit request leaves out. */
  taskDefaults: z
    .strictObject({
      priority: z.enum(PRIORITY_TIERS).default('normal'),
      timeoutSeconds: z.number().int().min(1).max(86_400).default(300),
      maxAttempts: z.number().int().min(1).max(100).default(3),
      vcpu: z.number().positive().max(16).default(0.25),
      memoryMiB: z.number().int().min(128).max(122_880).default(512),
      runtime: z.enum(RUNTIMES).optional(),
    })
    .default({ priority: 'normal', timeoutSeconds: 300, maxAttempts: 3, vcpu: 0.25, memoryMiB: 512 }),
  retry: z
    .strictObject({
      /** First retry waits about this long; each further one doubles, with full jitter. */
      baseDelaySeconds: z.number().min(0).max(3600).default(2),
      maxDelaySeconds: z.number().min(0).max(86_400).default(900),
    })
    .default({ baseDelaySeconds: 2, maxDelaySeconds: 900 }),
  scheduler: z
    .strictObject({
      /** How long a dispatched task may sit before a worker starts it. */
      dispatchLeaseSeconds: z.number().int().min(5).max(3600).default(120),
      /** How often a running task must heartbeat (or finish) before its lease is lost. */
      runLeaseSeconds: z.number().int().min(5).max(3600).default(60),
      /** Candidates held in memory from the tier queues at most. */
      bufferSize: z.number().int().min(10).max(100_000).default(2000),
      /**
       * Schedulers side by side, each owning the tenants whose id hashes to it (docs/scaling.md):
       * its own lease, tier and completions queues; pool capacity shared by allowance.
       */
      shards: z.number().int().min(1).max(MAX_SCHEDULER_SHARDS).default(1),
      /**
       * Where each shard's scheduler runs (docs/scaling.md "A long-lived scheduler"). `lambda`: a
       * Lambda invocation while there is work, scaled to zero when idle, handing over to a fresh
       * one every few minutes. `service`: one always-on Fargate task per shard holds the lease
       * for good (locally: the loop never stops when idle); the Lambda stays as the fallback
       * while a service task is down.
       */
      mode: z.enum(SCHEDULER_MODES).default('lambda'),
    })
    .default({ dispatchLeaseSeconds: 120, runLeaseSeconds: 60, bufferSize: 2000, shards: 1, mode: 'lambda' }),
  schedules: z.array(scheduleSchema).default([]),
  /** Task events (docs/events.md): on AWS always on the event bus; webhooks wherever configured. */
  events: z
    .strictObject({
      webhooks: z.array(webhookSchema).max(10).default([]),
    })
    .default({ webhooks: [] }),
  /** Deploy-only settings, read by the CDK app and ignored locally. */
  deploy: z
    .strictObject({
      stackName: z
        .string()
        .regex(/^[A-Za-z][A-Za-z0-9-]{0,127}$/)
        .default('TaskScheduler'),
      deletionProtection: z.boolean().default(true),
      logRetentionDays: z.number().int().positive().default(30),
      /**
       * IAM principal ARN → tenants it may act for ("*" for all tenants). Empty: nobody may act
       * for any tenant, unless `allowAnyCaller` (runtime/api/authorization.ts).
       */
      callers: z
        .record(
          z
            .string()
            .regex(
              IAM_PRINCIPAL_ARN,
              'not an IAM principal ARN (arn:aws:iam::ACCOUNT:role/NAME, arn:aws:iam::ACCOUNT:user/NAME, arn:aws:sts::ACCOUNT:assumed-role/ROLE[/SESSION])',
            ),
          z
            .array(
              z
                .string()
                .regex(
                  CALLER_TENANT,
                  'not a tenant id (letters, digits and _ . : @ -, at most 128) or "*" (no patterns, no spaces)',
                ),
            )
            .min(1),
        )
        .default({}),
      /** Opt-out of caller authorization when `callers` is empty: every IAM-authorized caller acts for every tenant. */
      allowAnyCaller: z.boolean().default(false),
      alarmEmail: z.email().optional(),
      /** A CloudWatch dashboard ($3 a month; an account's first three are free). Alarms are always created. */
      dashboard: z.boolean().default(false),
      /**
       * Backlog metrics (QueuedTasks, OldestWaitingSeconds) of their own for this many of the
       * largest tenant-tiers, while they have a backlog: each is a custom metric, $0.30 a month
       * prorated by the hour it is published. 0: per tier only.
       */
      tenantMetrics: z.number().int().min(0).max(100).default(10),
    })
    .default({
      stackName: 'TaskScheduler',
      deletionProtection: true,
      logRetentionDays: 30,
      callers: {},
      allowAnyCaller: false,
      dashboard: false,
      tenantMetrics: 10,
    }),
});

/** The configuration parsed: each tenant's entry merged onto `tenantDefaults`. */
export type SchedulerConfig = Omit<z.infer<typeof configSchema>, 'tenants'> & {
  readonly tenants: Readonly<Record<string, TenantSettings>>;
};
export type ConfigInput = z.input<typeof configSchema>;

/** Validate a parsed JSON value; throws ConfigError listing every problem by key path. */
export function parseConfig(raw: unknown, source = 'configuration'): SchedulerConfig {
  const parsed = configSchema.safeParse(raw ?? {});
  if (!parsed.success) {
    const problems = parsed.error.issues.map(
      (issue) =>
        `${issue.path.length ? issue.path.join('.') : '(root)'}: ${
          // A record's key refused: what is wrong with it, not zod's "Invalid key in record".
          issue.code === 'invalid_key' ? issue.issues.map((inner) => inner.message).join('; ') : issue.message
        }`,
    );
    throw new ConfigError(`Invalid ${source}:\n  ${problems.join('\n  ')}`, { problems });
  }
  const tenantProblems: string[] = [];
  const tenants = Object.fromEntries(
    Object.entries(parsed.data.tenants).map(([tenantId, entry]) => {
      const merged = tenantSettingsSchema.safeParse({ ...parsed.data.tenantDefaults, ...entry });
      if (!merged.success) {
        for (const issue of merged.error.issues)
          tenantProblems.push(`tenants.${tenantId}.${issue.path.join('.')}: ${issue.message}`);
      }
      return [tenantId, merged.success ? merged.data : parsed.data.tenantDefaults];
    }),
  );
  if (tenantProblems.length > 0) {
    throw new ConfigError(`Invalid ${source}:\n  ${tenantProblems.join('\n  ')}`, { problems: tenantProblems });
  }
  const config: SchedulerConfig = { ...parsed.data, tenants };
  const scheduleProblems = config.schedules.flatMap((schedule, index) => {
    try {
      new Intl.DateTimeFormat('en', { timeZone: schedule.timezone });
    } catch {
      return [`schedules.${index}.timezone: unknown time zone "${schedule.timezone}"`];
    }
    try {
      parseAwsCron(schedule.cron, schedule.timezone);
      return [];
    } catch (error) {
      return [`schedules.${index}.cron: ${error instanceof CronSyntaxError ? error.message : String(error)}`];
    }
  });
  const names = config.schedules.map((schedule) => schedule.name);
  const duplicate = names.find((name, index) => names.indexOf(name) !== index);
  if (duplicate) scheduleProblems.push(`schedules: the name "${duplicate}" is used twice`);
  if (config.scheduler.shards > config.pools.lambda.concurrency) {
    // Idle shards split the pools equally: each needs a Lambda slot to start work at once.
    scheduleProblems.push(
      `scheduler.shards: ${config.scheduler.shards} shards need at least as many Lambda slots (pools.lambda.concurrency is ${config.pools.lambda.concurrency})`,
    );
  }
  if (scheduleProblems.length > 0) {
    throw new ConfigError(`Invalid ${source}:\n  ${scheduleProblems.join('\n  ')}`, { problems: scheduleProblems });
  }
  if (config.retry.maxDelaySeconds < config.retry.baseDelaySeconds) {
    throw new ConfigError(`Invalid ${source}: retry.maxDelaySeconds is below retry.baseDelaySeconds`, {
      problems: ['retry.maxDelaySeconds: must be >= retry.baseDelaySeconds'],
    });
  }
  return config;
}

/** Settings of one tenant: its own entry, else the defaults. */
export function tenantSettingsFor(config: SchedulerConfig, tenantId: string) {
  return ownEntry(config.tenants, tenantId) ?? config.tenantDefaults;
}
