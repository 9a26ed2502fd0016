import { Duration, RemovalPolicy, Validations } from 'aws-cdk-lib';
import * as ec2 from 'aws-cdk-lib/aws-ec2';
import * as ecs from 'aws-cdk-lib/aws-ecs';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as logs from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';
import { ENV } from '../runtime/infra/resources.ts';
import { fargateImageAsset } from './fargate-image-asset.ts';
import type { RuntimeSettings } from './runtime-function.ts';
import { grantSchedulerAccess, type SchedulerResources } from './scheduler-loop.ts';

export interface SchedulerServiceProps extends SchedulerResources {
  /** The scheduler Lambda's settings: the same code, configuration and queue URLs. */
  readonly runtime: RuntimeSettings;
  /** `scheduler.shards`: one service (one task) per shard. */
  readonly shards: number;
  /** Where the Fargate workers run: the same cluster, network and outbound-only security group. */
  readonly cluster: ecs.ICluster;
  readonly securityGroup: ec2.ISecurityGroup;
  readonly publicSubnets: boolean;
  /** @default ecs.CpuArchitecture.ARM64 */
  readonly cpuArchitecture?: ecs.CpuArchitecture;
  /**
   * The scheduler image, when built elsewhere: it must run `runtime/handlers/scheduler-container.ts`
   * (as the repository's Dockerfile runs the bundle this construct writes).
   * @default - built at deploy time from the repository's Dockerfile and the scheduler's bundle
   */
  readonly image?: ecs.ContainerImage;
}

/** One scheduler task: a quarter vCPU and the least memory Fargate pairs with it. */
const SCHEDULER_CPU = 256;
const SCHEDULER_MEMORY_MIB = 512;

/**
 * The long-lived scheduler (`scheduler.mode: "service"`, docs/scaling.md): per shard an ECS
 * service of one always-on Fargate task that holds the shard's lease for good
 * (runtime/handlers/scheduler-service.ts). A deploy starts the replacement before stopping the old
 * task (minimum healthy 100 %): the new task waits for the lease, the old one hands it back on
 * SIGTERM, and that is the only hand-over. The scheduler Lambda stays deployed as the fallback: a
 * wake or tick finding the shard's lease lapsed (the task crashed, ECS is replacing it) starts
 * it, and at its time limit it leaves the lease to the service again.
 */
export class SchedulerService extends Construct {
  public readonly services: readonly ecs.FargateService[];
  public readonly taskRole: iam.Role;
  public readonly logGroup: logs.LogGroup;
  /** Bytes of the image's build context; 0 when bundling is skipped or `image` given. */
  public readonly imageContextBytes: number;

  constructor(scope: Construct, id: string, props: SchedulerServiceProps) {
    super(scope, id);
    const architecture = props.cpuArchitecture ?? ecs.CpuArchitecture.ARM64;
    let image = props.image;
    let imageContextBytes = 0;
    if (!image) {
      const asset = fargateImageAsset(this, {
        runtime: props.runtime,
        architecture,
        entry: 'scheduler-container',
        nativeModules: false,
      });
      image = asset.image;
      imageContextBytes = asset.bytes;
    }
    this.imageContextBytes = imageContextBytes;

    // One role for every shard's task: what the scheduler Lambda is granted.
    this.taskRole = new iam.Role(this, 'TaskRole', { assumedBy: new iam.ServicePrincipal('ecs-tasks.amazonaws.com') });
    grantSchedulerAccess(props, this.taskRole);

    this.logGroup = new logs.LogGroup(this, 'Logs', {
      retention: props.runtime.logRetention,
      removalPolicy: RemovalPolicy.RETAIN,
    });
    const services: ecs.FargateService[] = [];
    for (let shard = 0; shard < props.shards; shard++) {
      const taskDefinition = new ecs.FargateTaskDefinition(this, `Task${shard}`, {
        cpu: SCHEDULER_CPU,
        memoryLimitMiB: SCHEDULER_MEMORY_MIB,
        taskRole: this.taskRole,
        runtimePlatform: { cpuArchitecture: architecture, operatingSystemFamily: ecs.OperatingSystemFamily.LINUX },
      });
      taskDefinition.addContainer('Scheduler', {
        image,
        logging: ecs.LogDrivers.awsLogs({ streamPrefix: `scheduler-${shard}`, logGroup: this.logGroup }),
        environment: { ...props.runtime.environment, [ENV.schedulerShard]: String(shard) },
        // Handing back: the held announcements (after a poll of up to 10 s ends) and the lease.
        stopTimeout: Duration.seconds(60),
      });
      services.push(
        new ecs.FargateService(this, `Shard${shard}`, {
          cluster: props.cluster,
          taskDefinition,
          securityGroups: [props.securityGroup],
          assignPublicIp: props.publicSubnets,
          vpcSubnets: { subnetType: props.publicSubnets ? ec2.SubnetType.PUBLIC : ec2.SubnetType.PRIVATE_WITH_EGRESS },
          desiredCount: 1,
          // The replacement starts first and waits for the lease: one hand-over per deploy.
          minHealthyPercent: 100,
          maxHealthyPercent: 200,
          circuitBreaker: { enable: true, rollback: true },
        }),
      );
      Validations.of(taskDefinition).acknowledge({
        id: 'AwsSolutions-ECS2',
        reason:
          'The environment holds resource names, queue URLs, the shard and the non-secret scheduler configuration; there are no credentials to move to Secrets Manager.',
      });
      Validations.of(taskDefinition).acknowledge({
        id: 'AwsSolutions-IAM5[Resource::*]',
        reason: 'The execution role needs ecr:GetAuthorizationToken, which supports no resource-level permissions.',
      });
    }
    this.services = services;
  }
}
