/**
 * What the deployed stack costs a month with no tasks at all, from the synthesized template (the
 * default configuration) and the modelled calls of the scheduler's per-minute safety-net tick.
 * Idle, the scheduler is scaled to zero (runtime/scheduler/activation.ts): nothing polls SQS but
 * the worker queue's event source mapping, the Fargate service runs no task, the tick reads the
 * lease, `byLeased` and `byTenantQueue`, finds nothing and exits, and the dead-letter drain every few
 * minutes finds its queues empty.
 *
 *   node bench/idle-cost.ts        (also printed by bench/aws-calls.ts)
 *   node bench/idle-cost.ts --scheduler service   (the long-lived scheduler: measured in the simulation)
 */
import { LEGACY_ACTIVE_SHARDS } from '../runtime/infra/resources.ts';
import { DRAINED_DEAD_LETTER_QUEUES } from '../runtime/worker/redrive.ts';
import { fmt, isMain } from './lib.ts';
import { LIST_PRICES } from './metering/call-counter.ts';
import { defaultConfigInput, synthesize } from './stack-synth.ts';

/** us-east-1 list prices the idle stack pays beyond LIST_PRICES (CloudWatch, X-Ray, KMS). */
export const IDLE_PRICES = {
  /** Standard-resolution alarm, per metric it evaluates (a metric-math alarm pays for each). */
  alarmMetricMonth: 0.1,
  dashboardMonth: 3.0,
  /** Custom metric, per metric-month (prorated by the hour it is published). */
  customMetricMonth: 0.3,
  logsIngestedPerGb: 0.5,
  xrayTracesPerMillion: 5.0,
  kmsKeyMonth: 1.0,
  natGatewayMonth: 32.4,
  /** Fargate, Linux, per vCPU-hour and GB-hour (ARM64 and x86), and a public IPv4 address per hour. */
  fargateArmVcpuHour: 0.03238,
  fargateArmGbHour: 0.00356,
  fargateX86VcpuHour: 0.04048,
  fargateX86GbHour: 0.004445,
  publicIpv4Hour: 0.005,
} as const;

const HOURS_PER_MONTH = 730;

/**
 * What one idle scheduler service task (`scheduler.mode` "service") calls in an hour, measured by
 * `node bench/idle-cost.ts --scheduler service` in the simulation: its long polls, lease renewals,
 * reconciler and backstop reads go on with no work, where a Lambda-mode scheduler has stopped.
 */
export interface ServiceIdleCalls {
  readonly sqsRequestsPerHour: number;
  readonly readUnitsPerHour: number;
  readonly writeUnitsPerHour: number;
}

const MINUTES_PER_MONTH = 30 * 24 * 60;
/** In-region latency a call adds to a Lambda's duration, as bench/aws-calls.ts models it. */
const DYNAMODB_CALL_MS = 6;
const LAMBDA_OVERHEAD_MS = 5;
/**
 * One idle tick (`hasSchedulerWork`, runtime/scheduler/activation.ts): a consistent GetItem of
 * the lease (1 read unit), for leased tasks a Limit-1 Scan of the lease ledger and, for one
 * release, of `byLeased` and a Limit-1 query per shard of `byActive`'s `LEASED#` partitions
 * (older versions' leased tasks), and a Limit-1 Scan of `byTenantQueue` for queued ones (empty,
 * eventually consistent: 0.5 read units each). The registry and the backstop page are read only
 * when `byTenantQueue` is not empty.
 */
const TICK_QUERIES = 1 + 1 + LEGACY_ACTIVE_SHARDS + 1;
const TICK_READ_UNITS = 1 + 0.5 * TICK_QUERIES;
const TICK_MS = LAMBDA_OVERHEAD_MS + DYNAMODB_CALL_MS * (1 + TICK_QUERIES);
/**
 * One idle drain of the dead-letter queues (lambda/worker/redrive.ts): one empty 1 s long poll
 * per queue, all at once, so about a second of duration and one SQS request per queue.
 */
const DRAIN_MS = LAMBDA_OVERHEAD_MS + 1000;
/**
 * An SQS event source mapping long-polls its queue even when it is empty: about five pollers
 * with 20 s waits, ~650,000 receives a month (the figure docs/deploy.md has carried).
 */
const ESM_IDLE_RECEIVES_PER_MONTH = 650_000;
/** Lambda's START/END/REPORT lines and the tick's one EMF metric line, in bytes. */
const TICK_LOG_BYTES = 650;
/** Lambda's START/END/REPORT lines of a drain that found nothing. */
const DRAIN_LOG_BYTES = 400;

export interface IdleCostLine {
  readonly item: string;
  readonly usdPerMonth: number;
}

