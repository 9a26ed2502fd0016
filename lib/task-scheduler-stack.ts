import { createRequire } from 'node:module';
import * as os from 'node:os';
import * as path from 'node:path';
import { Aws, type CfnElement, CfnOutput, Fn, Names, Stack, type StackProps, Stage, Validations } from 'aws-cdk-lib';
import type * as ecs from 'aws-cdk-lib/aws-ecs';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import * as logs from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';
import { validateSchedules } from '../runtime/app/scheduled.ts';
import { resolveTaskSpec } from '../runtime/app/task-service.ts';
import type { SchedulerConfig } from '../runtime/core/config.ts';
import { ConfigError } from '../runtime/core/errors.ts';
import { checkWebhookFilterTypes } from '../runtime/events/webhooks.ts';
import { EXAMPLE_RESOURCES_ENV } from '../runtime/infra/example-resources.ts';
import { ENV, QUEUES, queuesFor, WEBHOOK_DELIVERY_QUEUE } from '../runtime/infra/resources.ts';
import type { AnyTaskTypeDefinition } from '../runtime/task-types/define.ts';
import { BUILT_IN_TASK_TYPE_NAMES, defaultRegistry } from '../runtime/task-types/index.ts';
import { checkTaskModules } from '../runtime/task-types/modules.ts';

/** The shared queues of one scheduler shard (tiers, pools, completions): every function's QUEUE_URLS. */
const POOL_QUEUE_IDS: ReadonlySet<string> = new Set(QUEUES.map((queue) => queue.id));

import { DEFAULT_SERVICE_NAME, METRICS_NAMESPACE, POWERTOOLS_ENV } from '../runtime/infra/telemetry.ts';
import { ExampleStores } from './example-stores.ts';
import { FARGATE_WORKER, FargateWorkers } from './fargate-workers.ts';
import { LambdaWorkers } from './lambda-workers.ts';
import { Monitoring } from './monitoring.ts';
import { NightlySchedules } from './nightly-schedules.ts';
import { Redrive } from './redrive.ts';
import { runtimeCode, writeTaskModulesInject } from './runtime-code.ts';
import type { RuntimeSettings } from './runtime-function.ts';
import { SchedulerLoop, type SchedulerResources } from './scheduler-loop.ts';
import { SchedulerService } from './scheduler-service.ts';
import { TaskApi } from './task-api.ts';
import { TaskEvents } from './task-events.ts';
import { constructId, TaskQueues } from './task-queues.ts';
import { TaskTables } from './task-tables.ts';
import {
  checkTaskTypeWorkers,
  type TaskTypeWorker,
  TaskTypeWorkers,
  taskTypeWorkerQueue,
} from './task-type-workers.ts';

export interface TaskSchedulerStackProps extends StackProps {
  /** The validated configuration (parseConfig): the same file the local runtime reads. */
  readonly config: SchedulerConfig;
  /**
   * The project that bundles the functions: its lockfile pins what esbuild bundles and its
   * node_modules resolve what the handlers import. In this repository it also holds
   * `runtime/handlers/*.ts` and the worker `Dockerfile`; from the installed package they come
   * from the package itself (lib/runtime-code.ts).
   * @default this repository; from the installed package, the current directory (where
   *   `cdk synth` runs your app)
   */
  readonly projectRoot?: string;
  /**
   * Your task modules (as for `tasks dev --task-types`), absolute or relative to projectRoot:
   * bundled into every function that runs, validates or submits tasks and into the Fargate
   * worker image, beside the built-in types, and checked as the local runtime checks them.
   * @default - none
   */
  readonly taskModules?: readonly string[];
  /**
   * Task types run by your own code instead of the pools, each from a queue of its own: a Lambda
   * function built from your entry (`{ type, entry }`, with this stack's function defaults), a
   * function of yours (`{ type, function }`), or a container image of yours (`{ type, image }`),
   * each running the worker library (`serverless-task-scheduler/worker`). Each type must be
   * defined in `taskModules` too (the API validates payloads with it).
   * @default - none: every type runs in the pools
   */
  readonly taskTypeWorkers?: readonly TaskTypeWorker[];
  /**
   * The Fargate worker image, when built elsewhere (FargateWorkersProps.image).
   * @default - built at deploy time from the repository's Dockerfile
   */
  readonly fargateWorkerImage?: ecs.ContainerImage;
  /**
   * The scheduler service's image (`scheduler.mode` "service"), when built elsewhere
   * (SchedulerServiceProps.image).
   * @default - built at deploy time from the repository's Dockerfile
   */
  readonly schedulerServiceImage?: ecs.ContainerImage;
}

