/**
 * `scheduler.mode: "service"` in the stack: per shard one always-on Fargate task running the
 * scheduler's container entry, replaced start-first in a deploy, granted what the scheduler Lambda
 * is, in the workers' cluster and network; the Lambda stays as the fallback. None of it in
 * Lambda mode.
 */
import { Match } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, expect, it } from 'vitest';
import { ENV } from '../../runtime/infra/resources.ts';
import { defaultConfigInput, grantsOf, logicalId, type Synthesized, synthesize } from './helpers.ts';

const SHARDS = 2;
let synth: Synthesized;
let lambdaMode: Synthesized;
beforeAll(() => {
  const config = defaultConfigInput();
  synth = synthesize({ config: { ...config, scheduler: { ...config.scheduler, mode: 'service', shards: SHARDS } } });
  lambdaMode = synthesize();
});

const schedulerContainers = (s: Synthesized) =>
  Object.values(s.template.findResources('AWS::ECS::TaskDefinition'))
    .flatMap(
      (definition) =>
        (
          definition.Properties as {
            ContainerDefinitions: { Name: string; Environment?: { Name: string; Value: unknown }[] }[];
          }
        ).ContainerDefinitions,
    )
    .filter((container) => container.Name === 'Scheduler');

describe('Stack: scheduler.mode "service"', () => {
  it('runs one always-on task per shard, each told its shard, replaced start-first', () => {
    const containers = schedulerContainers(synth);
    expect(containers).toHaveLength(SHARDS);
    const shards = containers.map(
      (container) => container.Environment?.find((variable) => variable.Name === ENV.schedulerShard)?.Value,
    );
    expect(shards.sort()).toEqual(['0', '1']);
    const services = synth.stack.schedulerService?.services ?? [];
    expect(services).toHaveLength(SHARDS);
    for (const service of services) {
      synth.template.hasResourceProperties('AWS::ECS::Service', {
        TaskDefinition: { Ref: logicalId(synth.stack, service.taskDefinition) },
        DesiredCount: 1,
        LaunchType: 'FARGATE',
        Cluster: { Ref: logicalId(synth.stack, synth.stack.fargateWorkers.cluster) },
        DeploymentConfiguration: Match.objectLike({ MinimumHealthyPercent: 100, MaximumPercent: 200 }),
      });
    }
    // The Lambda stays as the fallback, with its tick.
    expect(synth.stack.scheduler.handler.function).toBeDefined();
    synth.template.hasResourceProperties('AWS::Scheduler::Schedule', {
      ScheduleExpression: 'rate(1 minute)',
      Target: Match.objectLike({
        Arn: { 'Fn::GetAtt': [logicalId(synth.stack, synth.stack.scheduler.handler.function), 'Arn'] },
      }),
    });
  });

  it('grants the tasks what the scheduler Lambda is granted', () => {
    const { stack, template } = synth;
    const lambdaGrants = grantsOf(template, logicalId(stack, stack.scheduler.handler.role));
    const serviceGrants = grantsOf(template, logicalId(stack, stack.schedulerService!.taskRole));
    // Waking itself, tracing and its own log group are the Lambda's alone (the tasks log through ECS).
    const expected = [...lambdaGrants].filter((grant) => /^(dynamodb|sqs):/.test(grant));
    expect(expected.length).toBeGreaterThan(10);
    for (const grant of expected) expect(serviceGrants.has(grant), grant).toBe(true);
  });

  it("alarms when a shard's service runs no task for 5 minutes", () => {
    for (const shard of [0, 1]) {
      synth.template.hasResourceProperties('AWS::CloudWatch::Alarm', {
        Namespace: 'ECS/ContainerInsights',
        MetricName: 'RunningTaskCount',
        Dimensions: Match.arrayWith([
          Match.objectLike({
            Name: 'ServiceName',
            Value: { 'Fn::GetAtt': [logicalId(synth.stack, synth.stack.schedulerService!.services[shard]!), 'Name'] },
          }),
        ]),
        ComparisonOperator: 'LessThanThreshold',
        Threshold: 1,
        EvaluationPeriods: 5,
        TreatMissingData: 'breaching',
      });
    }
    expect(JSON.stringify(lambdaMode.template.toJSON())).not.toContain('RunningTaskCount');
  });

  it('builds nothing of it in Lambda mode', () => {
    expect(lambdaMode.stack.schedulerService).toBeUndefined();
    expect(schedulerContainers(lambdaMode)).toEqual([]);
  });
});