export interface IdleCost {
  readonly lines: readonly IdleCostLine[];
  readonly usdPerMonth: number;
}

type Resource = { Type: string; Properties?: Record<string, unknown> };

/** A function a `rate(...)` schedule invokes, and how often a month. */
interface Periodic {
  readonly reason: string;
  readonly invocations: number;
  readonly memoryMiB: number;
  readonly traced: boolean;
}

/** Invocations a month of a `rate(N minute[s]|hour[s])` expression (0 for cron and at). */
function monthlyRuns(expression: unknown): number {
  const match = /^rate\((\d+) (minute|minutes|hour|hours)\)$/.exec(String(expression));
  if (!match) return 0;
  const minutes = Number(match[1]) * (match[2]!.startsWith('hour') ? 60 : 1);
  return MINUTES_PER_MONTH / minutes;
}

/** The periodic invocations of a template, by the `reason` their schedule passes (tick, drain). */
function periodicOf(resources: Record<string, Resource>): Periodic[] {
  return Object.values(resources).flatMap((schedule) => {
    if (schedule.Type !== 'AWS::Scheduler::Schedule') return [];
    const invocations = monthlyRuns(schedule.Properties?.ScheduleExpression);
    if (invocations === 0) return [];
    const target = schedule.Properties?.Target as { Arn?: unknown; Input?: string } | undefined;
    const arn = JSON.stringify(target?.Arn);
    const fn = Object.entries(resources).find(([id]) => arn.includes(`"${id}"`))?.[1];
    let reason = 'unknown';
    try {
      reason = String((JSON.parse(target?.Input ?? '{}') as { reason?: unknown }).reason ?? 'unknown');
    } catch {}
    return [
      {
        reason,
        invocations,
        memoryMiB: Number(fn?.Properties?.MemorySize ?? 128),
        traced: (fn?.Properties?.TracingConfig as { Mode?: string } | undefined)?.Mode === 'Active',
      },
    ];
  });
}

