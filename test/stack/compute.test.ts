import { Match } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, expect, it } from 'vitest';
import { API_ROUTES } from '../../lib/task-api.ts';
import { RUNTIME_DEPLOY_KEYS } from '../../lib/task-scheduler-stack.ts';
import { API_ROUTES as ROUTER_ROUTES } from '../../runtime/api/routes.ts';
import { parseConfig } from '../../runtime/core/config.ts';
import { EXAMPLE_RESOURCES_ENV } from '../../runtime/infra/example-resources.ts';
import { ENV, LAMBDA_WORKER_CLASSES, QUEUES } from '../../runtime/infra/resources.ts';
import { DEFAULT_SERVICE_NAME, METRICS_NAMESPACE } from '../../runtime/infra/telemetry.ts';
import { defaultRegistry } from '../../runtime/task-types/index.ts';
import { DRAIN_VISIBILITY_SECONDS, DRAINED_DEAD_LETTER_QUEUES } from '../../runtime/worker/redrive.ts';
import { defaultConfigInput, logicalId, type Synthesized, synthesize } from './helpers.ts';

let synth: Synthesized;
beforeAll(() => {
  synth = synthesize();
});

const functionsOf = (s: Synthesized) => ({
  api: s.stack.api.handler,
  scheduler: s.stack.scheduler.handler,
  worker: s.stack.lambdaWorkers.handler,
  ...Object.fromEntries(s.stack.lambdaWorkers.classes.slice(1).map((c) => [`worker${c.memoryMiB}`, c.handler])),
  redrive: s.stack.redrive.handler,
  scheduledSubmit: s.stack.schedules!.handler,
});

describe('Construct: RuntimeFunction (every function)', () => {
  it('runs nodejs24.x on arm64 with tracing, source maps and its own log group', () => {
    const { template, stack, config } = synth;
    for (const [name, wrapper] of Object.entries(functionsOf(synth))) {
      const fn = template.toJSON().Resources[logicalId(stack, wrapper.function)].Properties;
      expect(fn.Runtime, name).toBe('nodejs24.x');
      expect(fn.Architectures, name).toEqual(['arm64']);
      expect(fn.TracingConfig, name).toEqual({ Mode: 'Active' });
      expect(fn.Environment.Variables.NODE_OPTIONS, name).toBe('--enable-source-maps');
      expect(fn.LoggingConfig, name).toEqual({ LogGroup: { Ref: logicalId(stack, wrapper.logGroup) } });
      const logGroup = template.toJSON().Resources[logicalId(stack, wrapper.logGroup)].Properties;
      expect(logGroup.RetentionInDays, name).toBe(config.deploy.logRetentionDays);
      // No managed policies: the role holds only what the construct grants.
      const role = template.toJSON().Resources[logicalId(stack, wrapper.role)].Properties;
      expect(role.ManagedPolicyArns, name).toBeUndefined();
    }
  });

  it('passes the shared environment: table names, queue URLs, the validated config, Powertools settings', () => {
    const { template, stack, config } = synth;
    for (const [name, wrapper] of Object.entries(functionsOf(synth))) {
      const variables =
        template.toJSON().Resources[logicalId(stack, wrapper.function)].Properties.Environment.Variables;
      expect(variables[ENV.tasksTable], name).toEqual({ Ref: logicalId(stack, stack.tables.tasks) });
      expect(variables[ENV.controlTable], name).toEqual({ Ref: logicalId(stack, stack.tables.control) });
      // The lease ledger only where leased tasks are recorded or listed (4 KB of environment).
      expect(variables[ENV.leasesTable], name).toEqual(
        name === 'api' || name === 'scheduler' ? { Ref: logicalId(stack, stack.tables.leases) } : undefined,
      );
      // The configuration as the runtime reads it: deploy-only settings left out (4 KB of environment).
      const shipped = JSON.parse(variables[ENV.configJson]);
      expect(Object.keys(shipped.deploy).sort(), name).toEqual([...RUNTIME_DEPLOY_KEYS].sort());
      expect(parseConfig(shipped), name).toEqual({
        ...config,
        deploy: { ...parseConfig({}).deploy, ...pick(config.deploy, RUNTIME_DEPLOY_KEYS) },
      });
      expect(variables.POWERTOOLS_SERVICE_NAME, name).toBe(DEFAULT_SERVICE_NAME);
      expect(variables.POWERTOOLS_METRICS_NAMESPACE, name).toBe(METRICS_NAMESPACE);
      // QUEUE_URLS is a JSON object built from tokens: every queue and dead-letter id appears as a key.
      const queueUrls = JSON.stringify(variables[ENV.queueUrls]);
      for (const definition of QUEUES) {
        expect(queueUrls, `${name} ${definition.id}`).toContain(`\\"${definition.id}\\":`);
        if (definition.deadLetter) expect(queueUrls).toContain(`\\"${definition.deadLetter.id}\\":`);
      }
      // Only the workers run example task types.
      expect(variables[EXAMPLE_RESOURCES_ENV] !== undefined, name).toBe(name.startsWith('worker'));
    }
  });
});

