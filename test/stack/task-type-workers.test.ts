/**
 * taskTypeWorkers: a task type run by the user's own function or container image from a queue
 * of its own. The scheduler must dispatch there (TASK_TYPE_QUEUES), the redrive drain its dead
 * letters, and the consumer hold the environment and grants a pool worker has.
 */
import * as path from 'node:path';
import { App, Duration, Validations } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import * as ecs from 'aws-cdk-lib/aws-ecs';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { AwsSolutionsChecks } from 'cdk-nag';
import { beforeAll, describe, expect, it } from 'vitest';
import { TaskSchedulerStack } from '../../lib/task-scheduler-stack.ts';
import type { TaskTypeWorker } from '../../lib/task-type-workers.ts';
import { parseConfig } from '../../runtime/core/config.ts';
import { ENV, taskTypeQueue } from '../../runtime/infra/resources.ts';
import { cdkJsonContext, defaultConfigInput, grantsOf, logicalId, projectFixture, resourcesFor } from './helpers.ts';

const WORKERS: readonly TaskTypeWorker[] = [
  // A function built from the user's entry, with the stack's function defaults.
  { type: 'user.ocr', entry: 'runtime/handlers/worker.ts', timeout: Duration.minutes(5), memoryMiB: 2048 },
  // A function of the user's, built in the scope the stack gives it.
  {
    type: 'user.thumbs',
    function: (scope) => {
      const role = new iam.Role(scope, 'ThumbsRole', { assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com') });
      return new lambda.Function(scope, 'Thumbs', {
        runtime: lambda.Runtime.NODEJS_24_X,
        handler: 'index.handler',
        code: lambda.Code.fromInline('exports.handler = async () => ({ batchItemFailures: [] });'),
        timeout: Duration.seconds(60),
        role,
      });
    },
  },
  // A container image of the user's (from a registry here; fromAsset in a real app).
  { type: 'user.render', image: ecs.ContainerImage.fromRegistry('example/render:1'), cpu: 512, memoryMiB: 1024 },
];

const SCHEDULER_ARN = 'arn:AWS::Partition:lambda:AWS::Region:AWS::AccountId:function:TypeWorkers-scheduler';

interface Built {
  app: App;
  stack: TaskSchedulerStack;
  template: Template;
}

function build(): Built {
  const app = new App({ context: { ...cdkJsonContext(), 'aws:cdk:bundling-stacks': [] } });
  const config = parseConfig(defaultConfigInput());
  const stack = new TaskSchedulerStack(app, 'TypeWorkers', {
    config,
    projectRoot: projectFixture(),
    taskTypeWorkers: WORKERS,
  });
  return { app, stack, template: Template.fromStack(stack) };
}

let built: Built;
beforeAll(() => {
  built = build();
});

const resourceOf = (template: Template, id: string) => template.toJSON().Resources[id];

describe('Construct: TaskTypeWorkers (taskTypeWorkers)', () => {
  it('gives each type its queue and dead-letter queue, sized to its consumer, and tells the scheduler and redrive', () => {
    const { stack, template } = built;
    const expected = {
      'user.ocr': taskTypeQueue('user.ocr', 6 * 300),
      'user.thumbs': taskTypeQueue('user.thumbs', 6 * 60),
      'user.render': taskTypeQueue('user.render', 300),
    };
    for (const definition of Object.values(expected)) {
      const { queue, deadLetterQueue } = stack.queues.get(definition.id);
      const properties = resourceOf(template, logicalId(stack, queue)).Properties;
      expect(properties.QueueName).toBe(`TypeWorkers-${definition.id}`);
      expect(properties.VisibilityTimeout).toBe(definition.visibilityTimeoutSeconds);
      expect(properties.RedrivePolicy.deadLetterTargetArn).toEqual({
        'Fn::GetAtt': [logicalId(stack, deadLetterQueue!), 'Arn'],
      });
    }
    const variablesOf = (wrapper: { function: lambda.IFunction }) =>
      resourceOf(template, logicalId(stack, wrapper.function)).Properties.Environment.Variables;
    for (const wrapper of [stack.scheduler.handler, stack.redrive.handler]) {
      expect(JSON.parse(variablesOf(wrapper)[ENV.taskTypeQueues]), wrapper.node.path).toEqual(expected);
      expect(JSON.stringify(variablesOf(wrapper)[ENV.queueUrls])).toContain('QueuesWorkerTypeUserOcr');
    }
    // Nothing else dispatches to them or drains them: every URL counts against Lambda's 4 KB.
    for (const wrapper of [stack.api.handler, stack.lambdaWorkers.handler]) {
      expect(variablesOf(wrapper)[ENV.taskTypeQueues], wrapper.node.path).toBeUndefined();
      expect(JSON.stringify(variablesOf(wrapper)[ENV.queueUrls])).not.toContain('WorkerType');
    }
    // The scheduler sends each type's attempts to its queue; the redrive drains its dead letters.
    const scheduler = grantsOf(template, logicalId(stack, stack.scheduler.handler.role));
    const redrive = grantsOf(template, logicalId(stack, stack.redrive.handler.role));
    for (const definition of Object.values(expected)) {
      const { queue, deadLetterQueue } = stack.queues.get(definition.id);
      expect(resourcesFor(scheduler, 'sqs:SendMessage')).toContain(logicalId(stack, queue));
      expect(resourcesFor(redrive, 'sqs:ReceiveMessage')).toContain(logicalId(stack, deadLetterQueue!));
    }
  });

  it('wires each function: an event source on its queue, the environment and the grants of a pool worker', () => {
    const { stack, template } = built;
    const workers = stack.taskTypeWorkers!.workers;
    for (const type of ['user.ocr', 'user.thumbs']) {
      const worker = workers.find((w) => w.type === type)!;
      const fn = worker.function!;
      const mappings = Object.values(template.findResources('AWS::Lambda::EventSourceMapping')).filter(
        (mapping) => mapping.Properties.FunctionName.Ref === logicalId(stack, fn),
      );
      expect(mappings, type).toHaveLength(1);
      expect(mappings[0]!.Properties).toMatchObject({
        EventSourceArn: { 'Fn::GetAtt': [logicalId(stack, worker.queue.queue), 'Arn'] },
        BatchSize: 1,
        FunctionResponseTypes: ['ReportBatchItemFailures'],
        ScalingConfig: { MaximumConcurrency: 50 },
      });
      const variables = resourceOf(template, logicalId(stack, fn)).Properties.Environment.Variables;
      for (const name of [ENV.tasksTable, ENV.controlTable, ENV.queueUrls, ENV.configJson, ENV.schedulerFunction]) {
        expect(variables[name], `${type} ${name}`).toBeDefined();
      }
      const grants = grantsOf(template, logicalId(stack, fn.role!));
      expect(resourcesFor(grants, 'dynamodb:UpdateItem'), type).toContain(logicalId(stack, stack.tables.tasks));
      expect(resourcesFor(grants, 'sqs:SendMessage'), type).toEqual(
        [stack.queues.completions, ...stack.queues.tiers].map((q) => logicalId(stack, q.queue)).sort(),
      );
      // The scheduler is invoked by its physical name (it must know its own ARN before it exists).
      expect(resourcesFor(grants, 'lambda:InvokeFunction'), type).toEqual([SCHEDULER_ARN]);
    }
    // The entry's function has the stack's defaults: arm64, Node 24, its memory and timeout.
    const ocr = resourceOf(template, logicalId(stack, workers.find((w) => w.type === 'user.ocr')!.function!));
    expect(ocr.Properties).toMatchObject({
      Architectures: ['arm64'],
      Runtime: 'nodejs24.x',
      MemorySize: 2048,
      Timeout: 300,
    });
  });

  it('runs a container type as its own Fargate service polling its queue, in the pool network', () => {
    const { stack, template } = built;
    const render = stack.taskTypeWorkers!.workers.find((w) => w.type === 'user.render')!;
    const service = render.service!;
    const container = resourceOf(template, logicalId(stack, service.taskDefinition)).Properties.ContainerDefinitions[0];
    expect(container.Image).toBe('example/render:1');
    const environment = Object.fromEntries(
      (container.Environment as { Name: string; Value: unknown }[]).map((entry) => [entry.Name, entry.Value]),
    );
    expect(environment[ENV.workerQueue]).toBe(render.queue.definition.id);
    expect(environment.WORKER_CONCURRENCY).toBe('2');
    const grants = grantsOf(template, logicalId(stack, service.taskDefinition.taskRole));
    expect(resourcesFor(grants, 'sqs:ReceiveMessage')).toEqual([logicalId(stack, render.queue.queue)]);
    expect(resourcesFor(grants, 'lambda:InvokeFunction')).toEqual([SCHEDULER_ARN]);
    // The pool's VPC, public subnets and a public IP as the pool's workers have (no NAT gateway).
    expect(service.vpc).toBe(stack.fargateWorkers.vpc);
    const network = resourceOf(template, logicalId(stack, service.service)).Properties.NetworkConfiguration;
    expect(network.AwsvpcConfiguration.AssignPublicIp).toBe('ENABLED');
  });

  it('is cdk-nag clean with the repository’s acknowledgements alone', () => {
    const app = new App({ context: { ...cdkJsonContext(), 'aws:cdk:bundling-stacks': [] } });
    new TaskSchedulerStack(app, 'TypeWorkersNag', {
      config: parseConfig(defaultConfigInput()),
      projectRoot: projectFixture(),
      taskTypeWorkers: WORKERS,
    });
    Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
    let error: unknown;
    try {
      app.synth();
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeUndefined();
  });

  it('refuses a type given two workers', () => {
    const config = parseConfig(defaultConfigInput());
    const twice = () =>
      new TaskSchedulerStack(new App({ context: { 'aws:cdk:bundling-stacks': [] } }), 'Twice', {
        config,
        projectRoot: projectFixture(),
        taskTypeWorkers: [
          { type: 'user.x', entry: path.join(projectFixture(), 'runtime/handlers/worker.ts') },
          { type: 'user.x', image: ecs.ContainerImage.fromRegistry('x') },
        ],
      });
    expect(twice).toThrow('TaskTypeWorkers: task type "user.x" has two workers');
  });
});
