import { readFileSync } from 'node:fs';
import { Match } from 'aws-cdk-lib/assertions';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import { beforeAll, describe, expect, it } from 'vitest';
import { backlogScalingSteps } from '../../lib/fargate-workers.ts';
import { PRIORITY_TIERS } from '../../runtime/core/task.ts';
import { DEFAULT_SERVICE_NAME, METRIC, METRICS_NAMESPACE } from '../../runtime/infra/telemetry.ts';
import { defaultConfigInput, logicalId, type Synthesized, synthesize } from './helpers.ts';

let synth: Synthesized;
beforeAll(() => {
  synth = synthesize();
});

describe('Construct: NightlySchedules', () => {
  it('schedules the nightly payments reconciliation at 02:00 UTC with retries and a dead-letter queue', () => {
    const { template, stack } = synth;
    template.hasResourceProperties('AWS::Scheduler::Schedule', {
      ScheduleExpression: 'cron(0 2 * * ? *)',
      ScheduleExpressionTimezone: 'UTC',
      State: 'ENABLED',
      FlexibleTimeWindow: { Mode: 'OFF' },
      Target: {
        Arn: { 'Fn::GetAtt': [logicalId(stack, stack.schedules!.handler.function), 'Arn'] },
        RoleArn: { 'Fn::GetAtt': [logicalId(stack, stack.schedules!.invokeRole), 'Arn'] },
        RetryPolicy: { MaximumRetryAttempts: 10, MaximumEventAgeInSeconds: 7200 },
        DeadLetterConfig: { Arn: { 'Fn::GetAtt': [logicalId(stack, stack.schedules!.deadLetterQueue), 'Arn'] } },
      },
    });
  });

  it('passes the schedule name, the scheduled-time placeholder, the time zone and the task template as input', () => {
    const schedule = synth.stack.schedules!.schedules.get('nightly-payments-reconciliation')!;
    const target = synth.stack.resolve(schedule.target) as { input: string };
    expect(JSON.parse(target.input)).toEqual({
      scheduleName: 'nightly-payments-reconciliation',
      scheduledTime: '<aws.scheduler.scheduled-time>',
      // {{date}} is the scheduled date in this zone.
      timezone: 'UTC',
      task: {
        tenantId: 'finance',
        type: 'examples.payments-reconciliation',
        // The scheduled date, minus a day: a 02:00 run reconciles the night that just ended.
        payload: { night: '{{date}}', offsetDays: -1 },
        priority: 'high',
        maxAttempts: 5,
      },
    });
  });

  it('keeps a disabled schedule, disabled, in its time zone', () => {
    // Prepare
    const input = defaultConfigInput();
    const schedule = {
      name: 'weekly-sales',
      cron: 'cron(30 6 ? * MON *)',
      timezone: 'Europe/Paris',
      enabled: false,
      // weekStart must be a Monday: the firing's date, which the synth's check of the schedule uses.
      task: {
        tenantId: 'bistro',
        type: 'examples.weekly-sales-report',
        payload: { restaurantId: 'r1', weekStart: '{{date}}' },
      },
    };

    // Act
    const { template } = synthesize({ config: { ...input, schedules: [...(input.schedules ?? []), schedule] } });

    // Assess: the two configured, the scheduler's tick and the dead-letter drain.
    template.resourceCountIs('AWS::Scheduler::Schedule', 4);
    template.hasResourceProperties('AWS::Scheduler::Schedule', {
      ScheduleExpression: 'cron(30 6 ? * MON *)',
      ScheduleExpressionTimezone: 'Europe/Paris',
      State: 'DISABLED',
    });
  });

  it('creates no schedule machinery when the configuration has no schedules', () => {
    const { template, stack } = synthesize({ config: { ...defaultConfigInput(), schedules: [] } });
    expect(stack.schedules).toBeUndefined();
    // Only the scheduler's one-minute tick and the dead-letter drain remain.
    template.resourceCountIs('AWS::Scheduler::Schedule', 2);
  });
});