describe('Construct: TaskApi', () => {
  it('routes every path to the handler and requires IAM (SigV4) on every route', () => {
    const routes = synth.template.findResources('AWS::ApiGatewayV2::Route');
    expect(
      Object.values(routes)
        .map((route) => route.Properties.RouteKey)
        .sort(),
    ).toEqual([...API_ROUTES.map((route) => `${route.method} ${route.path}`), '$default'].sort());
    for (const route of Object.values(routes)) {
      expect(route.Properties.AuthorizationType, route.Properties.RouteKey).toBe('AWS_IAM');
    }
  });

  it('sends what no route matches to the router too, so HEAD, a method a path lacks and an unknown path get its answers', () => {
    // API Gateway answers an unmatched request itself ({"message":"Not Found"}) unless a $default route
    // takes it: README promises HEAD wherever GET is, 405 method_not_allowed and 404 route_not_found.
    const routes = Object.values(synth.template.findResources('AWS::ApiGatewayV2::Route'));
    const fallback = routes.find((route) => route.Properties.RouteKey === '$default');
    const tasks = routes.find((route) => route.Properties.RouteKey === 'GET /v1/tasks');
    expect(fallback?.Properties.Target).toEqual(tasks?.Properties.Target);
    expect(fallback?.Properties.AuthorizationType).toBe('AWS_IAM');
  });

  it('deploys exactly the routes the API router serves', () => {
    const served = ROUTER_ROUTES.map((route) => `${route.method} ${route.path}`).sort();
    expect(API_ROUTES.map((route) => `${route.method} ${route.path}`).sort()).toEqual(served);
  });

  it('throttles the stage and writes access logs with the caller ARN', () => {
    const { template, stack } = synth;
    template.hasResourceProperties('AWS::ApiGatewayV2::Stage', {
      StageName: '$default',
      AutoDeploy: true,
      DefaultRouteSettings: { ThrottlingRateLimit: 100, ThrottlingBurstLimit: 200 },
      AccessLogSettings: {
        DestinationArn: { 'Fn::GetAtt': [logicalId(stack, stack.api.accessLogs), 'Arn'] },
        Format: Match.stringLikeRegexp('\\$context\\.identity\\.userArn'),
      },
    });
    template.hasResourceProperties('AWS::ApiGatewayV2::Integration', { PayloadFormatVersion: '2.0' });
  });
});