/** The idle month of a synthesized template, item by item. */
export function idleCostOf(
  template: { Resources: Record<string, Resource> },
  serviceIdleCalls?: ServiceIdleCalls,
): IdleCost {
  const resources = Object.values(template.Resources);
  const ofType = (type: string) => resources.filter((resource) => resource.Type === type);
  const alarmMetrics = ofType('AWS::CloudWatch::Alarm').reduce((sum, alarm) => {
    const metrics = alarm.Properties?.Metrics as { MetricStat?: unknown }[] | undefined;
    return sum + (metrics ? metrics.filter((metric) => metric.MetricStat).length : 1);
  }, 0);
  const periodic = periodicOf(template.Resources);
  const ticks = periodic.filter((run) => run.reason === 'tick');
  const drains = periodic.filter((run) => run.reason === 'drain');
  const unknown = periodic.filter((run) => run.reason !== 'tick' && run.reason !== 'drain');
  if (unknown.length > 0)
    throw new Error(`idle-cost: no model for periodic invocations of reason ${unknown[0]!.reason}`);
  const sum = (runs: Periodic[], of: (run: Periodic) => number) => runs.reduce((total, run) => total + of(run), 0);
  const tickRuns = sum(ticks, (run) => run.invocations);
  const drainRuns = sum(drains, (run) => run.invocations);
  const gbSeconds = (runs: Periodic[], ms: number) =>
    sum(runs, (run) => (run.memoryMiB / 1024) * (ms / 1000) * run.invocations);
  /** A service's task definition's properties (the template's resource its TaskDefinition refers to). */
  const taskDefinitionOf = (service: Resource) => {
    const ref = (service.Properties?.TaskDefinition as { Ref?: string } | undefined)?.Ref;
    return (ref ? template.Resources[ref]?.Properties : undefined) ?? {};
  };
  const isSchedulerService = (service: Resource) =>
    ((taskDefinitionOf(service).ContainerDefinitions ?? []) as { Name?: string }[]).some(
      (container) => container.Name === 'Scheduler',
    );
  const services = ofType('AWS::ECS::Service');
  const schedulerServices = services.filter(isSchedulerService);
  const runningFargate = services.filter(
    (service) => !isSchedulerService(service) && Number(service.Properties?.DesiredCount ?? 1) > 0,
  );
  const schedulerTaskHours = schedulerServices.map((service) => {
    const properties = taskDefinitionOf(service);
    const arm = JSON.stringify(properties.RuntimePlatform ?? {}).includes('ARM64');
    const publicIp = JSON.stringify(service.Properties?.NetworkConfiguration ?? {}).includes('ENABLED');
    return (
      (Number(properties.Cpu) / 1024) * (arm ? IDLE_PRICES.fargateArmVcpuHour : IDLE_PRICES.fargateX86VcpuHour) +
      (Number(properties.Memory) / 1024) * (arm ? IDLE_PRICES.fargateArmGbHour : IDLE_PRICES.fargateX86GbHour) +
      (publicIp ? IDLE_PRICES.publicIpv4Hour : 0)
    );
  });
  // Only SQS mappings long-poll while idle; the task events' DynamoDB stream mapping is polled by
  // Lambda at no charge (DynamoDB pricing: stream reads by Lambda triggers are free).
  const sqsMappings = ofType('AWS::Lambda::EventSourceMapping').filter(
    (mapping) => !JSON.stringify(mapping.Properties?.EventSourceArn ?? '').includes('StreamArn'),
  );
  const streamMappings = ofType('AWS::Lambda::EventSourceMapping').length - sqsMappings.length;
  // The task events' failure queues, read by every drain beside the dead-letter queues.
  const eventQueuesDrained = ofType('AWS::SQS::Queue').filter((queue) =>
    /task-events-failed|webhook-deliveries-dlq/.test(JSON.stringify(queue.Properties?.QueueName ?? '')),
  ).length;
  const drainedQueues = DRAINED_DEAD_LETTER_QUEUES.length + eventQueuesDrained;
  const memories = (runs: Periodic[]) => [...new Set(runs.map((run) => run.memoryMiB))].join(', ');
  const lines: IdleCostLine[] = [
    {
      item: `CloudWatch alarms (${alarmMetrics} alarm metrics)`,
      usdPerMonth: alarmMetrics * IDLE_PRICES.alarmMetricMonth,
    },
    {
      item: `CloudWatch dashboards (${ofType('AWS::CloudWatch::Dashboard').length})`,
      usdPerMonth: ofType('AWS::CloudWatch::Dashboard').length * IDLE_PRICES.dashboardMonth,
    },
    {
      item: `KMS keys (${ofType('AWS::KMS::Key').length})`,
      usdPerMonth: ofType('AWS::KMS::Key').length * IDLE_PRICES.kmsKeyMonth,
    },
    {
      item: `NAT gateways (${ofType('AWS::EC2::NatGateway').length})`,
      usdPerMonth: ofType('AWS::EC2::NatGateway').length * IDLE_PRICES.natGatewayMonth,
    },
    {
      item: `EventBridge Scheduler runs (${tickRuns} ticks, ${drainRuns} dead-letter drains)`,
      usdPerMonth: ((tickRuns + drainRuns) / 1e6) * LIST_PRICES.eventBridgePerMillionEvents,
    },
    {
      item: 'Lambda requests (the ticks and drains)',
      usdPerMonth: ((tickRuns + drainRuns) / 1e6) * LIST_PRICES.lambdaPerMillionRequests,
    },
    {
      item: `Lambda GB-s (ticks of ~${TICK_MS} ms at ${memories(ticks)} MiB, drains of ~${DRAIN_MS} ms at ${memories(drains)} MiB)`,
      usdPerMonth: (gbSeconds(ticks, TICK_MS) + gbSeconds(drains, DRAIN_MS)) * LIST_PRICES.lambdaPerGbSecond,
    },
    {
      item: `DynamoDB read units (${TICK_READ_UNITS} a tick: lease + ${TICK_QUERIES} empty index reads)`,
      usdPerMonth: ((tickRuns * TICK_READ_UNITS) / 1e6) * LIST_PRICES.dynamoReadPerMillionUnits,
    },
    {
      item: `SQS receives of the drains (${drainedQueues} dead-letter and task-event queues a drain)`,
      usdPerMonth: ((drainRuns * drainedQueues) / 1e6) * LIST_PRICES.sqsPerMillionRequests,
    },
    {
      item: 'Custom metrics (SchedulerLoopCompleted from every tick)',
      usdPerMonth: ticks.length * IDLE_PRICES.customMetricMonth,
    },
    {
      item: 'CloudWatch Logs ingested (the ticks and drains)',
      usdPerMonth: ((tickRuns * TICK_LOG_BYTES + drainRuns * DRAIN_LOG_BYTES) / 1e9) * IDLE_PRICES.logsIngestedPerGb,
    },
    {
      item: 'X-Ray traces (active tracing samples every tick and drain)',
      usdPerMonth:
        (sum(
          periodic.filter((run) => run.traced),
          (run) => run.invocations,
        ) /
          1e6) *
        IDLE_PRICES.xrayTracesPerMillion,
    },
    {
      item: `SQS receives of idle Lambda event source mappings (${sqsMappings.length})`,
      usdPerMonth: ((sqsMappings.length * ESM_IDLE_RECEIVES_PER_MONTH) / 1e6) * LIST_PRICES.sqsPerMillionRequests,
    },
    {
      item: `DynamoDB stream reads of the task events function (${streamMappings} mapping; not billed)`,
      usdPerMonth: 0,
    },
    {
      item: `Task event bus (${ofType('AWS::Events::EventBus').length}; billed per event put, none idle)`,
      usdPerMonth: 0,
    },
    // The scheduler polls no queue while idle. Fargate: a worker only while work waits (scaling from 0).
    ...(schedulerServices.length > 0
      ? [
          {
            item: `Scheduler service tasks (${schedulerServices.length}, always on: Fargate and a public IPv4 each)`,
            usdPerMonth: schedulerTaskHours.reduce((total, hour) => total + hour, 0) * HOURS_PER_MONTH,
          },
          serviceIdleCalls
            ? {
                item: `Scheduler service idle calls (${fmt(serviceIdleCalls.sqsRequestsPerHour, 0)} SQS requests, ${fmt(serviceIdleCalls.readUnitsPerHour, 0)} read and ${fmt(serviceIdleCalls.writeUnitsPerHour, 0)} write units an hour each)`,
                usdPerMonth:
                  schedulerServices.length *
                  HOURS_PER_MONTH *
                  ((serviceIdleCalls.sqsRequestsPerHour / 1e6) * LIST_PRICES.sqsPerMillionRequests +
                    (serviceIdleCalls.readUnitsPerHour / 1e6) * LIST_PRICES.dynamoReadPerMillionUnits +
                    (serviceIdleCalls.writeUnitsPerHour / 1e6) * LIST_PRICES.dynamoWritePerMillionUnits),
              }
            : {
                item: 'Scheduler service idle calls (not measured: node bench/idle-cost.ts --scheduler service)',
                usdPerMonth: 0,
              },
        ]
      : []),
    {
      item: `Fargate services running with no work (${runningFargate.length})`,
      usdPerMonth: runningFargate.length * 30,
    },
  ];
  return { lines, usdPerMonth: lines.reduce((sum, line) => sum + line.usdPerMonth, 0) };
}

