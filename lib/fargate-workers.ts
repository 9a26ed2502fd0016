import { Duration, Fn, RemovalPolicy, Stack, Validations } from 'aws-cdk-lib';
import * as appscaling from 'aws-cdk-lib/aws-applicationautoscaling';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as ec2 from 'aws-cdk-lib/aws-ec2';
import * as ecs from 'aws-cdk-lib/aws-ecs';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as logs from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';
import { fargateImageAsset } from './fargate-image-asset.ts';
import type { RuntimeSettings } from './runtime-function.ts';
import type { DefinedQueue } from './task-queues.ts';

/** A Fargate worker's size unless FargateWorkersProps says otherwise: 1 vCPU (1024 CPU units), 2 GiB. */
export const FARGATE_WORKER = { cpu: 1024, memoryMiB: 2048 } as const;

export interface FargateWorkersProps {
  /** `code` has the worker's entry and the Dockerfile; `environment` is passed to the container. */
  readonly runtime: RuntimeSettings;
  readonly tasksTable: dynamodb.ITable;
  /** The `worker-fargate` queue the workers long-poll. */
  readonly queue: DefinedQueue;
  /** Every scheduler shard's completions queue (one per `scheduler.shards`). */
  readonly completionQueues: readonly DefinedQueue[];
  readonly tierQueues: readonly DefinedQueue[];
  /** `pools.fargate` from the configuration: the most the service may run at once. */
  readonly pool: { readonly vcpu: number; readonly memoryMiB: number };
  /**
   * Network for the workers. They need outbound access to SQS, DynamoDB, ECR and CloudWatch only.
   * @default - a new two-AZ VPC with public subnets only and no NAT gateway; workers get a
   *   public IP and a security group that admits nothing inbound
   */
  readonly vpc?: ec2.IVpc;
  /**
   * Place the workers in the VPC's public subnets with a public IP (how they reach the AWS APIs
   * without a NAT gateway), rather than in PRIVATE_WITH_EGRESS subnets.
   * @default true for the construct's own VPC, false for a VPC passed in
   */
  readonly publicSubnets?: boolean;
  /** CPU units of one worker (1024 = 1 vCPU). @default 1024 */
  readonly workerCpu?: number;
  /** Memory of one worker. @default 2048 */
  readonly workerMemoryMiB?: number;
  /**
   * Attempts one worker runs at once (its WORKER_CONCURRENCY), the unit the service scales in.
   * @default 4 per vCPU of a worker
   */
  readonly tasksPerWorker?: number;
  /** @default ecs.CpuArchitecture.ARM64 (Graviton: about 20 % cheaper per vCPU-hour) */
  readonly cpuArchitecture?: ecs.CpuArchitecture;
  /**
   * The worker image, when it is built elsewhere (a release pipeline's image in ECR; a placeholder
   * where no Docker can build one, as the moto deployment check does). It must run
   * `runtime/handlers/fargate-worker.ts` as the repository's Dockerfile does.
   * @default - built at deploy time from the repository's Dockerfile and the worker's esbuild bundle
   */
  readonly image?: ecs.ContainerImage;
}

/** Fargate task sizes: CPU units → allowed memory (MiB) range and step. */
const FARGATE_SIZES: Readonly<Record<number, { min: number; max: number; step: number }>> = {
  256: { min: 512, max: 2048, step: 512 },
  512: { min: 1024, max: 4096, step: 1024 },
  1024: { min: 2048, max: 8192, step: 1024 },
  2048: { min: 4096, max: 16_384, step: 1024 },
  4096: { min: 8192, max: 30_720, step: 1024 },
  8192: { min: 16_384, max: 61_440, step: 4096 },
  16384: { min: 32_768, max: 122_880, step: 8192 },
};

/**
 * Backlog → worker count steps (EXACT_CAPACITY): never fewer worker slots than messages waiting
 * or running, doubling the workers per step so a burst is met in a few steps, capped at the pool.
 */
export function backlogScalingSteps(maxWorkers: number, tasksPerWorker: number): appscaling.ScalingInterval[] {
  // Nothing visible and nothing in flight: every worker is idle.
  const steps: appscaling.ScalingInterval[] = [{ upper: 0, change: 0 }];
  let workers = 1;
  let lower = 1;
  while (workers < maxWorkers) {
    // Up to `workers × tasksPerWorker` messages fit in `workers` workers.
    const upper = workers * tasksPerWorker + 1;
    steps.push({ lower, upper, change: workers });
    lower = upper;
    workers *= 2;
  }
  steps.push({ lower, change: maxWorkers });
  return steps;
}

/**
 * The Fargate worker pool: the worker program (its esbuild bundle in the repository's Dockerfile) as an ECS service
 * that scales with the `worker-fargate` backlog, from zero up to the configured pool capacity.
 */