describe('Construct: SchedulerLoop', () => {
  it('is ticked every minute as a safety net, dropping ticks that cannot start', () => {
    const { template, stack } = synth;
    const fnId = logicalId(stack, stack.scheduler.handler.function);
    template.hasResourceProperties('AWS::Lambda::Function', {
      FunctionName: `${stack.stackName}-scheduler`,
      Handler: 'index.handler',
      Timeout: 300,
      Description: Match.stringLikeRegexp('scheduler loop'),
    });
    template.hasResourceProperties('AWS::Lambda::EventInvokeConfig', {
      FunctionName: { Ref: fnId },
      MaximumRetryAttempts: 0,
      MaximumEventAgeInSeconds: 60,
    });
    template.hasResourceProperties('AWS::Scheduler::Schedule', {
      ScheduleExpression: 'rate(1 minute)',
      State: 'ENABLED',
      Target: {
        Arn: { 'Fn::GetAtt': [fnId, 'Arn'] },
        RoleArn: { 'Fn::GetAtt': [logicalId(stack, stack.scheduler.invokeRole), 'Arn'] },
        // The handler tells the safety-net tick from a wake by this input.
        Input: JSON.stringify({ reason: 'tick' }),
        RetryPolicy: { MaximumRetryAttempts: 0, MaximumEventAgeInSeconds: 60 },
      },
    });
  });

  it('reserves no concurrency anywhere: the stack deploys where the account quota is 10', () => {
    const functions = Object.values(synth.template.findResources('AWS::Lambda::Function'));
    expect(functions.length).toBeGreaterThan(0);
    for (const fn of functions) expect(fn.Properties.ReservedConcurrentExecutions).toBeUndefined();
  });

  it('can be woken by every function that announces tasks, and by itself (a handover)', () => {
    const { template, stack } = synth;
    const schedulerName = stack.scheduler.functionName;
    const wakeArn = {
      'Fn::Join': [
        '',
        [
          'arn:',
          { Ref: 'AWS::Partition' },
          ':lambda:',
          { Ref: 'AWS::Region' },
          ':',
          { Ref: 'AWS::AccountId' },
          `:function:${schedulerName}`,
        ],
      ],
    };
    const announcers = {
      api: stack.api.handler.role,
      ...Object.fromEntries(stack.lambdaWorkers.classes.map((c) => [`worker${c.memoryMiB}`, c.handler.role])),
      redrive: stack.redrive.handler.role,
      scheduledSubmit: stack.schedules!.handler.role,
      scheduler: stack.scheduler.handler.role,
      fargate: stack.fargateWorkers.taskDefinition.taskRole,
    };
    const policies = Object.values(template.findResources('AWS::IAM::Policy'));
    for (const [name, role] of Object.entries(announcers)) {
      const statements = policies
        .filter((policy) => JSON.stringify(policy.Properties.Roles).includes(logicalId(stack, role)))
        .flatMap((policy) => policy.Properties.PolicyDocument.Statement as { Action: unknown; Resource: unknown }[]);
      expect(
        statements.some(
          (statement) =>
            statement.Action === 'lambda:InvokeFunction' &&
            // The entry worker's statement also names the bigger classes' functions.
            [statement.Resource].flat().some((resource) => JSON.stringify(resource) === JSON.stringify(wakeArn)),
        ),
        name,
      ).toBe(true);
    }
    // Every function but the scheduler learns its name; the scheduler hands over to itself.
    const resources = template.toJSON().Resources;
    for (const [name, wrapper] of Object.entries(functionsOf(synth))) {
      const variables = resources[logicalId(stack, wrapper.function)].Properties.Environment.Variables;
      expect(variables[ENV.schedulerFunction], name).toBe(name === 'scheduler' ? undefined : schedulerName);
    }
  });
});