describe('Construct: FargateWorkers', () => {
  it('runs the worker image on ARM64 Fargate, sized by default at 1 vCPU / 2 GiB', () => {
    const { template } = synth;
    template.hasResourceProperties('AWS::ECS::TaskDefinition', {
      Cpu: '1024',
      Memory: '2048',
      RequiresCompatibilities: ['FARGATE'],
      RuntimePlatform: { CpuArchitecture: 'ARM64', OperatingSystemFamily: 'LINUX' },
      ContainerDefinitions: [
        Match.objectLike({
          StopTimeout: 120,
          LogConfiguration: Match.objectLike({ LogDriver: 'awslogs' }),
          // 4 attempts per vCPU, the worker program's own default, stated so scaling agrees.
          Environment: Match.arrayWith([{ Name: 'WORKER_CONCURRENCY', Value: '4' }]),
        }),
      ],
    });
  });

  it('starts with no worker running (an explicit desired count of 0): backlog scaling starts workers', () => {
    synth.template.hasResourceProperties('AWS::ECS::Service', { DesiredCount: 0 });
  });

  it('the Fargate worker can wake the scheduler: it is told its name', () => {
    const { template, stack } = synth;
    template.hasResourceProperties('AWS::ECS::TaskDefinition', {
      ContainerDefinitions: [
        Match.objectLike({
          Environment: Match.arrayWith([{ Name: 'SCHEDULER_FUNCTION', Value: stack.scheduler.functionName }]),
        }),
      ],
    });
  });

  it('puts the service in public subnets with a public IP, no NAT gateway and no inbound rule', () => {
    const { template } = synth;
    template.resourceCountIs('AWS::EC2::NatGateway', 0);
    template.hasResourceProperties('AWS::ECS::Service', {
      LaunchType: 'FARGATE',
      NetworkConfiguration: { AwsvpcConfiguration: Match.objectLike({ AssignPublicIp: 'ENABLED' }) },
      DeploymentConfiguration: Match.objectLike({ DeploymentCircuitBreaker: { Enable: true, Rollback: true } }),
    });
    template.hasResourceProperties('AWS::EC2::SecurityGroup', {
      GroupDescription: Match.stringLikeRegexp('Fargate workers'),
      SecurityGroupIngress: Match.absent(),
    });
    template.hasResourceProperties('AWS::EC2::FlowLog', { TrafficType: 'REJECT' });
  });

  it('scales from zero to the pool capacity on the worker-fargate backlog', () => {
    const { template, stack, config } = synth;
    // 16 vCPU and 32 GiB of pool in 1 vCPU / 2 GiB workers.
    expect(stack.fargateWorkers.maxWorkers).toBe(
      Math.min(config.pools.fargate.vcpu, config.pools.fargate.memoryMiB / 2048),
    );
    template.hasResourceProperties('AWS::ApplicationAutoScaling::ScalableTarget', {
      MinCapacity: 0,
      MaxCapacity: stack.fargateWorkers.maxWorkers,
      ScalableDimension: 'ecs:service:DesiredCount',
    });
    template.hasResourceProperties('AWS::ApplicationAutoScaling::ScalingPolicy', {
      PolicyType: 'StepScaling',
      StepScalingPolicyConfiguration: Match.objectLike({ AdjustmentType: 'ExactCapacity' }),
    });
    const queueId = logicalId(stack, stack.queues.get('worker-fargate').queue);
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      Metrics: Match.arrayWith([
        Match.objectLike({
          MetricStat: Match.objectLike({
            Metric: {
              Namespace: 'AWS/SQS',
              MetricName: 'ApproximateNumberOfMessagesVisible',
              Dimensions: [{ Name: 'QueueName', Value: { 'Fn::GetAtt': [queueId, 'QueueName'] } }],
            },
          }),
        }),
      ]),
    });
  });

  it.each([
    [1, 1, [0, 1]],
    [16, 1, [0, 1, 2, 4, 8, 16]],
    [16, 4, [0, 1, 2, 4, 8, 16]],
    [20, 4, [0, 1, 2, 4, 8, 16, 20]],
  ])('with at most %i workers of %i tasks, has a slot for every message', (max, perWorker, workers) => {
    const steps = backlogScalingSteps(max, perWorker);
    expect(steps.map((step) => step.change)).toEqual(workers);
    for (const step of steps) {
      // The largest backlog of the step still fits its workers (until the pool cap).
      const largest = step.upper === undefined ? max * perWorker : step.upper - 1;
      expect(step.change * perWorker).toBeGreaterThanOrEqual(Math.min(largest, max * perWorker));
    }
    expect(steps.length).toBeLessThanOrEqual(20); // Application Auto Scaling's limit per policy
  });
});