export class FargateWorkers extends Construct {
  public readonly vpc: ec2.IVpc;
  public readonly cluster: ecs.Cluster;
  public readonly taskDefinition: ecs.FargateTaskDefinition;
  public readonly container: ecs.ContainerDefinition;
  public readonly service: ecs.FargateService;
  public readonly logGroup: logs.LogGroup;
  public readonly securityGroup: ec2.SecurityGroup;
  /** Whether the workers run in public subnets with a public IP (see FargateWorkersProps.publicSubnets). */
  public readonly publicSubnets: boolean;
  /** Workers at most: the pool divided by one worker's size. */
  public readonly maxWorkers: number;
  public readonly tasksPerWorker: number;
  /** Messages waiting plus messages being worked on: what the service scales on. */
  public readonly backlog: cloudwatch.MathExpression;
  /** Bytes of the image's build context (bundle, source map, native modules); 0 when bundling is skipped or `image` given. */
  public readonly imageContextBytes: number;
  /** The worker image (built here, or the one passed in). */
  public readonly image: ecs.ContainerImage;

  constructor(scope: Construct, id: string, props: FargateWorkersProps) {
    super(scope, id);
    const cpu = props.workerCpu ?? FARGATE_WORKER.cpu;
    const memoryMiB = props.workerMemoryMiB ?? FARGATE_WORKER.memoryMiB;
    const size = FARGATE_SIZES[cpu];
    if (!size || memoryMiB < size.min || memoryMiB > size.max || (memoryMiB - size.min) % size.step !== 0) {
      throw new Error(`FargateWorkers: ${cpu} CPU units with ${memoryMiB} MiB is not a Fargate task size`);
    }
    this.maxWorkers = Math.floor(Math.min((props.pool.vcpu * 1024) / cpu, props.pool.memoryMiB / memoryMiB));
    if (this.maxWorkers < 1) {
      throw new Error(
        `FargateWorkers: the fargate pool (${props.pool.vcpu} vCPU, ${props.pool.memoryMiB} MiB) is smaller than one worker (${cpu / 1024} vCPU, ${memoryMiB} MiB)`,
      );
    }
    this.tasksPerWorker = props.tasksPerWorker ?? Math.max(1, Math.floor((cpu / 1024) * 4));
    if (!Number.isInteger(this.tasksPerWorker) || this.tasksPerWorker < 1) {
      throw new Error(`FargateWorkers: tasksPerWorker must be a positive integer, got ${this.tasksPerWorker}`);
    }
    const architecture = props.cpuArchitecture ?? ecs.CpuArchitecture.ARM64;

    this.vpc = props.vpc ?? this.defaultVpc(props.runtime.logRetention);
    this.cluster = new ecs.Cluster(this, 'Cluster', {
      vpc: this.vpc,
      containerInsightsV2: ecs.ContainerInsights.ENABLED,
    });

    this.taskDefinition = new ecs.FargateTaskDefinition(this, 'Task', {
      cpu,
      memoryLimitMiB: memoryMiB,
      runtimePlatform: { cpuArchitecture: architecture, operatingSystemFamily: ecs.OperatingSystemFamily.LINUX },
    });
    this.logGroup = new logs.LogGroup(this, 'Logs', {
      retention: props.runtime.logRetention,
      removalPolicy: RemovalPolicy.RETAIN,
    });
    // The worker alone, bundled at synth like the Lambdas; Docker builds it only at deploy time.
    let image = props.image;
    let imageContextBytes = 0;
    if (!image) {
      const asset = fargateImageAsset(this, { runtime: props.runtime, architecture });
      image = asset.image;
      imageContextBytes = asset.bytes;
    }
    this.imageContextBytes = imageContextBytes;
    this.image = image;
    this.container = this.taskDefinition.addContainer('Worker', {
      image,
      logging: ecs.LogDrivers.awsLogs({ streamPrefix: 'worker', logGroup: this.logGroup }),
      environment: {
        ...props.runtime.environment,
        // Stated rather than left to the worker's default, so scaling and workers agree.
        WORKER_CONCURRENCY: String(this.tasksPerWorker),
      },
      // The most ECS allows between SIGTERM and SIGKILL: time to hand the running task back.
      stopTimeout: Duration.seconds(120),
    });

    const tasksRole = this.taskDefinition.taskRole;
    props.tasksTable.grantReadWriteData(tasksRole);
    props.queue.queue.grantConsumeMessages(tasksRole);
    for (const completions of props.completionQueues) completions.queue.grantSendMessages(tasksRole);
    for (const tier of props.tierQueues) tier.queue.grantSendMessages(tasksRole);
    // Task scale-in protection while a worker runs attempts (runtime/worker/scale-in-protection.ts):
    // the ECS agent calls these with the task role, for this cluster's tasks only.
    // Written with CloudFormation's pseudo parameters rather than Stack.formatArn, which renders
    // `arn:aws:ecs:eu-west-1:123456789012:…` once the stack names its account and region and
    // `arn:${AWS::Partition}:…` when it does not: this way the ARN always names the account and
    // region the stack is deployed into, and the cdk-nag finding acknowledged below (cdk-nag v3
    // matches acknowledgements by exact id, no patterns) reads the same in both forms.
    const stack = Stack.of(this);
    const clusterLogicalId = stack.resolve(
      stack.getLogicalId(this.cluster.node.defaultChild as ecs.CfnCluster),
    ) as string;
    const taskArns = Fn.sub(
      `arn:\${AWS::Partition}:ecs:\${AWS::Region}:\${AWS::AccountId}:task/\${${clusterLogicalId}}/*`,
    );
    tasksRole.addToPrincipalPolicy(
      new iam.PolicyStatement({
        actions: ['ecs:UpdateTaskProtection', 'ecs:GetTaskProtection'],
        resources: [taskArns],
      }),
    );

    this.securityGroup = new ec2.SecurityGroup(this, 'SecurityGroup', {
      vpc: this.vpc,
      description: 'Task scheduler Fargate workers: outbound only',
      allowAllOutbound: true,
    });
    const publicSubnets = props.publicSubnets ?? props.vpc === undefined;
    this.publicSubnets = publicSubnets;
    this.service = new ecs.FargateService(this, 'Service', {
      cluster: this.cluster,
      taskDefinition: this.taskDefinition,
      securityGroups: [this.securityGroup],
      // Without a NAT gateway a public IP is the way out to the AWS APIs; nothing can reach in.
      assignPublicIp: publicSubnets,
      vpcSubnets: { subnetType: publicSubnets ? ec2.SubnetType.PUBLIC : ec2.SubnetType.PRIVATE_WITH_EGRESS },
      // Stated, not left to CloudFormation's default of one worker at creation: an idle pool runs
      // nothing, and the backlog scaling below starts workers. Unchanged in the template, a deploy
      // never resets what scaling set.
      desiredCount: 0,
      minHealthyPercent: 100,
      maxHealthyPercent: 200,
      circuitBreaker: { enable: true, rollback: true },
    });

    const visible = props.queue.queue.metricApproximateNumberOfMessagesVisible({
      period: Duration.minutes(1),
      statistic: cloudwatch.Stats.MAXIMUM,
    });
    const inFlight = props.queue.queue.metricApproximateNumberOfMessagesNotVisible({
      period: Duration.minutes(1),
      statistic: cloudwatch.Stats.MAXIMUM,
    });
    // Scaling on visible messages alone would scale in while workers still hold in-flight tasks.
    this.backlog = new cloudwatch.MathExpression({
      expression: 'FILL(visible, 0) + FILL(inFlight, 0)',
      usingMetrics: { visible, inFlight },
      label: 'Fargate backlog (waiting + running)',
      period: Duration.minutes(1),
    });
    const scaling = this.service.autoScaleTaskCount({ minCapacity: 0, maxCapacity: this.maxWorkers });
    scaling.scaleOnMetric('ScaleOnBacklog', {
      metric: this.backlog,
      adjustmentType: appscaling.AdjustmentType.EXACT_CAPACITY,
      scalingSteps: backlogScalingSteps(this.maxWorkers, this.tasksPerWorker),
      cooldown: Duration.minutes(1),
      evaluationPeriods: 1,
    });

    Validations.of(this.taskDefinition).acknowledge({
      id: 'AwsSolutions-ECS2',
      reason:
        'The environment holds resource names, queue URLs and the non-secret scheduler configuration; there are no credentials to move to Secrets Manager.',
    });
    Validations.of(this.taskDefinition).acknowledge({
      id: `AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:ecs:<AWS::Region>:<AWS::AccountId>:task/<${clusterLogicalId}>/*]`,
      reason:
        "Task scale-in protection is set by each worker task on itself; task ids are not known before the tasks run, so the grant covers this cluster's tasks only.",
    });
    Validations.of(this.taskDefinition).acknowledge({
      id: 'AwsSolutions-IAM5[Resource::*]',
      reason: 'The execution role needs ecr:GetAuthorizationToken, which supports no resource-level permissions.',
    });
  }

  private defaultVpc(retention: logs.RetentionDays): ec2.Vpc {
    const vpc = new ec2.Vpc(this, 'Vpc', {
      maxAzs: 2,
      // No NAT gateway (about $32 a month each): workers reach AWS APIs through their public IP.
      natGateways: 0,
      subnetConfiguration: [{ name: 'public', subnetType: ec2.SubnetType.PUBLIC, cidrMask: 24 }],
    });
    vpc.addFlowLog('FlowLogs', {
      destination: ec2.FlowLogDestination.toCloudWatchLogs(
        new logs.LogGroup(this, 'FlowLogs', { retention, removalPolicy: RemovalPolicy.RETAIN }),
      ),
      // Rejected traffic is the security signal here (nothing should arrive); accepted is noise.
      trafficType: ec2.FlowLogTrafficType.REJECT,
    });
    return vpc;
  }
}
