// This project's CDK app: the scheduler with this project's task types, checked by cdk-nag.
//   npx cdk synth   (offline, no Docker)     npx cdk deploy   (Docker builds the Fargate image)
import { App, Validations } from 'aws-cdk-lib';
import * as ecs from 'aws-cdk-lib/aws-ecs';
import { AwsSolutionsChecks } from 'cdk-nag';
import { deployEnvironment, loadConfig, TaskSchedulerStack } from 'serverless-task-scheduler/cdk';

const app = new App();
// The same file `npx tasks dev --config scheduler.json` reads.
const config = loadConfig('scheduler.json');
const { env, notice } = deployEnvironment(process.env, config.deploy.stackName);
if (notice) console.error(notice);
// Your other stacks can use what it exposes (api.url, events.bus, tables, queues, ...).
new TaskSchedulerStack(app, config.deploy.stackName, {
  config,
  taskModules: ['./tasks.mjs'],
  // shop.receipt runs in this project's own image, from a queue of its own.
  taskTypeWorkers: [
    {
      type: 'shop.receipt',
      image: ecs.ContainerImage.fromAsset('.', {
        file: 'worker/Dockerfile',
        exclude: ['node_modules', 'cdk.out', '.data'],
      }),
      cpu: 256,
      memoryMiB: 512,
    },
  ],
  ...(env ? { env } : {}),
});
Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
app.synth();