/** Synthesize the default configuration's stack (bundling skipped) and cost its idle month. */
export function defaultStackIdleCost(): IdleCost {
  return idleCostOf(synthesize().template.toJSON() as { Resources: Record<string, Resource> });
}

/**
 * Measure an idle scheduler service task's calls: one simulated hour (sim/chaos/run.ts, no faults,
 * no tasks) of `scheduler.mode` "service", counting the calls of the service's component and the
 * units the account consumed (the minute tick's few reads included).
 */
export async function measureServiceIdleCalls(): Promise<ServiceIdleCalls> {
  const { DEFAULT_OPTIONS, NO_FAULTS, runChaos } = await import('../sim/chaos/run.ts');
  let sqsRequests = 0;
  const history = await runChaos({
    ...DEFAULT_OPTIONS,
    seed: 1,
    tasks: 0,
    tenants: 1,
    submitSeconds: 3600,
    maxSimulatedSeconds: 3600,
    faults: NO_FAULTS,
    config: { ...DEFAULT_OPTIONS.config, scheduler: { ...DEFAULT_OPTIONS.config?.scheduler, mode: 'service' } },
    onCall: (component, call) => {
      if (component.startsWith('service-') && call.service === 'sqs') sqsRequests++;
    },
  });
  const hours = (history.endMs - history.startMs) / 3_600_000;
  let read = 0;
  let write = 0;
  for (const consumed of history.throughput?.consumed() ?? []) {
    read += consumed.read;
    write += consumed.write;
  }
  return { sqsRequestsPerHour: sqsRequests / hours, readUnitsPerHour: read / hours, writeUnitsPerHour: write / hours };
}

export function printIdleCost(cost: IdleCost, what = 'the default stack'): void {
  console.log(`\nIdle month of ${what} (template + modelled tick and dead-letter drain; no tasks):`);
  for (const line of cost.lines) console.log(`  ${line.item.padEnd(72)}$${fmt(line.usdPerMonth, 3).padStart(7)}`);
  console.log(`idle cost per month: $${fmt(cost.usdPerMonth, 2)}`);
}

if (isMain(import.meta.url)) {
  if (process.argv.includes('--scheduler') && process.argv[process.argv.indexOf('--scheduler') + 1] === 'service') {
    const config = defaultConfigInput();
    const { template } = synthesize({ config: { ...config, scheduler: { ...config.scheduler, mode: 'service' } } });
    const calls = await measureServiceIdleCalls();
    printIdleCost(
      idleCostOf(template.toJSON() as { Resources: Record<string, Resource> }, calls),
      'the default stack with scheduler.mode "service"',
    );
  } else printIdleCost(defaultStackIdleCost());
}
