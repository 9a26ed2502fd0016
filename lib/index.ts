/**
 * `serverless-task-scheduler/cdk`: the scheduler for your own CDK app.
 *
 *   const config = loadConfig('scheduler.json');
 *   const scheduler = new TaskSchedulerStack(app, config.deploy.stackName, {
 *     config,
 *     taskModules: ['./tasks.mjs'],
 *   });
 *   Validations.of(app).addPlugins(new AwsSolutionsChecks(app)); // cdk-nag, as this repository does
 *
 * A stack rather than a construct to place in one of yours: the scheduler is a deployment unit
 * of its own. Its physical names (queues, the scheduler function that invokes itself) derive
 * from the stack name, its outputs are what `tasks` and the deploy checks read, its tables are
 * deletion-protected and outlive your other stacks' changes, and it places the Fargate workers'
 * VPC in the region's zones without a lookup. Your stacks reference what they need from it
 * (`scheduler.api.url`, `scheduler.events.bus`, ...), which the CDK turns into exports.
 *
 * Synthesis bundles every function with the esbuild of your project (never Docker) and writes
 * the Fargate worker image's build context (the package's Dockerfile); Docker builds that image
 * only at `cdk deploy`. Needs aws-cdk-lib, constructs, esbuild and the runtime's peers installed
 * in your project (the stack names what is missing).
 */
export type { SchedulerConfig } from '../runtime/core/config.ts';
export { parseConfig } from '../runtime/core/config.ts';
export { loadConfig } from './config-file.ts';
export { type DeployEnvironment, deployEnvironment } from './deploy-environment.ts';
export { DEPLOY_PEERS } from './runtime-code.ts';
export { retentionDays, TaskSchedulerStack, type TaskSchedulerStackProps } from './task-scheduler-stack.ts';
export type {
  TaskTypeContainerWorker,
  TaskTypeEntryWorker,
  TaskTypeFunctionWorker,
  TaskTypeWorker,
  TaskTypeWorkerResources,
  TaskTypeWorkers,
} from './task-type-workers.ts';