/**
 * The whole scheduler in one stack. It composes one construct per concern and wires the shared
 * runtime environment; each construct owns its resources and its least-privilege grants.
 */
export class TaskSchedulerStack extends Stack {
  public readonly tables: TaskTables;
  public readonly queues: TaskQueues;
  public readonly exampleStores: ExampleStores;
  public readonly api: TaskApi;
  public readonly scheduler: SchedulerLoop;
  public readonly lambdaWorkers: LambdaWorkers;
  public readonly fargateWorkers: FargateWorkers;
  public readonly redrive: Redrive;
  /** Absent when the configuration has no schedules. */
  public readonly schedules?: NightlySchedules;
  public readonly monitoring: Monitoring;
  public readonly events: TaskEvents;
  /** Absent without `taskTypeWorkers`. */
  public readonly taskTypeWorkers?: TaskTypeWorkers;
  /** The long-lived scheduler, one Fargate task per shard: only with `scheduler.mode` "service". */
  public readonly schedulerService?: SchedulerService;

  /**
   * The region's first two availability zones, chosen by CloudFormation when it deploys
   * (`Fn::GetAZs`), as an environment-agnostic stack has them. The CDK's default for a stack that
   * names its account and region is a context lookup (EC2 DescribeAvailabilityZones), which needs
   * credentials at synth and a cdk.context.json entry per account and region; only the Fargate
   * workers' default VPC asks for zones, and any two of the region's zones serve it.
   */
  public override get availabilityZones(): string[] {
    return [Fn.select(0, Fn.getAzs()), Fn.select(1, Fn.getAzs())];
  }

