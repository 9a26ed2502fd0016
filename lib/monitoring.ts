import { Duration } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as actions from 'aws-cdk-lib/aws-cloudwatch-actions';
import type * as ecs from 'aws-cdk-lib/aws-ecs';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as kms from 'aws-cdk-lib/aws-kms';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import * as sns from 'aws-cdk-lib/aws-sns';
import * as subscriptions from 'aws-cdk-lib/aws-sns-subscriptions';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { PRIORITY_TIERS, type PriorityTier } from '../runtime/core/task.ts';
import { DIMENSION, METRIC, METRICS_NAMESPACE, type MetricName } from '../runtime/infra/telemetry.ts';
import type { DefinedQueue } from './task-queues.ts';

export interface MonitoringProps {
  /** Value of the `service` dimension the runtime publishes with (POWERTOOLS_SERVICE_NAME). */
  readonly serviceName: string;
  /** @default - CloudFormation picks the name */
  readonly dashboardName?: string;
  readonly tierQueues: readonly DefinedQueue[];
  readonly workerQueues: readonly DefinedQueue[];
  /**
   * Every dead-letter queue, by id. Those the redrive drain empties (`drained`) are alarmed
   * through the drain (DeadLettered, its errors and its runs); the others by their depth.
   */
  readonly deadLetterQueues: readonly { readonly id: string; readonly queue: sqs.IQueue; readonly drained?: boolean }[];
  /** The scheduled dead-letter drain (lib/redrive.ts) and how often it runs. */
  readonly redrive: { readonly function: lambda.IFunction; readonly every: Duration };
  readonly schedulerFunction: lambda.IFunction;
  /** The Lambda pool's worker functions, one per memory class, with their memory. */
  readonly workerFunctions: readonly { readonly memoryMiB: number; readonly function: lambda.IFunction }[];
  readonly apiFunction: lambda.IFunction;
  readonly fargateService?: ecs.FargateService;
  /** The long-lived scheduler's services, one per shard (`scheduler.mode` "service"). @default - none */
  readonly schedulerServices?: readonly ecs.FargateService[];
  /** Alarm when no SchedulerLoopCompleted arrives for this long. @default Duration.minutes(5) */
  readonly schedulerSilence?: Duration;
  /** Alarm when a tier's oldest message is older. @default critical 5 min, high 15 min, normal 1 h, low 4 h */
  readonly oldestAgeThresholds?: Partial<Readonly<Record<PriorityTier, Duration>>>;
  /** Subscribe this address to an alarm topic. @default - no topic; alarms show in the console only */
  readonly alarmEmail?: string;
  /**
   * Create the dashboard. A dashboard costs $3 a month (an account's first three are free), as
   * much as the rest of an idle stack together. @default true
   */
  readonly dashboard?: boolean;
}

const DEFAULT_OLDEST_AGE: Readonly<Record<PriorityTier, Duration>> = {
  critical: Duration.minutes(5),
  high: Duration.minutes(15),
  normal: Duration.hours(1),
  low: Duration.hours(4),
};

/**
 * The operator's view: a dashboard (depth and oldest age per tier, dispatch rate, running per
 * pool, outcomes, dead letters, scheduler loop health) and alarms on dead letters, oldest age per
 * tier, scheduler errors and scheduler silence, optionally mailed through an encrypted SNS topic.
 */
export class Monitoring extends Construct {
  /** Absent when `dashboard` is false. */
  public readonly dashboard?: cloudwatch.Dashboard;
  public readonly alarms: readonly cloudwatch.Alarm[];
  public readonly topic?: sns.Topic;

  readonly #serviceName: string;