describe('Construct: LambdaWorkers', () => {
  it('consumes worker-lambda with partial batch responses and the pool capacity as maximum concurrency', () => {
    const { template, stack, config } = synth;
    template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      FunctionName: { Ref: logicalId(stack, stack.lambdaWorkers.handler.function) },
      EventSourceArn: { 'Fn::GetAtt': [logicalId(stack, stack.queues.get('worker-lambda').queue), 'Arn'] },
      FunctionResponseTypes: ['ReportBatchItemFailures'],
      ScalingConfig: { MaximumConcurrency: config.pools.lambda.concurrency },
      BatchSize: 1,
    });
  });

  it('gives every memory class its own function, and only the smallest (the entry) an event source mapping', () => {
    // Prepare
    const { template, stack } = synth;
    const resources = template.toJSON().Resources;
    const workers = stack.lambdaWorkers.classes;

    // Assess: one function per class of LAMBDA_WORKER_CLASSES, each told its own class.
    expect(workers.map((c) => c.memoryMiB)).toEqual(LAMBDA_WORKER_CLASSES.map((c) => c.memoryMiB));
    expect(workers[0]!.handler).toBe(stack.lambdaWorkers.handler);
    for (const { memoryMiB, handler } of workers) {
      const fn = resources[logicalId(stack, handler.function)].Properties;
      expect(fn.MemorySize, handler.node.path).toBe(memoryMiB);
      expect(fn.Timeout, handler.node.path).toBe(900);
      expect(fn.Environment.Variables[ENV.workerMemoryMiB], handler.node.path).toBe(String(memoryMiB));
    }
    // One mapping for the whole pool: a mapping long-polls its queue all month, idle or not.
    const mappings = Object.values(template.findResources('AWS::Lambda::EventSourceMapping'));
    const workerIds = workers.map((c) => logicalId(stack, c.handler.function));
    const polled = mappings.filter((m) =>
      workerIds.some((id) => JSON.stringify(m.Properties.FunctionName).includes(id)),
    );
    expect(polled.map((m) => m.Properties.FunctionName)).toEqual([{ Ref: workerIds[0] }]);

    // The entry finds each bigger class's function by its memory, and may invoke exactly those.
    const entry = resources[workerIds[0]!].Properties.Environment.Variables;
    const classFunctions = JSON.stringify(entry[ENV.workerClassFunctions]);
    for (const { memoryMiB, handler } of workers.slice(1)) {
      expect(classFunctions).toContain(`\\"${memoryMiB}\\":\\"`);
      expect(classFunctions).toContain(logicalId(stack, handler.function));
      expect(
        resources[logicalId(stack, handler.function)].Properties.Environment.Variables[ENV.workerClassFunctions],
      ).toBe(undefined);
      // Lambda retries a failed hand-off invocation twice; then the dispatch lease recovers the task.
      template.hasResourceProperties('AWS::Lambda::EventInvokeConfig', {
        FunctionName: { Ref: logicalId(stack, handler.function) },
        MaximumRetryAttempts: 2,
      });
    }
    const entryPolicies = Object.values(template.findResources('AWS::IAM::Policy')).filter((policy) =>
      JSON.stringify(policy.Properties.Roles).includes(logicalId(stack, stack.lambdaWorkers.handler.role)),
    );
    const invoked = entryPolicies
      .flatMap((policy) => policy.Properties.PolicyDocument.Statement as { Action: unknown; Resource: unknown }[])
      .filter((statement) => statement.Action === 'lambda:InvokeFunction')
      .flatMap((statement) => [statement.Resource].flat());
    for (const { handler } of workers.slice(1)) {
      expect(invoked).toContainEqual({ 'Fn::GetAtt': [logicalId(stack, handler.function), 'Arn'] });
    }
  });

  it('keeps the queue visibility at least six times the function timeout', () => {
    const { template, stack } = synth;
    const resources = template.toJSON().Resources;
    const pairs = [[stack.lambdaWorkers.handler.function, stack.queues.get('worker-lambda').queue]] as const;
    for (const [fn, queue] of pairs) {
      const timeout = resources[logicalId(stack, fn)].Properties.Timeout as number;
      const visibility = resources[logicalId(stack, queue)].Properties.VisibilityTimeout as number;
      expect(visibility, queue.node.path).toBeGreaterThanOrEqual(6 * timeout);
    }
  });

  it.each([
    [1, 2],
    [50, 50],
    [1000, 1000],
  ])('clamps pools.lambda.concurrency %i to MaximumConcurrency %i', (concurrency, expected) => {
    const input = defaultConfigInput();
    const { template } = synthesize({
      config: { ...input, pools: { ...input.pools!, lambda: { concurrency } } },
    });
    template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      FunctionResponseTypes: ['ReportBatchItemFailures'],
      ScalingConfig: { MaximumConcurrency: expected },
      BatchSize: 1,
    });
  });
});