  constructor(scope: Construct, id: string, props: TaskSchedulerStackProps) {
    super(scope, id, props);
    const { config } = props;
    checkDeployLimits(config, this.stackName);
    const code = runtimeCode({
      ...(props.projectRoot ? { projectRoot: props.projectRoot } : {}),
      ...(props.taskModules ? { taskModules: props.taskModules } : {}),
    });
    checkSchedules(config, code.taskModules);
    const taskModulesInject = writeTaskModulesInject(
      code.taskModules,
      path.join(Stage.of(this)?.outdir ?? os.tmpdir(), `task-modules-${Names.uniqueId(this)}`),
    );
    // Webhook secrets go to Secrets Manager (lib/task-events.ts), never into functions' environments.
    const configJson = JSON.stringify(runtimeConfig(config));

    this.tables = new TaskTables(this, 'Tables', { deletionProtection: config.deploy.deletionProtection });
    const typeWorkers = props.taskTypeWorkers ?? [];
    checkTaskTypeWorkers(typeWorkers);
    // Your functions first: their timeouts size their queues' visibility.
    const adopted = new Map<string, lambda.Function>();
    const adoptedScope = typeWorkers.some((worker) => 'function' in worker)
      ? new Construct(this, 'TaskTypeFunctions')
      : undefined;
    for (const worker of typeWorkers) {
      if ('function' in worker && adoptedScope) adopted.set(worker.type, worker.function(adoptedScope));
    }
    const typeQueueDefinitions = Object.fromEntries(
      typeWorkers.map((worker) => [worker.type, taskTypeWorkerQueue(worker, adopted.get(worker.type))] as const),
    );
    this.queues = new TaskQueues(this, 'Queues', {
      namePrefix: this.stackName,
      definitions: [...queuesFor(config.scheduler.shards), ...Object.values(typeQueueDefinitions)],
    });
    this.exampleStores = new ExampleStores(this, 'Examples', {
      deletionProtection: config.deploy.deletionProtection,
    });
    const { tiers, completionQueues: completions } = this.queues;
    const typeQueues = new Map(
      typeWorkers.map((worker) => [worker.type, this.queues.get(typeQueueDefinitions[worker.type]!.id)]),
    );
    // The scheduler dispatches to the type queues too, and the redrive drains their dead letters.
    const workers = [...this.queues.workers, ...typeQueues.values()];
    const tasksTable = this.tables.tasks;
    const controlTable = this.tables.control;
    const leasesTable = this.tables.leases;

    const runtime: RuntimeSettings = {
      code,
      ...(taskModulesInject ? { taskModulesInject } : {}),
      logRetention: retentionDays(config.deploy.logRetentionDays),
      environment: {
        [ENV.tasksTable]: tasksTable.tableName,
        [ENV.controlTable]: controlTable.tableName,
        [ENV.queueUrls]: this.toJsonString(this.queues.urlsById(POOL_QUEUE_IDS)),
        // Further shards' queues by name: their URLs would not fit Lambda's 4 KB of environment.
        ...(config.scheduler.shards > 1
          ? { [ENV.queueUrlPrefix]: `https://sqs.${Aws.REGION}.${Aws.URL_SUFFIX}/${Aws.ACCOUNT_ID}/${this.stackName}-` }
          : {}),
        [ENV.configJson]: configJson,
        // The runtime publishes under this service name; the alarms match on it.
        [POWERTOOLS_ENV.serviceName]: DEFAULT_SERVICE_NAME,
        [POWERTOOLS_ENV.metricsNamespace]: METRICS_NAMESPACE,
        [POWERTOOLS_ENV.logLevel]: 'INFO',
      },
    };

    // The type queues, for what dispatches to them (the scheduler), drains their dead letters
    // (redrive) or polls them (a container worker), and only there: every queue URL counts
    // against each function's 4 KB of environment.
    const withTypeQueues = (settings: RuntimeSettings): RuntimeSettings =>
      typeWorkers.length === 0
        ? settings
        : {
            ...settings,
            environment: {
              ...settings.environment,
              // Shard 0's queues and the type queues; further shards' come from QUEUE_URL_PREFIX.
              [ENV.queueUrls]: this.toJsonString(
                this.queues.urlsById(
                  new Set([...POOL_QUEUE_IDS, ...Object.values(typeQueueDefinitions).map((queue) => queue.id)]),
                ),
              ),
              [ENV.taskTypeQueues]: JSON.stringify(typeQueueDefinitions),
            },
          };

    // What the scheduler reads and writes, as the Lambda or as the long-lived service.
    const schedulerResources: SchedulerResources = {
      tasksTable,
      controlTable,
      leasesTable,
      tierQueues: tiers,
      workerQueues: workers,
      completionQueues: completions,
    };
    // The lease ledger, only where leased tasks are recorded or listed (the scheduler, the API):
    // every variable counts against each function's 4 KB of environment.
    const withLeases = (settings: RuntimeSettings): RuntimeSettings => ({
      ...settings,
      environment: { ...settings.environment, [ENV.leasesTable]: leasesTable.tableName },
    });
    // The scheduler first: every other function wakes it by name when it announces a task.
    this.scheduler = new SchedulerLoop(this, 'Scheduler', {
      runtime: withLeases(withTypeQueues(runtime)),
      ...schedulerResources,
    });
    const announcing: RuntimeSettings = {
      ...runtime,
      environment: { ...runtime.environment, [ENV.schedulerFunction]: this.scheduler.functionName },
    };

    // Workers also run the example task types, which find their data stores through this map.
    // Only workers run handlers, and the photo-resize type loads sharp (native) when it runs.
    const workerRuntime: RuntimeSettings = {
      ...announcing,
      nativeModules: code.nativeModules,
      environment: {
        ...announcing.environment,
        [EXAMPLE_RESOURCES_ENV]: this.toJsonString(this.exampleStores.names()),
      },
    };

    this.api = new TaskApi(this, 'Api', {
      runtime: withLeases(announcing),
      tasksTable,
      controlTable,
      leasesTable,
      tierQueues: tiers,
    });
    this.lambdaWorkers = new LambdaWorkers(this, 'LambdaWorkers', {
      runtime: workerRuntime,
      tasksTable,
      queue: this.queues.get('worker-lambda'),
      completionQueues: completions,
      tierQueues: tiers,
      poolConcurrency: config.pools.lambda.concurrency,
    });
    this.fargateWorkers = new FargateWorkers(this, 'FargateWorkers', {
      runtime: workerRuntime,
      tasksTable,
      queue: this.queues.get('worker-fargate'),
      completionQueues: completions,
      tierQueues: tiers,
      pool: config.pools.fargate,
      ...(props.fargateWorkerImage ? { image: props.fargateWorkerImage } : {}),
    });
    if (config.scheduler.mode === 'service') {
      this.schedulerService = new SchedulerService(this, 'SchedulerService', {
        // The scheduler Lambda's settings: the same configuration, queue URLs and type queues.
        runtime: withLeases(withTypeQueues(runtime)),
        ...schedulerResources,
        shards: config.scheduler.shards,
        cluster: this.fargateWorkers.cluster,
        securityGroup: this.fargateWorkers.securityGroup,
        publicSubnets: this.fargateWorkers.publicSubnets,
        ...(props.schedulerServiceImage ? { image: props.schedulerServiceImage } : {}),
      });
    }
    for (const worker of this.lambdaWorkers.functions) this.exampleStores.grantUse(worker.function);
    this.exampleStores.grantUse(this.fargateWorkers.taskDefinition.taskRole);
    this.exampleStores.acknowledgeGrants(this);

    this.events = new TaskEvents(this, 'Events', {
      // It announces the tasks whose dependencies it releases (and wakes the scheduler).
      runtime: announcing,
      tasksTable,
      tierQueues: tiers,
      webhooks: config.events.webhooks,
      namePrefix: this.stackName,
    });

    this.redrive = new Redrive(this, 'Redrive', {
      runtime: withTypeQueues(announcing),
      eventQueues: {
        failedRecords: this.events.failedRecords,
        ...(this.events.deliveryQueue && this.events.deliveryDeadLetters
          ? { deliveries: this.events.deliveryQueue, deliveryDeadLetters: this.events.deliveryDeadLetters }
          : {}),
      },
      tasksTable,
      workerQueues: workers,
      tierQueues: tiers,
      completionQueues: completions,
    });
    if (config.schedules.length > 0) {
      this.schedules = new NightlySchedules(this, 'Schedules', {
        runtime: announcing,
        tasksTable,
        controlTable,
        tierQueues: tiers,
        schedules: config.schedules,
      });
    }

    if (typeWorkers.length > 0) {
      this.taskTypeWorkers = new TaskTypeWorkers(this, 'TaskTypeWorkers', {
        workers: typeWorkers,
        runtime: announcing,
        containerRuntime: withTypeQueues(announcing),
        queues: typeQueues,
        adopted,
        tasksTable,
        completionQueues: completions,
        tierQueues: tiers,
        lambdaConcurrency: config.pools.lambda.concurrency,
        fargatePool: config.pools.fargate,
        vpc: this.fargateWorkers.vpc,
        publicSubnets: this.fargateWorkers.publicSubnets,
      });
    }

    for (const grantee of [
      ...(this.taskTypeWorkers?.workers.flatMap((worker) => worker.grantees) ?? []),
      this.api.handler.function,
      ...this.lambdaWorkers.functions.map((worker) => worker.function),
      this.fargateWorkers.taskDefinition.taskRole,
      this.redrive.handler.function,
      this.events.streamFunction.function,
      ...(this.schedules ? [this.schedules.handler.function] : []),
    ]) {
      this.scheduler.grantWake(grantee);
    }

    this.monitoring = new Monitoring(this, 'Monitoring', {
      serviceName: DEFAULT_SERVICE_NAME,
      dashboardName: this.stackName,
      tierQueues: tiers,
      workerQueues: workers,
      deadLetterQueues: [
        ...this.queues.deadLetterQueues().map((dlq) => ({ ...dlq, drained: true })),
        ...(this.schedules ? [{ id: 'schedules-dlq', queue: this.schedules.deadLetterQueue }] : []),
      ],
      redrive: { function: this.redrive.handler.function, every: this.redrive.drainEvery },
      schedulerFunction: this.scheduler.handler.function,
      workerFunctions: this.lambdaWorkers.classes.map((c) => ({
        memoryMiB: c.memoryMiB,
        function: c.handler.function,
      })),
      apiFunction: this.api.handler.function,
      fargateService: this.fargateWorkers.service,
      ...(this.schedulerService ? { schedulerServices: this.schedulerService.services } : {}),
      alarmEmail: config.deploy.alarmEmail,
      dashboard: config.deploy.dashboard,
    });

    // Only the task table has indexes (the control table has none, so its grants carry no wildcard).
    const tasksLogicalId = this.resolve(this.getLogicalId(tasksTable.node.defaultChild as CfnElement)) as string;
    Validations.of(this).acknowledge({
      id: `AwsSolutions-IAM5[Resource::<${tasksLogicalId}.Arn>/index/*]`,
      reason:
        "Task table grants cover the table's own indexes (by tenant, by tenant and state, active tasks), named in resources.ts; no other table is reachable.",
    });

    new CfnOutput(this, 'EventBusName', {
      value: this.events.bus.eventBusName,
      description: 'Task state changes (source task-scheduler, detail-type Task State Change)',
    });
    new CfnOutput(this, 'ApiUrl', { value: this.api.url, description: 'Base URL of the HTTP API (SigV4 required)' });
    new CfnOutput(this, 'TasksTableName', { value: tasksTable.tableName });
    new CfnOutput(this, 'ControlTableName', { value: controlTable.tableName });
    for (const [queueId, url] of Object.entries(this.queues.urlsById())) {
      new CfnOutput(this, `QueueUrl${constructId(queueId)}`, { value: url, description: `SQS queue ${queueId}` });
    }
    new CfnOutput(this, 'ExampleResources', {
      value: this.toJsonString(this.exampleStores.names()),
      description: `Example data stores as ${EXAMPLE_RESOURCES_ENV} JSON (for examples/seed.ts)`,
    });
    if (this.monitoring.dashboard) {
      new CfnOutput(this, 'DashboardName', { value: this.monitoring.dashboard.dashboardName });
    }
    if (this.monitoring.topic) new CfnOutput(this, 'AlarmTopicArn', { value: this.monitoring.topic.topicArn });
  }
}

