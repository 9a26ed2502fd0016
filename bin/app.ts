/**
 * The CDK app: `npx cdk deploy` (or synth). Reads the same JSON configuration as the local
 * runtime, validates it before building anything, and builds one stack named by deploy.stackName.
 *
 *   npx cdk deploy --context config=config/prod.json   (or SCHEDULER_CONFIG=config/prod.json)
 */
import * as path from 'node:path';
import { App, Validations } from 'aws-cdk-lib';
import * as ecs from 'aws-cdk-lib/aws-ecs';
import { AwsSolutionsChecks } from 'cdk-nag';
import { loadConfig } from '../lib/config-file.ts';
import { deployEnvironment } from '../lib/deploy-environment.ts';
import { TaskSchedulerStack } from '../lib/task-scheduler-stack.ts';
import type { SchedulerConfig } from '../runtime/core/config.ts';
import { ConfigError } from '../runtime/core/errors.ts';
import { ENV } from '../runtime/infra/resources.ts';

const DEFAULT_CONFIG = 'config/default.json';

const app = new App();
const contextPath: unknown = app.node.tryGetContext('config');
const configPath = path.resolve(
  typeof contextPath === 'string' && contextPath ? contextPath : (process.env[ENV.config] ?? DEFAULT_CONFIG),
);

let config: SchedulerConfig;
try {
  config = loadConfig(configPath);
} catch (error) {
  // A clear message and a non-zero exit beat a stack trace through the CDK CLI.
  console.error(error instanceof Error ? error.message : String(error));
  process.exit(1);
}

// The account and region: from the CLI, or CDK_DEPLOY_ACCOUNT / CDK_DEPLOY_REGION (lib/deploy-environment.ts).
const { env, notice } = deployEnvironment(process.env, config.deploy.stackName);
if (notice) console.error(notice);
// `--context fargateWorkerImage=REPOSITORY[:TAG]`: run the Fargate workers from an image built
// elsewhere instead of building the Dockerfile at deploy time (which needs Docker).
const imageName: unknown = app.node.tryGetContext('fargateWorkerImage');
if (imageName !== undefined && (typeof imageName !== 'string' || imageName === '')) {
  console.error('--context fargateWorkerImage: expected an image name (REPOSITORY[:TAG])');
  process.exit(1);
}
if (imageName)
  console.error(`Fargate worker image: ${imageName} (context fargateWorkerImage), not built from the Dockerfile`);
try {
  new TaskSchedulerStack(app, config.deploy.stackName, {
    config,
    description: 'Serverless distributed task scheduler (API Gateway, DynamoDB, SQS, Lambda, Fargate)',
    ...(env ? { env } : {}),
    ...(imageName ? { fargateWorkerImage: ecs.ContainerImage.fromRegistry(imageName) } : {}),
  });
} catch (error) {
  // A configuration the stack refuses (its schedules' tasks, …): the message, as for the file.
  if (!(error instanceof ConfigError)) throw error;
  console.error(error.message);
  process.exit(1);
}
// Every synth (and so every deploy) is checked against the AWS Solutions rules; acknowledged
// findings carry their reason next to the resource (Validations.of(...).acknowledge).
Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
app.synth();