  constructor(scope: Construct, id: string, props: MonitoringProps) {
    super(scope, id);
    this.#serviceName = props.serviceName;
    const silenceMinutes = (props.schedulerSilence ?? Duration.minutes(5)).toMinutes();
    if (!Number.isInteger(silenceMinutes) || silenceMinutes < 2 || silenceMinutes > 60) {
      throw new Error(
        `Monitoring: schedulerSilence must be a whole number of minutes from 2 to 60, got ${silenceMinutes}`,
      );
    }
    const thresholds = { ...DEFAULT_OLDEST_AGE, ...props.oldestAgeThresholds };
    for (const tier of PRIORITY_TIERS) {
      if (thresholds[tier].toSeconds() < 60) {
        throw new Error(`Monitoring: oldestAgeThresholds.${tier} must be at least 60 seconds`);
      }
    }

    // Standard alarms cost $0.10 a month per metric they evaluate (a metric-math alarm pays for
    // each metric in its expression): each alarm below watches something no other one does.
    const alarms: cloudwatch.Alarm[] = [];
    for (const { id: queueId, queue } of props.deadLetterQueues.filter((dlq) => !dlq.drained)) {
      alarms.push(
        queue
          .metricApproximateNumberOfMessagesVisible({ period: Duration.minutes(1), statistic: 'Maximum' })
          .createAlarm(this, `DeadLetters-${queueId}`, {
            alarmDescription: `Dead letters in ${queueId}: tasks (or schedule runs) that need an operator's look`,
            threshold: 0,
            comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
            evaluationPeriods: 1,
            treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
          }),
      );
    }
    // The redrive drain empties the worker and tier dead-letter queues every few minutes and
    // counts each dead letter it receives (DeadLettered; again on every drain while one cannot be
    // handled, so the alarm fires again every drain). Two more alarms make sure the drain itself runs and succeeds, so the queues need
    // no depth alarm each.
    alarms.push(
      this.metric(METRIC.deadLettered).createAlarm(this, 'DeadLettersArriving', {
        alarmDescription:
          'Messages reached a worker or tier dead-letter queue (the redrive drain hands them back to the scheduler)',
        threshold: 0,
        comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
        evaluationPeriods: 1,
        treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
      }),
    );
    // The registry backstop found QUEUED work nobody would read (runtime/scheduler/backstop.ts)
    // and announced it again: the task is recovered, but each one means a submit crashed between
    // its write and its send, or the index lagged beyond G at a deregistration. Published only
    // when non-zero, so it costs no custom metric while healthy.
    alarms.push(
      this.metric(METRIC.unregisteredQueued).createAlarm(this, 'UnregisteredQueued', {
        alarmDescription:
          'The registry backstop found QUEUED tasks of tenant-tiers nobody reads and announced them again (a lost announcement or index lag beyond G)',
        threshold: 0,
        comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
        evaluationPeriods: 1,
        treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
      }),
    );
    const drainWindow = Duration.minutes(Math.max(5, 3 * props.redrive.every.toMinutes()));
    alarms.push(
      props.redrive.function
        .metricErrors({ period: drainWindow, statistic: 'Sum' })
        .createAlarm(this, 'DeadLetterDrainErrors', {
          alarmDescription: 'The dead-letter drain (redrive function) failed: dead letters may be piling up',
          threshold: 0,
          comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
          evaluationPeriods: 1,
          treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
        }),
    );
    alarms.push(
      props.redrive.function
        .metricInvocations({ period: drainWindow, statistic: 'Sum' })
        .createAlarm(this, 'DeadLetterDrainSilence', {
          alarmDescription: `The dead-letter drain (redrive function) has not run for ${drainWindow.toHumanString()}: its schedule is not invoking it`,
          threshold: 1,
          comparisonOperator: cloudwatch.ComparisonOperator.LESS_THAN_THRESHOLD,
          evaluationPeriods: 1,
          // Silence is the failure: a missing data point counts against the drain.
          treatMissingData: cloudwatch.TreatMissingData.BREACHING,
        }),
    );
    for (const [tierName, queues] of tiersByName(props.tierQueues)) {
      const threshold = thresholds[tierName] ?? DEFAULT_OLDEST_AGE.low;
      // An alarm's metric math takes at most 10 metrics: the held age and up to 9 shards' queues.
      for (let first = 0; first < queues.length; first += ALARM_QUEUES) {
        const group = queues.slice(first, first + ALARM_QUEUES);
        const id = `OldestAge-tier-${tierName}${first === 0 ? '' : `-${first / ALARM_QUEUES}`}`;
        alarms.push(
          this.oldestWaiting(group, tierName, Duration.minutes(5)).createAlarm(this, id, {
            alarmDescription: `Oldest ${tierName} task has waited over ${threshold.toHumanString()}: capacity or the scheduler is behind`,
            threshold: threshold.toSeconds(),
            comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
            evaluationPeriods: 2,
            treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
          }),
        );
      }
    }
    // Lambda's own Errors: a failed invocation is one whether the handler threw (it also counts
    // SchedulerErrors then, which would only duplicate this) or crashed or timed out.
    const schedulerErrors = props.schedulerFunction.metricErrors({ period: Duration.minutes(1), statistic: 'Sum' });
    alarms.push(
      schedulerErrors.createAlarm(this, 'SchedulerErrors', {
        alarmDescription: 'Scheduler invocations failed (threw, crashed or timed out) in 3 of the last 5 minutes',
        threshold: 0,
        comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
        evaluationPeriods: 5,
        datapointsToAlarm: 3,
        treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
      }),
    );
    alarms.push(
      this.metric(METRIC.schedulerTickErrors).createAlarm(this, 'SchedulerTickErrors', {
        alarmDescription:
          'Scheduler ticks failed in 3 of the last 5 minutes (the loop survives each failure and starts over, so only this metric shows it)',
        threshold: 0,
        comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
        evaluationPeriods: 5,
        datapointsToAlarm: 3,
        treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
      }),
    );
    alarms.push(
      // Every invocation completes a pass, the per-minute tick included when it finds nothing to
      // do (scaled to zero), unless every tick of it failed.
      this.metric(METRIC.schedulerLoopCompleted).createAlarm(this, 'SchedulerSilence', {
        alarmDescription: `No scheduler pass completed for ${silenceMinutes} minutes: neither the tick nor a running scheduler works`,
        threshold: 1,
        comparisonOperator: cloudwatch.ComparisonOperator.LESS_THAN_THRESHOLD,
        evaluationPeriods: silenceMinutes,
        // Silence is the failure: a missing data point counts against the scheduler.
        treatMissingData: cloudwatch.TreatMissingData.BREACHING,
      }),
    );
    // A scheduler service task down: the Lambda stands in, but hand-overs come back every 5 minutes.
    for (const [shard, service] of (props.schedulerServices ?? []).entries()) {
      const running = new cloudwatch.Metric({
        namespace: 'ECS/ContainerInsights',
        metricName: 'RunningTaskCount',
        dimensionsMap: { ClusterName: service.cluster.clusterName, ServiceName: service.serviceName },
        period: Duration.minutes(1),
        statistic: 'Minimum',
      });
      alarms.push(
        running.createAlarm(this, `SchedulerServiceDown-s${shard}`, {
          alarmDescription: `The scheduler service of shard ${shard} ran no task for 5 minutes: the scheduler Lambda stands in`,
          threshold: 1,
          comparisonOperator: cloudwatch.ComparisonOperator.LESS_THAN_THRESHOLD,
          evaluationPeriods: 5,
          // No data is no running task (Container Insights publishes while the service exists).
          treatMissingData: cloudwatch.TreatMissingData.BREACHING,
        }),
      );
    }
    this.alarms = alarms;

    if (props.alarmEmail) {
      // CloudWatch cannot publish to a topic under the AWS-managed SNS key, so the topic gets its own.
      const key = new kms.Key(this, 'AlarmTopicKey', {
        description: 'Encrypts the task scheduler alarm topic',
        enableKeyRotation: true,
      });
      key.grant(new iam.ServicePrincipal('cloudwatch.amazonaws.com'), 'kms:Decrypt', 'kms:GenerateDataKey*');
      this.topic = new sns.Topic(this, 'AlarmTopic', {
        displayName: 'Task scheduler alarms',
        masterKey: key,
        enforceSSL: true,
      });
      this.topic.addSubscription(new subscriptions.EmailSubscription(props.alarmEmail));
      const action = new actions.SnsAction(this.topic);
      for (const alarm of alarms) {
        alarm.addAlarmAction(action);
        alarm.addOkAction(action);
      }
    }

    if (props.dashboard === false) return;
    const dashboard = new cloudwatch.Dashboard(this, 'Dashboard', {
      ...(props.dashboardName ? { dashboardName: props.dashboardName } : {}),
      defaultInterval: Duration.hours(3),
    });
    const perQueue = (queues: readonly DefinedQueue[], pick: (queue: sqs.IQueue) => cloudwatch.IMetric) =>
      queues.map(({ definition, queue }) => withLabel(pick(queue), definition.id));
    const running: cloudwatch.IMetric[] = perQueue(props.workerQueues, (queue) =>
      queue.metricApproximateNumberOfMessagesNotVisible({ period: Duration.minutes(1), statistic: 'Maximum' }),
    );
    for (const worker of props.workerFunctions) {
      running.push(
        withLabel(
          worker.function.metric('ConcurrentExecutions', { period: Duration.minutes(1), statistic: 'Maximum' }),
          `Lambda workers running (${worker.memoryMiB} MiB)`,
        ),
      );
    }
    if (props.fargateService) {
      running.push(
        new cloudwatch.Metric({
          namespace: 'ECS/ContainerInsights',
          metricName: 'RunningTaskCount',
          dimensionsMap: {
            ClusterName: props.fargateService.cluster.clusterName,
            ServiceName: props.fargateService.serviceName,
          },
          period: Duration.minutes(1),
          statistic: 'Maximum',
          label: 'Fargate workers running',
        }),
      );
    }
    dashboard.addWidgets(
      new cloudwatch.GraphWidget({
        title: 'Queue depth per tier (waiting)',
        left: perQueue(props.tierQueues, (queue) =>
          queue.metricApproximateNumberOfMessagesVisible({ period: Duration.minutes(1), statistic: 'Maximum' }),
        ),
        width: 8,
      }),
      new cloudwatch.GraphWidget({
        title: 'Oldest waiting task per tier (s): held by the scheduler or in the queue',
        left: [...tiersByName(props.tierQueues)].map(([tierName, queues]) =>
          this.oldestWaiting(queues, tierName, Duration.minutes(1)),
        ),
        width: 8,
      }),
      new cloudwatch.GraphWidget({
        title: 'Submitted and dispatched per minute',
        left: [this.metric(METRIC.tasksSubmitted), this.metric(METRIC.tasksDispatched)],
        width: 8,
      }),
    );
    dashboard.addWidgets(
      new cloudwatch.GraphWidget({
        title: 'Running per pool (in flight on worker queues)',
        left: running,
        width: 8,
      }),
      new cloudwatch.GraphWidget({
        title: 'Outcomes per minute',
        left: [
          this.metric(METRIC.tasksSucceeded),
          this.metric(METRIC.tasksFailed),
          this.metric(METRIC.tasksRetried),
          this.metric(METRIC.deadLettered),
        ],
        width: 8,
      }),
      new cloudwatch.GraphWidget({
        title: 'Dead-letter queue depth',
        left: props.deadLetterQueues.map(({ id: queueId, queue }) =>
          withLabel(
            queue.metricApproximateNumberOfMessagesVisible({ period: Duration.minutes(1), statistic: 'Maximum' }),
            queueId,
          ),
        ),
        width: 8,
      }),
    );
    dashboard.addWidgets(
      new cloudwatch.GraphWidget({
        title: 'Scheduler loop health',
        left: [
          this.metric(METRIC.schedulerLoopCompleted),
          this.metric(METRIC.schedulerErrors),
          this.metric(METRIC.schedulerTickErrors),
        ],
        right: [
          props.schedulerFunction.metricErrors({ period: Duration.minutes(1), statistic: 'Sum' }),
          props.schedulerFunction.metricThrottles({ period: Duration.minutes(1), statistic: 'Sum' }),
        ],
        width: 8,
      }),
      new cloudwatch.GraphWidget({
        title: 'API (handler)',
        left: [
          props.apiFunction.metricInvocations({ period: Duration.minutes(1), statistic: 'Sum' }),
          props.apiFunction.metricErrors({ period: Duration.minutes(1), statistic: 'Sum' }),
        ],
        right: [props.apiFunction.metricDuration({ period: Duration.minutes(1), statistic: 'p99' })],
        width: 8,
      }),
      new cloudwatch.AlarmStatusWidget({ title: 'Alarms', alarms, width: 8 }),
    );
    this.dashboard = dashboard;
  }