/** CloudWatch Logs accepts only certain retention periods: use the shortest one that is at least as long. */
export function retentionDays(days: number): logs.RetentionDays {
  const allowed = Object.values(logs.RetentionDays)
    .filter((value): value is number => typeof value === 'number' && value > 0)
    .sort((a, b) => a - b);
  const match = allowed.find((value) => value >= days);
  if (match === undefined) {
    throw new Error(`deploy.logRetentionDays: ${days} is longer than CloudWatch Logs allows (${allowed.at(-1)} days)`);
  }
  return match as logs.RetentionDays;
}

/** The configuration as the functions get it: webhook secrets replaced by a placeholder. */
/** The `deploy` settings the running code reads (authorization, backlog metrics); the rest are the CDK app's alone. */
export const RUNTIME_DEPLOY_KEYS = ['callers', 'allowAnyCaller', 'tenantMetrics'] as const;

/**
 * The configuration the functions and containers get (SCHEDULER_CONFIG_JSON): without webhook
 * secrets (they read them from Secrets Manager) and without the deploy-only settings (stack name,
 * deletion protection, log retention, alarm e-mail, dashboard): every byte counts against each
 * function's 4 KB of environment.
 */
export function runtimeConfig(config: SchedulerConfig): Omit<SchedulerConfig, 'deploy'> & {
  deploy: Pick<SchedulerConfig['deploy'], (typeof RUNTIME_DEPLOY_KEYS)[number]>;
} {
  const { deploy, ...rest } = withoutWebhookSecrets(config);
  return {
    ...rest,
    deploy: { callers: deploy.callers, allowAnyCaller: deploy.allowAnyCaller, tenantMetrics: deploy.tenantMetrics },
  };
}