describe('Construct: Monitoring', () => {
  it('alarms on dead letters, the drain, the oldest message per tier, scheduler errors and silence', () => {
    const { template, stack } = synth;
    const alarms = Object.values(template.findResources('AWS::CloudWatch::Alarm')).map(
      (alarm) => alarm.Properties as Record<string, unknown>,
    );
    // Depth alarms only where no drain counts dead letters: the schedules' dead-letter queue.
    const deadLetterAlarms = alarms.filter((alarm) => alarm.MetricName === 'ApproximateNumberOfMessagesVisible');
    expect(deadLetterAlarms).toEqual([
      expect.objectContaining({
        Threshold: 0,
        ComparisonOperator: 'GreaterThanThreshold',
        Dimensions: [
          {
            Name: 'QueueName',
            Value: { 'Fn::GetAtt': [logicalId(stack, stack.schedules!.deadLetterQueue), 'QueueName'] },
          },
        ],
      }),
    ]);
    // The drain of the worker and tier dead-letter queues: it must succeed, and it must run.
    const redrive = logicalId(stack, stack.redrive.handler.function);
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      Namespace: 'AWS/Lambda',
      MetricName: 'Errors',
      Dimensions: [{ Name: 'FunctionName', Value: { Ref: redrive } }],
      ComparisonOperator: 'GreaterThanThreshold',
      Threshold: 0,
    });
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      Namespace: 'AWS/Lambda',
      MetricName: 'Invocations',
      Dimensions: [{ Name: 'FunctionName', Value: { Ref: redrive } }],
      ComparisonOperator: 'LessThanThreshold',
      Threshold: 1,
      Period: 900,
      TreatMissingData: 'breaching',
    });
    // Oldest waiting per tier: the older of the scheduler's own age (held tasks, which SQS's
    // metric cannot see once received 3+ times) and the queue's oldest message.
    const ageAlarms = alarms.filter((alarm) =>
      JSON.stringify(alarm.Metrics ?? []).includes(METRIC.oldestWaitingSeconds),
    );
    expect(ageAlarms.map((alarm) => alarm.Threshold)).toEqual([300, 900, 3600, 14_400]);
    PRIORITY_TIERS.forEach((tier, index) => {
      const metrics = ageAlarms[index]!.Metrics as {
        Expression?: string;
        MetricStat?: { Metric: { MetricName: string; Dimensions: { Name: string; Value: string }[] } };
      }[];
      expect(metrics.find((m) => m.Expression)?.Expression).toBe(
        `MAX([FILL(held_${tier}, 0), FILL(queued_${tier}, 0)])`,
      );
      const names = metrics.flatMap((m) => (m.MetricStat ? [m.MetricStat.Metric.MetricName] : []));
      expect(names.sort()).toEqual(['ApproximateAgeOfOldestMessage', METRIC.oldestWaitingSeconds]);
      const held = metrics.find((m) => m.MetricStat?.Metric.MetricName === METRIC.oldestWaitingSeconds)!;
      expect(held.MetricStat!.Metric.Dimensions).toEqual(
        expect.arrayContaining([
          { Name: 'service', Value: DEFAULT_SERVICE_NAME },
          { Name: 'tier', Value: tier },
        ]),
      );
    });

    // Tick errors: the loop survives each one, so only this metric shows a scheduler failing every tick.
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      Namespace: METRICS_NAMESPACE,
      MetricName: METRIC.schedulerTickErrors,
      Dimensions: [{ Name: 'service', Value: DEFAULT_SERVICE_NAME }],
      ComparisonOperator: 'GreaterThanThreshold',
      Threshold: 0,
      EvaluationPeriods: 5,
      DatapointsToAlarm: 3,
    });

    // The drain counts each dead letter it receives: their arrival is alarmed.
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      Namespace: METRICS_NAMESPACE,
      MetricName: METRIC.deadLettered,
      Dimensions: [{ Name: 'service', Value: DEFAULT_SERVICE_NAME }],
      Statistic: 'Sum',
      ComparisonOperator: 'GreaterThanThreshold',
      Threshold: 0,
    });
    // The registry backstop's finds: announced again, but each one is a lost announcement.
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      Namespace: METRICS_NAMESPACE,
      MetricName: METRIC.unregisteredQueued,
      Dimensions: [{ Name: 'service', Value: DEFAULT_SERVICE_NAME }],
      Statistic: 'Sum',
      ComparisonOperator: 'GreaterThanThreshold',
      Threshold: 0,
      TreatMissingData: 'notBreaching',
    });
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      Namespace: METRICS_NAMESPACE,
      MetricName: METRIC.schedulerLoopCompleted,
      Dimensions: [{ Name: 'service', Value: DEFAULT_SERVICE_NAME }],
      ComparisonOperator: 'LessThanThreshold',
      Threshold: 1,
      EvaluationPeriods: 5,
      TreatMissingData: 'breaching',
    });
    // Lambda's own Errors count every failed scheduler invocation, thrown, crashed or timed out.
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      AlarmDescription: Match.stringLikeRegexp('Scheduler invocations failed'),
      Namespace: 'AWS/Lambda',
      MetricName: 'Errors',
      Dimensions: [{ Name: 'FunctionName', Value: { Ref: logicalId(stack, stack.scheduler.handler.function) } }],
    });
  });

  it('builds no dashboard by default ($3 a month), and no alarm topic unless an address is configured', () => {
    synth.template.resourceCountIs('AWS::CloudWatch::Dashboard', 0);
    synth.template.resourceCountIs('AWS::SNS::Topic', 0);
    expect(Object.keys(synth.template.toJSON().Outputs)).not.toContain('DashboardName');
  });

  it('builds the dashboard under the stack name with deploy.dashboard', () => {
    const input = defaultConfigInput();
    const { template, stack } = synthesize({ config: { ...input, deploy: { ...input.deploy, dashboard: true } } });
    template.hasResourceProperties('AWS::CloudWatch::Dashboard', { DashboardName: stack.stackName });
    expect(Object.keys(template.toJSON().Outputs)).toContain('DashboardName');
  });

  it('mails alarms through a KMS-encrypted, TLS-only topic when deploy.alarmEmail is set', () => {
    // Prepare
    const input = defaultConfigInput();

    // Act
    const { template, stack } = synthesize({
      config: { ...input, deploy: { ...input.deploy, alarmEmail: 'ops@example.com' } },
    });

    // Assess
    template.hasResourceProperties('AWS::SNS::Subscription', { Protocol: 'email', Endpoint: 'ops@example.com' });
    template.hasResourceProperties('AWS::SNS::Topic', { KmsMasterKeyId: Match.anyValue() });
    template.hasResourceProperties('AWS::KMS::Key', { EnableKeyRotation: true });
    const topicId = logicalId(stack, stack.monitoring.topic!);
    const notifying = Object.values(template.findResources('AWS::CloudWatch::Alarm')).filter((alarm) =>
      (alarm.Properties.AlarmActions as unknown[] | undefined)?.some(
        (action) => JSON.stringify(action) === JSON.stringify({ Ref: topicId }),
      ),
    );
    expect(notifying).toHaveLength(stack.monitoring.alarms.length);
  });
});