describe('Example task types', () => {
  it('end their Lambda tasks before the worker function times out, so the timeout is recorded', () => {
    const { stack } = synth;
    const functionTimeout = stack.lambdaWorkers.handler.timeout.toSeconds();
    const registry = defaultRegistry();
    for (const definition of registry.names().map((name) => registry.get(name))) {
      const defaults = definition.defaults ?? {};
      if (defaults.runtime !== 'lambda' || defaults.timeoutSeconds === undefined) continue;
      // Settling the attempt (a write and a report) needs time after the task's own timeout.
      expect(defaults.timeoutSeconds, definition.type).toBeLessThanOrEqual(functionTimeout - 30);
    }
  });
});

describe('Construct: Redrive', () => {
  it('drains the worker and tier dead-letter queues on a schedule, with no event source mapping polling them', () => {
    const { template, stack } = synth;
    const redrive = logicalId(stack, stack.redrive.handler.function);
    const mappings = Object.values(template.findResources('AWS::Lambda::EventSourceMapping'));
    expect(mappings.filter((mapping) => JSON.stringify(mapping.Properties.FunctionName).includes(redrive))).toEqual([]);
    template.hasResourceProperties('AWS::Scheduler::Schedule', {
      ScheduleExpression: 'rate(5 minutes)',
      Target: Match.objectLike({ Arn: { 'Fn::GetAtt': [redrive, 'Arn'] } }),
    });
    // Each drained message stays hidden longer than a drain can run, so none is handled twice at once.
    const timeout = template.toJSON().Resources[redrive].Properties.Timeout as number;
    expect(timeout).toBeLessThan(DRAIN_VISIBILITY_SECONDS);
    expect(DRAINED_DEAD_LETTER_QUEUES).toEqual(
      [...stack.queues.workers, ...stack.queues.tiers].map((queue) => queue.definition.deadLetter!.id),
    );
  });
});

describe('Construct: FargateWorkers', () => {
  it('builds the worker image from the Dockerfile by default, and takes an image built elsewhere instead', () => {
    // Prepare: the default stack (synthesized above) and one given an image name.
    const given = synthesize({ fargateWorkerImage: 'registry.example.com/fargate-worker:1.2.3' });
    const imageOf = (s: Synthesized) =>
      (
        s.template.toJSON().Resources[logicalId(s.stack, s.stack.fargateWorkers.taskDefinition)].Properties
          .ContainerDefinitions as { Image: unknown }[]
      )[0]?.Image;

    // Assess: the default is the asset (an ECR image in the bootstrap repository, built at deploy).
    expect(JSON.stringify(imageOf(synth))).toContain('cdk-hnb659fds-container-assets');
    expect(imageOf(given)).toBe('registry.example.com/fargate-worker:1.2.3');
    expect(given.stack.fargateWorkers.imageContextBytes).toBe(0);
    // No Docker image asset left to build or publish.
    const assets = given.app.synth().getStackByName(given.stack.stackName).assets;
    expect(assets.filter((asset) => asset.packaging === 'container-image')).toEqual([]);
  });
});

function pick<T extends object, K extends keyof T>(object: T, keys: readonly K[]): Pick<T, K> {
  return Object.fromEntries(keys.map((key) => [key, object[key]])) as Pick<T, K>;
}