export function withoutWebhookSecrets(config: SchedulerConfig): SchedulerConfig {
  return {
    ...config,
    events: {
      ...config.events,
      webhooks: config.events.webhooks.map((webhook) => ({ ...webhook, secret: { secretArn: 'in-secrets-manager' } })),
    },
  } as SchedulerConfig;
}

/**
 * The schedules' tasks as their firings would submit them (type known, payload valid, fits a
 * pool; local/runtime.ts checks the same at `npm start`): a mistake stops the synth, naming the
 * schedule, instead of failing every firing on AWS. The task modules' types are the modules'
 * own, loaded here for the check (their code is bundled, not run, in the functions); a module
 * that cannot be loaded synchronously (top-level await, or one that needs its deployed
 * environment to load) leaves the schedules of types not built in to be checked at their firing.
 * Throws ConfigError.
 */
function checkSchedules(config: SchedulerConfig, taskModules: readonly string[]): void {
  const moduleTypes = loadForChecks(taskModules);
  const registry = defaultRegistry(moduleTypes ?? []);
  validateSchedules(
    config.schedules,
    { resolveSpec: (input, now) => resolveTaskSpec(input, now, { registry, config }) },
    new Date(),
    (schedule) => moduleTypes !== undefined || registry.has(schedule.task.type),
  );
  // The webhooks' type filters likewise, when every type is known (npm start checks the same).
  if (moduleTypes !== undefined) checkWebhookFilterTypes(config.events.webhooks, registry);
}

