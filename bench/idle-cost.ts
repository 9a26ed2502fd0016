/**
 * What the deployed stack costs a month with no tasks at all, from the synthesized template (the
 * default configuration) and the modelled calls of the scheduler's per-minute safety-net tick.
 * Idle, the scheduler is scaled to zero (runtime/scheduler/activation.ts): nothing polls SQS, the
 * Fargate service runs no task, and the tick reads the lease and the `byActive` index, finds
 * nothing due and exits.
 *
 *   node bench/idle-cost.ts        (also printed by bench/aws-calls.ts)
 */

import { ACTIVE_SHARDS } from '../runtime/infra/resources.ts';
import { fmt, isMain } from './lib.ts';
import { LIST_PRICES } from './metering/call-counter.ts';
import { synthesize } from './stack-synth.ts';

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
} as const;

const MINUTES_PER_MONTH = 30 * 24 * 60;
/** In-region latency a call adds to a Lambda's duration, as bench/aws-calls.ts models it. */
const DYNAMODB_CALL_MS = 6;
const LAMBDA_OVERHEAD_MS = 5;
/**
 * One idle tick: a consistent GetItem of the lease (1 read unit), then `byActive` queries for
 * dispatched, running and due queued tasks on every shard (empty, eventually consistent: 0.5
 * read units each).
 */
const TICK_QUERIES = 3 * ACTIVE_SHARDS;
const TICK_READ_UNITS = 1 + 0.5 * TICK_QUERIES;
/**
 * An SQS event source mapping long-polls its queue even when it is empty: about five pollers
 * with 20 s waits, ~650,000 receives a month (the figure docs/deploy.md has carried).
 */
const ESM_IDLE_RECEIVES_PER_MONTH = 650_000;
/** Lambda's START/END/REPORT lines and the tick's one EMF metric line, in bytes. */
const TICK_LOG_BYTES = 650;

export interface IdleCostLine {
  readonly item: string;
  readonly usdPerMonth: number;
}

export interface IdleCost {
  readonly lines: readonly IdleCostLine[];
  readonly usdPerMonth: number;
}

type Resource = { Type: string; Properties?: Record<string, unknown> };

/** The idle month of a synthesized template, item by item. */
export function idleCostOf(template: { Resources: Record<string, Resource> }): IdleCost {
  const resources = Object.values(template.Resources);
  const ofType = (type: string) => resources.filter((resource) => resource.Type === type);
  const alarmMetrics = ofType('AWS::CloudWatch::Alarm').reduce((sum, alarm) => {
    const metrics = alarm.Properties?.Metrics as { MetricStat?: unknown }[] | undefined;
    return sum + (metrics ? metrics.filter((metric) => metric.MetricStat).length : 1);
  }, 0);
  const ticks = ofType('AWS::Scheduler::Schedule').filter(
    (schedule) => schedule.Properties?.ScheduleExpression === 'rate(1 minute)',
  );
  const tickedArns = new Set(
    ticks.map((tick) => JSON.stringify((tick.Properties?.Target as { Arn?: unknown } | undefined)?.Arn)),
  );
  const tickedMemoryMiB = Object.entries(template.Resources)
    .filter(([id]) => [...tickedArns].some((arn) => arn.includes(`"${id}"`)))
    .map(([, fn]) => Number(fn.Properties?.MemorySize ?? 128));
  const tracedTicks = Object.entries(template.Resources).filter(
    ([id, fn]) =>
      [...tickedArns].some((arn) => arn.includes(`"${id}"`)) &&
      (fn.Properties?.TracingConfig as { Mode?: string } | undefined)?.Mode === 'Active',
  ).length;
  const invocations = ticks.length * MINUTES_PER_MONTH;
  const tickMs = LAMBDA_OVERHEAD_MS + DYNAMODB_CALL_MS * (1 + TICK_QUERIES);
  const gbSeconds = tickedMemoryMiB.reduce((sum, mib) => sum + (mib / 1024) * (tickMs / 1000) * MINUTES_PER_MONTH, 0);
  const runningFargate = ofType('AWS::ECS::Service').filter(
    (service) => Number(service.Properties?.DesiredCount ?? 1) > 0,
  );
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
      item: `EventBridge Scheduler ticks (${invocations} a month)`,
      usdPerMonth: (invocations / 1e6) * LIST_PRICES.eventBridgePerMillionEvents,
    },
    { item: 'Lambda requests (the ticks)', usdPerMonth: (invocations / 1e6) * LIST_PRICES.lambdaPerMillionRequests },
    {
      item: `Lambda GB-s (ticks of ~${tickMs} ms at ${tickedMemoryMiB.join(', ')} MiB)`,
      usdPerMonth: gbSeconds * LIST_PRICES.lambdaPerGbSecond,
    },
    {
      item: `DynamoDB read units (${TICK_READ_UNITS} a tick: lease + ${TICK_QUERIES} empty index queries)`,
      usdPerMonth: ((invocations * TICK_READ_UNITS) / 1e6) * LIST_PRICES.dynamoReadPerMillionUnits,
    },
    {
      item: 'Custom metrics (SchedulerLoopCompleted from every tick)',
      usdPerMonth: ticks.length * IDLE_PRICES.customMetricMonth,
    },
    {
      item: 'CloudWatch Logs ingested (the ticks)',
      usdPerMonth: ((invocations * TICK_LOG_BYTES) / 1e9) * IDLE_PRICES.logsIngestedPerGb,
    },
    {
      item: 'X-Ray traces (active tracing samples every tick)',
      usdPerMonth: ((tracedTicks * MINUTES_PER_MONTH) / 1e6) * IDLE_PRICES.xrayTracesPerMillion,
    },
    {
      item: `SQS receives of idle Lambda event source mappings (${ofType('AWS::Lambda::EventSourceMapping').length})`,
      usdPerMonth:
        ((ofType('AWS::Lambda::EventSourceMapping').length * ESM_IDLE_RECEIVES_PER_MONTH) / 1e6) *
        LIST_PRICES.sqsPerMillionRequests,
    },
    // The scheduler polls no queue while idle. Fargate: a worker only while work waits (scaling from 0).
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

export function printIdleCost(cost: IdleCost): void {
  console.log('\nIdle month of the default stack (template + modelled per-minute tick; no tasks):');
  for (const line of cost.lines) console.log(`  ${line.item.padEnd(72)}$${fmt(line.usdPerMonth, 3).padStart(7)}`);
  console.log(`idle cost per month: $${fmt(cost.usdPerMonth, 2)}`);
}

if (isMain(import.meta.url)) printIdleCost(defaultStackIdleCost());