  /**
   * A tier's oldest waiting task, whichever is older: the scheduler's own OldestWaitingSeconds
   * (from `agingFrom`, over the intake's windows, which hold every active tenant-tier's oldest
   * due task: docs/intake.md) or the oldest announcement not yet consumed. Since the intake
   * deletes announcements within the tick, SQS's ApproximateAgeOfOldestMessage only says
   * whether the scheduler is consuming; waiting work is in the task table, not the queue.
   */
  public oldestWaiting(
    queues: readonly DefinedQueue[],
    tierName: PriorityTier,
    period: Duration,
  ): cloudwatch.MathExpression {
    // Ids unique per tier (the dashboard graphs every tier's expression together) and per shard.
    const queuedIds = queues.map((_, i) => `queued_${tierName}${i === 0 ? '' : `_${i}`}`);
    return new cloudwatch.MathExpression({
      expression: `MAX([FILL(held_${tierName}, 0), ${queuedIds.map((id) => `FILL(${id}, 0)`).join(', ')}])`,
      usingMetrics: {
        [`held_${tierName}`]: new cloudwatch.Metric({
          namespace: METRICS_NAMESPACE,
          metricName: METRIC.oldestWaitingSeconds,
          dimensionsMap: { [DIMENSION.service]: this.#serviceName, [DIMENSION.tier]: tierName },
          statistic: 'Maximum',
          period,
        }),
        ...Object.fromEntries(
          queues.map((tier, i) => [
            queuedIds[i]!,
            tier.queue.metricApproximateAgeOfOldestMessage({ period, statistic: 'Maximum' }),
          ]),
        ),
      },
      label: tierName,
      period,
    });
  }

  /** A runtime metric (Sum per minute) on the dimension set the runtime publishes with. */
  public metric(name: MetricName): cloudwatch.Metric {
    return new cloudwatch.Metric({
      namespace: METRICS_NAMESPACE,
      metricName: name,
      dimensionsMap: { [DIMENSION.service]: this.#serviceName },
      statistic: 'Sum',
      period: Duration.minutes(1),
    });
  }
}

const withLabel = (metric: cloudwatch.IMetric, label: string): cloudwatch.IMetric =>
  metric instanceof cloudwatch.Metric ? metric.with({ label }) : metric;

/** Metrics an alarm's metric math may use besides the scheduler's held age. */
const ALARM_QUEUES = 9;

/** The tier queues by tier, every scheduler shard's together (`tier-high`, `tier-high-s1`, …). */
function tiersByName(tierQueues: readonly DefinedQueue[]): Map<PriorityTier, DefinedQueue[]> {
  return Map.groupBy(
    tierQueues,
    (tier) => tier.definition.id.replace(/^tier-/, '').replace(/-s\d+$/, '') as PriorityTier,
  );
}