/**
 * The task modules' types (absolute paths), each module loaded with `require` (an ES module
 * without top-level await loads so since Node 22.12) and checked as the local runtime checks
 * them; undefined when one does not load.
 */
function loadForChecks(taskModules: readonly string[]): AnyTaskTypeDefinition[] | undefined {
  if (taskModules.length === 0) return [];
  const require = createRequire(import.meta.url);
  let imported: { source: string; namespace: Record<string, unknown> }[];
  try {
    imported = taskModules.map((source) => ({ source, namespace: require(source) as Record<string, unknown> }));
  } catch {
    return undefined;
  }
  return checkTaskModules(imported, BUILT_IN_TASK_TYPE_NAMES);
}

/** SQS's longest queue name (a FIFO queue's `.fifo` included). */
const MAX_QUEUE_NAME = 80;

/**
 * What the configuration asks of AWS that the schema cannot see, checked before anything is built
 * and named by key (bin/app.ts prints the message): the stack name prefixes every queue name, so
 * its room depends on the shards and webhooks; a Fargate pool must hold one worker. Throws
 * ConfigError.
 */
function checkDeployLimits(config: SchedulerConfig, stackName: string): void {
  const problems: string[] = [];
  const suffixes = [
    ...queuesFor(config.scheduler.shards).flatMap((queue) => [
      queue.id,
      ...(queue.deadLetter ? [queue.deadLetter.id] : []),
    ]),
    'task-events-failed',
    ...(config.events.webhooks.length > 0
      ? [`${WEBHOOK_DELIVERY_QUEUE.id}.fifo`, `${WEBHOOK_DELIVERY_QUEUE.deadLetter.id}.fifo`]
      : []),
  ];
  const longest = suffixes.reduce((a, b) => (b.length > a.length ? b : a));
  const queueName = `${stackName}-${longest}`;
  if (queueName.length > MAX_QUEUE_NAME) {
    problems.push(
      `deploy.stackName: "${stackName}" (${stackName.length} characters) would name the queue "${queueName}" (${queueName.length} characters; SQS allows ${MAX_QUEUE_NAME}): at most ${MAX_QUEUE_NAME - longest.length - 1} characters with this configuration`,
    );
  }
  const { vcpu, memoryMiB } = config.pools.fargate;
  if (vcpu * 1024 < FARGATE_WORKER.cpu || memoryMiB < FARGATE_WORKER.memoryMiB) {
    const worker = `${FARGATE_WORKER.cpu / 1024} vCPU, ${FARGATE_WORKER.memoryMiB} MiB`;
    problems.push(
      `pools.fargate: ${vcpu} vCPU and ${memoryMiB} MiB hold no Fargate worker (${worker} each): give at least vcpu ${FARGATE_WORKER.cpu / 1024} and memoryMiB ${FARGATE_WORKER.memoryMiB}`,
    );
  }
  if (problems.length > 0) throw new ConfigError(problems.join('\n'), { problems });
}