describe('Stack outputs', () => {
  it('exports the API URL, table names and every queue URL', () => {
    const outputs = Object.keys(synth.template.toJSON().Outputs);
    expect(outputs).toEqual(
      expect.arrayContaining([
        'ApiUrl',
        'TasksTableName',
        'ControlTableName',
        'ExampleResources',
        'QueueUrlTierCritical',
        'QueueUrlWorkerLambda',
        'QueueUrlWorkerLambdaDlq',
        'QueueUrlCompletions',
      ]),
    );
  });
});

describe('docs/deploy.md: the outputs table', () => {
  it('names every output the stack exports (dashboard and alarm e-mail included)', () => {
    // Prepare
    const input = defaultConfigInput();
    const { template } = synthesize({
      config: { ...input, deploy: { ...input.deploy, dashboard: true, alarmEmail: 'ops@example.com' } },
    });
    const doc = readFileSync(new URL('../../docs/deploy.md', import.meta.url), 'utf8');
    const start = doc.indexOf('| Output ');
    const table = doc.slice(start, doc.indexOf('\n\n', start));
    const documented = new Set([...table.matchAll(/`(\w+)`/g)].map((match) => match[1]));

    // Act: each output, its queue generalised as the table writes it (`QueueUrl<Queue>`).
    const outputs = Object.keys(template.toJSON().Outputs).map((key) => key.replace(/^QueueUrl\w+$/, 'QueueUrl'));

    // Assess
    expect([...new Set(outputs)].filter((key) => key !== 'QueueUrl' && !documented.has(key))).toEqual([]);
    expect(table).toContain('`QueueUrl<Queue>`');
  });
});

describe('docs/deploy.md: the alarm table', () => {
  it('names every alarm the stack creates (schedules, shards and the scheduler service included)', () => {
    // Prepare: every optional alarm on.
    const { stack } = synthesize({
      config: { ...defaultConfigInput(), scheduler: { shards: 2, mode: 'service' } },
    });
    const doc = readFileSync(new URL('../../docs/deploy.md', import.meta.url), 'utf8');
    const start = doc.indexOf('| Alarm ');
    const table = doc.slice(start, doc.indexOf('\n\n', start));
    const documented = new Set([...table.matchAll(/^\| `([^`]+)`/gm)].map((match) => match[1]));

    // Act: each alarm's construct id under Monitoring, its shard or tier generalised as the table
    // writes it (the Fargate service's two scaling alarms belong to Application Auto Scaling and
    // are described with the service).
    const created = stack.monitoring.node.children
      .filter((child) => child instanceof cloudwatch.Alarm)
      .map((alarm) =>
        alarm.node.id.replace(/-s\d+$/, '-s<k>').replace(/^OldestAge-tier-\w+$/, 'OldestAge-tier-<tier>'),
      );

    // Assess
    expect(created.length).toBeGreaterThan(0);
    expect([...new Set(created)].filter((id) => !documented.has(id))).toEqual([]);
  });
});
