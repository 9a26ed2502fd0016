/**
 * The deployment check (`npm run check:deploy`, and inside `npm test` where moto_server is
 * installed): `cdk bootstrap` and `cdk deploy` of the real app into a moto_server started on a
 * free loopback port, then tasks end to end through the deployed stack's own tables and queues
 * (read back from moto) with the deployed code: each Lambda function's bundle as `cdk deploy`
 * uploaded it, and the Fargate worker program.
 *
 * moto stores what CloudFormation creates but runs none of it, and creates some types not at
 * all; what the check does about each, stated in its output:
 * - Lambda (functions, event source mappings, invocations): played by lambda-service.ts, each
 *   function in its own execution environments with its deployed environment variables;
 * - the HTTP API (AWS::ApiGatewayV2::*, not created by moto): played by api-gateway.ts in front of
 *   the deployed API function, taking every request as signed by the check's caller;
 * - EventBridge Scheduler (AWS::Scheduler::Schedule, not created): played by schedules.ts from
 *   the deployed template; the nightly job is fired once instead of waiting for 2 a.m.;
 * - the Fargate service: its image cannot be built without Docker, so the stack is deployed with
 *   a placeholder image (context fargateWorkerImage) and one worker runs
 *   runtime/handlers/fargate-worker.ts with the deployed task definition's environment (Application
 *   Auto Scaling, not created by moto, would start it from the backlog);
 * - CloudWatch alarms, queue and bucket policies, EventInvokeConfig (retry counts read from the
 *   template): not created by moto, not exercised.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { createWriteStream, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { LambdaClient, UpdateEventSourceMappingCommand } from '@aws-sdk/client-lambda';
import { GetObjectCommand } from '@aws-sdk/client-s3';
import { GetQueueAttributesCommand, ReceiveMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { SchedulerClient } from '../../client/sdk/index.ts';
import type { SubmitTaskInput, TaskDetail, TaskState } from '../../client/sdk/types.ts';
import { createAwsClients } from '../../runtime/adapters/aws-clients.ts';
import { EXAMPLE_BUCKET } from '../../runtime/infra/example-resources.ts';
import { SAMPLE, seedExampleData } from '../../runtime/task-types/examples/seed-data.ts';
import type { ExampleResourceNames } from '../../runtime/task-types/examples/stores.ts';
import { MOTO_ACCOUNT, MOTO_CREDENTIALS, type MotoServer, startMotoServer } from '../helpers/moto-server.ts';
import { startApiGateway } from './api-gateway.ts';
import { type DeployedStack, readDeployedStack } from './deployed-stack.ts';
import { LambdaService } from './lambda-service.ts';
import { startSchedulePlayer } from './schedules.ts';

const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const CDK_CLI = path.join(REPO_ROOT, 'node_modules', 'aws-cdk', 'bin', 'cdk');
/** An image name that names nothing: the stack deploys, and nothing pretends to run it. */
export const PLACEHOLDER_IMAGE = 'placeholder.invalid/fargate-worker:not-built';
const CALLER_ARN = `arn:aws:iam::${MOTO_ACCOUNT}:user/deploy-check`;

export interface DeployCheckOptions {
  /** moto_server's path (test/helpers/moto-server.ts findMotoServer). */
  readonly motoCommand: string;
  /** @default eu-west-1 (not moto's default region, so a region mix-up shows) */
  readonly region?: string;
  /** 'full' (npm run check:deploy) or 'quick' (npm test): fewer tasks, the same paths. @default 'full' */
  readonly size?: 'full' | 'quick';
  /** Keep the working folder (cloud assembly, logs) instead of deleting it. */
  readonly keep?: boolean;
  /** Progress lines. @default console.log */
  readonly log?: (line: string) => void;
  /** The longest wait for every task to settle. @default 15 minutes */
  readonly settleTimeoutMs?: number;
}

export interface ExpectedTask {
  readonly input: SubmitTaskInput;
  readonly state: TaskState;
  readonly attempts: number;
  /** Where it should run, for the report. */
  readonly path: string;
}

export interface DeployCheckReport {
  readonly region: string;
  readonly templateResources: number;
  readonly createdResources: number;
  readonly notCreated: Readonly<Record<string, number>>;
  readonly functions: number;
  readonly tasks: readonly { taskId: string; path: string; state: TaskState; attempts: number; ok: boolean }[];
  readonly problems: readonly string[];
  readonly invocations: Readonly<Record<string, { invocations: number; errors: number }>>;
  readonly seconds: { bootstrap: number; deploy: number; tasks: number; total: number };
  readonly workDir: string;
}

/** The tasks submitted through the API, what each must end as, and the path it exercises. */
export function plannedTasks(size: 'full' | 'quick'): ExpectedTask[] {
  const n = size === 'full' ? 1 : 0;
  const tasks: ExpectedTask[] = [];
  const tenants = ['acme', 'globex', 'initech'];
  const tiers = ['critical', 'high', 'normal', 'low'] as const;
  for (let i = 0; i < (n ? 24 : 6); i++) {
    tasks.push({
      input: {
        tenantId: tenants[i % tenants.length]!,
        type: 'demo.echo',
        payload: { i },
        priority: tiers[i % tiers.length]!,
        idempotencyKey: `echo-${i}`,
      },
      state: 'SUCCEEDED',
      attempts: 1,
      path: 'Lambda worker (512 MB entry class)',
    });
  }
  for (let i = 0; i < (n ? 4 : 1); i++) {
    tasks.push({
      input: { tenantId: 'acme', type: 'demo.sleep', payload: { ms: 200 }, resources: { memoryMiB: 1536 } },
      state: 'SUCCEEDED',
      attempts: 1,
      path: 'Lambda worker, handed to the 2048 MB class by invoke',
    });
  }
  for (let i = 0; i < (n ? 4 : 1); i++) {
    tasks.push({
      input: { tenantId: 'globex', type: 'demo.echo', payload: { fargate: i }, runtime: 'fargate' },
      state: 'SUCCEEDED',
      attempts: 1,
      path: 'Fargate worker',
    });
  }
  for (let i = 0; i < (n ? 3 : 1); i++) {
    tasks.push({
      input: { tenantId: 'initech', type: 'demo.fail', payload: { failTimes: 1 }, maxAttempts: 3 },
      state: 'SUCCEEDED',
      attempts: 2,
      path: 'failed once, retried with backoff',
    });
  }
  tasks.push({
    input: { tenantId: 'initech', type: 'demo.fail', payload: { failTimes: 9 }, maxAttempts: 2 },
    state: 'FAILED',
    attempts: 2,
    path: 'failed every attempt',
  });
  tasks.push({
    input: {
      tenantId: 'acme',
      type: 'examples.weekly-sales-report',
      payload: { restaurantId: SAMPLE.restaurantIds[0], weekStart: SAMPLE.weekStart },
    },
    state: 'SUCCEEDED',
    attempts: 1,
    path: 'example: DynamoDB sales table to an S3 report',
  });
  if (n) {
    tasks.push({
      input: { tenantId: 'finance', type: 'examples.payments-reconciliation', payload: { night: SAMPLE.night } },
      state: 'SUCCEEDED',
      attempts: 1,
      path: 'example: ledger against orders (2048 MB class)',
    });
  }
  return tasks;
}

export async function runDeployCheck(options: DeployCheckOptions): Promise<DeployCheckReport> {
  const log = options.log ?? ((line: string) => console.log(line));
  const region = options.region ?? 'eu-west-1';
  const size = options.size ?? 'full';
  const started = Date.now();
  const workDir = mkdtempSync(path.join(tmpdir(), 'deploy-check-'));
  const logDir = path.join(workDir, 'logs');
  mkdirSync(logDir);
  const problems: string[] = [];
  const seconds = { bootstrap: 0, deploy: 0, tasks: 0, total: 0 };
  const stops: (() => Promise<void> | void)[] = [];
  let moto: MotoServer | undefined;
  try {
    moto = await startMotoServer(options.motoCommand);
    stops.push(() => moto?.stop());
    log(`deploy check: moto_server on ${moto.endpoint}, region ${region}, working folder ${workDir}`);
    const credentials = {
      accessKeyId: MOTO_CREDENTIALS.AWS_ACCESS_KEY_ID,
      secretAccessKey: MOTO_CREDENTIALS.AWS_SECRET_ACCESS_KEY,
    };
    const awsEnvironment: Record<string, string> = {
      ...MOTO_CREDENTIALS,
      AWS_ENDPOINT_URL: moto.endpoint,
      AWS_REGION: region,
      AWS_DEFAULT_REGION: region,
      AWS_EC2_METADATA_DISABLED: 'true',
    };

    // 1. cdk bootstrap and cdk deploy, as a user would, against moto.
    const config = JSON.parse(readFileSync(path.join(REPO_ROOT, 'config', 'default.json'), 'utf8')) as {
      deploy?: Record<string, unknown>;
    };
    const configFile = path.join(workDir, 'config.json');
    writeFileSync(
      configFile,
      JSON.stringify({
        ...config,
        // The check's caller acts for every tenant; nothing to protect in moto.
        deploy: { ...config.deploy, deletionProtection: false, callers: { [CALLER_ARN]: ['*'] } },
      }),
    );
    const cliEnvironment = { ...cleanEnvironment(), ...awsEnvironment, CDK_DISABLE_CLI_TELEMETRY: 'true' };
    let at = Date.now();
    await runLogged(
      process.execPath,
      [CDK_CLI, 'bootstrap', '--no-notices', `aws://${MOTO_ACCOUNT}/${region}`],
      { cwd: REPO_ROOT, env: cliEnvironment },
      path.join(logDir, 'cdk-bootstrap.log'),
    );
    seconds.bootstrap = Math.round((Date.now() - at) / 1000);
    log(`deploy check: cdk bootstrap aws://${MOTO_ACCOUNT}/${region}: done in ${seconds.bootstrap} s`);
    at = Date.now();
    const cloudAssembly = path.join(workDir, 'cdk.out');
    await runLogged(
      process.execPath,
      [
        CDK_CLI,
        'deploy',
        '--no-notices',
        '--require-approval',
        'never',
        '--context',
        `config=${configFile}`,
        '--context',
        `fargateWorkerImage=${PLACEHOLDER_IMAGE}`,
        '--output',
        cloudAssembly,
      ],
      { cwd: REPO_ROOT, env: cliEnvironment },
      path.join(logDir, 'cdk-deploy.log'),
    );
    seconds.deploy = Math.round((Date.now() - at) / 1000);
    const stackName = 'TaskScheduler';
    const stack = await readDeployedStack({
      stackName,
      cloudAssembly,
      client: { endpoint: moto.endpoint, region, credentials },
    });
    const { templateResources, createdResources } = stack;
    log(
      `deploy check: cdk deploy (Fargate worker image ${PLACEHOLDER_IMAGE}: not built, no Docker): done in ${seconds.deploy} s; ` +
        `${createdResources} of the template's ${templateResources} resources created by moto; not created by moto: ${Object.entries(
          stack.notCreated,
        )
          .map(([type, count]) => `${type} ×${count}`)
          .join(', ')}`,
    );
    for (const note of stack.notes) log(`deploy check: ${note}`);
    log(
      `deploy check: stack outputs from ${stack.outputsSource}` +
        (stack.outputsUnavailable.length > 0
          ? ` (${stack.outputsUnavailable.join(', ')}: not available, the resource is not created by moto; the HTTP API is played below)`
          : ''),
    );
    const expectedOutputs = ['TasksTableName', 'ControlTableName', 'QueueUrlTierHigh', 'ExampleResources'];
    for (const key of expectedOutputs) {
      if (!(key in stack.outputs))
        problems.push(`stack output ${key} missing (outputs: ${Object.keys(stack.outputs).join(', ')})`);
    }
    if (
      stack.outputs.TasksTableName &&
      !stack.functions.some((fn) => fn.environment.TASKS_TABLE === stack.outputs.TasksTableName)
    ) {
      problems.push(`no function reads the TasksTableName output's table ${stack.outputs.TasksTableName}`);
    }

    // 2. The services moto does not run, played around the deployed resources. moto runs an SQS
    // event source mapping itself on every SendMessage: it receives a batch, fails to start the
    // function (Docker) and makes the batch visible again, so each send counts a receive against
    // waiting messages and dead-letters them after five. The check plays the mapping instead, so
    // it turns moto's off (the mapping's settings are read above).
    const lambdaApi = new LambdaClient({ endpoint: moto.endpoint, region, credentials });
    for (const mapping of stack.eventSourceMappings) {
      await lambdaApi.send(new UpdateEventSourceMappingCommand({ UUID: mapping.uuid, Enabled: false }));
    }
    lambdaApi.destroy();
    const lambda = new LambdaService({
      functions: stack.functions,
      awsEnvironment,
      logDir,
      maxEnvironments: 4,
    });
    stops.push(() => lambda.stop());
    const lambdaEndpoint = await lambda.startInvokeEndpoint();
    const sqs = new SQSClient({ endpoint: moto.endpoint, region, credentials });
    stops.push(() => sqs.destroy());
    lambda.startEventSourceMappings(stack.eventSourceMappings, sqs);
    const byLogicalId = (logicalId: string) => {
      const fn = stack.functions.find((candidate) => candidate.logicalId === logicalId);
      if (!fn) throw new Error(`No deployed function ${logicalId}`);
      return fn.name;
    };
    const schedules = startSchedulePlayer({
      schedules: stack.schedules,
      functionName: byLogicalId,
      invokeAsync: (name, event) => lambda.invokeAsync(name, event),
    });
    stops.push(() => schedules.stop());
    const apiFunction = stack.functions.find((fn) => fn.logicalId.startsWith('ApiHandler'));
    if (!apiFunction) throw new Error('No API function in the deployed stack');
    const api = await startApiGateway({
      invoke: (event) => lambda.invoke(apiFunction.name, event),
      callerArn: CALLER_ARN,
      accountId: MOTO_ACCOUNT,
    });
    stops.push(() => api.close());
    const fargate = startFargateWorker(
      stack,
      { ...awsEnvironment, AWS_ENDPOINT_URL_LAMBDA: lambdaEndpoint },
      path.join(logDir, 'fargate-worker.log'),
    );
    stops.push(() => fargate.stop());
    log(
      `deploy check: played around moto: Lambda (${stack.functions.length} functions from their deployed bundles, ` +
        `${stack.eventSourceMappings.length} SQS event source mapping, invocations at ${lambdaEndpoint}), ` +
        `the HTTP API at ${api.url} (no SigV4 check: every request is ${CALLER_ARN}), ` +
        `EventBridge Scheduler (${stack.schedules.length} schedules from the deployed template), ` +
        "the Fargate service (one worker running runtime/handlers/fargate-worker.ts with the task definition's environment)",
    );

    // 3. Tasks end to end through the deployed tables and queues.
    at = Date.now();
    const exampleNames = JSON.parse(stack.outputs.ExampleResources ?? '{}') as ExampleResourceNames;
    const clients = createAwsClients({
      region,
      credentials,
      dynamodb: moto.endpoint,
      sqs: moto.endpoint,
      s3: moto.endpoint,
    });
    await seedExampleData(clients, exampleNames);
    const client = new SchedulerClient({ endpoint: api.url, sign: false });
    const planned = plannedTasks(size);
    const submitted: { taskId: string; expected: ExpectedTask }[] = [];
    for (const expected of planned) {
      const task = await client.submit(expected.input);
      submitted.push({ taskId: task.taskId, expected });
    }
    // An idempotent replay answers with the same task and creates nothing.
    const replay = await client.submit(planned[0]!.input);
    if (replay.taskId !== submitted[0]!.taskId) problems.push(`idempotent replay created ${replay.taskId}`);
    // A delayed task, cancelled while it waits.
    const delayed = await client.submit({ tenantId: 'acme', type: 'demo.echo', payload: {}, delaySeconds: 900 });
    const cancelled = await client.cancel(delayed.taskId);
    if (cancelled.state !== 'CANCELLED') problems.push(`cancel of a waiting task left it ${cancelled.state}`);
    // The nightly schedule, fired now: scheduled submit, then a reconciliation run.
    const nightly = stack.schedules.find((schedule) => schedule.expression.startsWith('cron('));
    let nightlyTaskId: string | undefined;
    if (nightly) {
      const input = schedules.fire(nightly.logicalId) as {
        scheduleName: string;
        scheduledTime: string;
        task: { tenantId: string };
      };
      const key = `schedule:${input.scheduleName}:${input.scheduledTime.slice(0, 16)}`;
      nightlyTaskId = await waitForScheduledTask(client, input.task.tenantId, key, options.settleTimeoutMs);
      if (!nightlyTaskId) problems.push(`the nightly schedule's firing created no task (idempotency key ${key})`);
    }
    log(
      `deploy check: submitted ${submitted.length} tasks through the API (+1 replay, +1 cancelled, +${nightlyTaskId ? 1 : 0} from the nightly schedule)`,
    );

    const deadline = Date.now() + (options.settleTimeoutMs ?? 15 * 60_000);
    const results: DeployCheckReport['tasks'][number][] = [];
    const settle = async (taskId: string, expected: { state: TaskState; attempts: number; path: string }) => {
      const detail = await waitSettled(client, taskId, deadline);
      const ok = detail.state === expected.state && detail.attempts === expected.attempts;
      results.push({ taskId, path: expected.path, state: detail.state, attempts: detail.attempts, ok });
      if (!ok) {
        problems.push(
          `${taskId} (${expected.path}): ${detail.state} after ${detail.attempts} attempts, expected ${expected.state} after ${expected.attempts}${detail.error ? ` (${JSON.stringify(detail.error)})` : ''}`,
        );
      }
      return detail;
    };
    for (const { taskId, expected } of submitted) {
      const detail = await settle(taskId, expected);
      if (expected.input.type === 'examples.weekly-sales-report' && detail.state === 'SUCCEEDED') {
        const { bucket, key } = detail.result as { bucket: string; key: string };
        const object = await clients.s3.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
        const report = JSON.parse(await object.Body!.transformToString()) as { restaurantId?: string };
        if (bucket !== exampleNames[EXAMPLE_BUCKET.id] || report.restaurantId !== SAMPLE.restaurantIds[0]) {
          problems.push(
            `weekly report ${bucket}/${key} is not the deployed bucket's report for ${SAMPLE.restaurantIds[0]}`,
          );
        }
      }
      if (expected.input.type === 'examples.payments-reconciliation' && detail.state === 'SUCCEEDED') {
        const { mismatches } = detail.result as { mismatches?: number };
        const expected = Object.keys(SAMPLE.expectedMismatches).length;
        if (mismatches !== expected) {
          problems.push(
            `reconciliation of ${SAMPLE.night} found ${mismatches} mismatches, the sample data has ${expected}`,
          );
        }
      }
    }
    results.push({
      taskId: delayed.taskId,
      path: 'delayed, cancelled while waiting',
      state: cancelled.state,
      attempts: cancelled.attempts,
      ok: cancelled.state === 'CANCELLED',
    });
    if (nightlyTaskId)
      await settle(nightlyTaskId, { state: 'SUCCEEDED', attempts: 1, path: 'nightly schedule, scheduled submit' });

    // 4. Nothing left behind: no dead letter in any queue (each named, with its receive counts,
    // before the redrive drain empties them), the drain runs clean, worker queues are empty.
    for (const [key, url] of Object.entries(stack.outputs)) {
      if (!key.startsWith('QueueUrl') || !key.endsWith('Dlq')) continue;
      const { Attributes } = await sqs.send(
        new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['ApproximateNumberOfMessages'] }),
      );
      const count = Number(Attributes?.ApproximateNumberOfMessages ?? 0);
      if (count === 0) continue;
      const { Messages } = await sqs.send(
        new ReceiveMessageCommand({
          QueueUrl: url,
          MaxNumberOfMessages: 10,
          VisibilityTimeout: 0,
          MessageSystemAttributeNames: ['All'],
        }),
      );
      problems.push(
        `${key}: ${count} dead letters, e.g. ${(Messages ?? [])
          .map((m) => `${m.Body?.slice(0, 160)} (${JSON.stringify(m.Attributes)})`)
          .join('; ')}`,
      );
    }
    const redrive = stack.functions.find((fn) => fn.logicalId.startsWith('RedriveHandler'));
    if (redrive) {
      const drained = await lambda.invoke(redrive.name, { reason: 'drain' });
      if (!drained.ok) problems.push(`the redrive drain failed: ${drained.errorMessage}`);
    }
    for (const key of [
      'QueueUrlWorkerLambda',
      'QueueUrlWorkerFargate',
      'QueueUrlWorkerLambdaDlq',
      'QueueUrlWorkerFargateDlq',
    ]) {
      const url = stack.outputs[key];
      if (!url) continue;
      const { Attributes } = await sqs.send(
        new GetQueueAttributesCommand({
          QueueUrl: url,
          AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'],
        }),
      );
      const left =
        Number(Attributes?.ApproximateNumberOfMessages ?? 0) +
        Number(Attributes?.ApproximateNumberOfMessagesNotVisible ?? 0);
      if (left !== 0) problems.push(`${key}: ${left} messages left`);
    }
    // Every log complete before it is read: the played services stop here (the check is done).
    const invocations = Object.fromEntries(
      [...lambda.stats()].map(([name, stat]) => [name, { invocations: stat.invocations, errors: stat.errors }]),
    );
    await lambda.stop();
    await fargate.stop();
    // Exactly once: each task's handler started as many times as the attempts DynamoDB counted
    // (the workers log 'task RUNNING' when an attempt starts its handler).
    const runs = handlerRuns([
      ...stack.functions.map((fn) => lambda.logFile(fn)),
      path.join(logDir, 'fargate-worker.log'),
    ]);
    for (const result of results) {
      const started = runs.get(result.taskId) ?? 0;
      if (started !== result.attempts) {
        problems.push(
          `${result.taskId} (${result.path}): its handler started ${started} times for ${result.attempts} attempts`,
        );
      }
    }
    seconds.tasks = Math.round((Date.now() - at) / 1000);
    for (const fn of stack.functions) {
      const stat = invocations[fn.name];
      // demo.fail's failures are task failures recorded in DynamoDB, not function errors.
      if (stat && stat.errors > 0)
        problems.push(`${fn.logicalId}: ${stat.errors} failed invocations (log: ${lambda.logFile(fn)})`);
    }
    const byState = new Map<string, number>();
    for (const result of results) byState.set(result.state, (byState.get(result.state) ?? 0) + 1);
    log(
      `deploy check: ${results.length} tasks settled in ${seconds.tasks} s: ${[...byState].map(([state, count]) => `${count} ${state}`).join(', ')}; ` +
        `${results.filter((r) => r.ok).length} as expected (state and attempt count, one handler run per attempt); function invocations: ` +
        Object.values(invocations).reduce((sum, stat) => sum + stat.invocations, 0),
    );
    seconds.total = Math.round((Date.now() - started) / 1000);
    return {
      region,
      templateResources,
      createdResources,
      notCreated: stack.notCreated,
      functions: stack.functions.length,
      tasks: results,
      problems,
      invocations,
      seconds,
      workDir,
    };
  } catch (error) {
    const motoTail = moto ? `\nmoto_server's last output:\n${moto.output().slice(-3000)}` : '';
    throw new Error(
      `deploy check failed (logs in ${workDir}): ${error instanceof Error ? error.message : String(error)}${motoTail}`,
      {
        cause: error,
      },
    );
  } finally {
    for (const stop of stops.reverse()) {
      try {
        await stop();
      } catch {
        // Stopping is best effort; the report already says what happened.
      }
    }
    if (!options.keep && problems.length === 0 && seconds.total > 0) rmSync(workDir, { recursive: true, force: true });
  }
}

/** The environment without AWS or CDK settings of the caller's own (credentials, profile, region). */
function cleanEnvironment(): Record<string, string> {
  return Object.fromEntries(
    Object.entries(process.env).filter(
      (entry): entry is [string, string] =>
        entry[1] !== undefined && !/^(AWS_|CDK_)/.test(entry[0]) && entry[0] !== 'SCHEDULER_CONFIG',
    ),
  );
}

function runLogged(
  command: string,
  args: string[],
  options: { cwd: string; env: Record<string, string> },
  logFile: string,
): Promise<void> {
  return new Promise((resolve, reject) => {
    const out = createWriteStream(logFile);
    const child = spawn(command, args, { ...options, stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout.pipe(out, { end: false });
    child.stderr.pipe(out, { end: false });
    child.once('error', reject);
    child.once('exit', (code) => {
      out.end(() => {
        if (code === 0) resolve();
        else {
          const tail = readFileSync(logFile, 'utf8').split('\n').slice(-40).join('\n');
          reject(new Error(`${path.basename(args[1] ?? command)} ${args[1]} exited ${code}:\n${tail}`));
        }
      });
    });
  });
}

function startFargateWorker(stack: DeployedStack, awsEnvironment: Record<string, string>, logFile: string) {
  const out = createWriteStream(logFile);
  const child: ChildProcess = spawn(
    process.execPath,
    ['--experimental-strip-types', '--no-warnings', path.join(REPO_ROOT, 'runtime', 'handlers', 'fargate-worker.ts')],
    {
      cwd: REPO_ROOT,
      env: {
        PATH: process.env.PATH ?? '',
        HOME: process.env.HOME ?? '',
        ...awsEnvironment,
        ...stack.fargateEnvironment,
        // The check counts each attempt's 'task RUNNING' line, logged at debug (issue 28).
        POWERTOOLS_LOG_LEVEL: 'DEBUG',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  child.stdout?.pipe(out, { end: false });
  child.stderr?.pipe(out, { end: false });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  let stopping: Promise<void> | undefined;
  return {
    stop() {
      stopping ??= (async () => {
        if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
        await exited;
        await new Promise<void>((resolve) => out.end(() => resolve()));
      })();
      return stopping;
    },
  };
}

/** Handler starts per task id, from the workers' 'task RUNNING' log lines (Powertools JSON). */
function handlerRuns(logFiles: readonly string[]): Map<string, number> {
  const runs = new Map<string, number>();
  for (const file of logFiles) {
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch {
      continue; // a function never invoked has no log
    }
    for (const line of text.split('\n')) {
      if (!line.includes('"task RUNNING"')) continue;
      try {
        const entry = JSON.parse(line) as { message?: string; taskId?: string };
        if (entry.message === 'task RUNNING' && entry.taskId) runs.set(entry.taskId, (runs.get(entry.taskId) ?? 0) + 1);
      } catch {
        // Not a JSON log line.
      }
    }
  }
  return runs;
}

const SETTLED: readonly TaskState[] = ['SUCCEEDED', 'FAILED', 'CANCELLED'];

async function waitSettled(client: SchedulerClient, taskId: string, deadline: number): Promise<TaskDetail> {
  for (;;) {
    const detail = await client.get(taskId);
    if (SETTLED.includes(detail.state) || Date.now() > deadline) return detail;
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}

async function waitForScheduledTask(
  client: SchedulerClient,
  tenantId: string,
  idempotencyKey: string,
  timeoutMs = 15 * 60_000,
): Promise<string | undefined> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    for await (const task of client.list({ tenantId })) {
      if (task.idempotencyKey === idempotencyKey) return task.taskId;
    }
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
  return undefined;
}

/** `npm run check:deploy`: the full check, its report, exit 1 on any problem. */
async function main(): Promise<void> {
  const { findMotoServer } = await import('../helpers/moto-server.ts');
  const moto = findMotoServer();
  if (!moto.found) {
    console.log(`deploy check: not run: ${moto.reason}`);
    process.exitCode = 1;
    return;
  }
  const keep = process.argv.includes('--keep');
  const size = process.argv.includes('--quick') ? 'quick' : 'full';
  const report = await runDeployCheck({ motoCommand: moto.command, size, keep });
  console.log(
    `deploy check: ${report.problems.length === 0 ? 'passed' : 'FAILED'} in ${report.seconds.total} s ` +
      `(bootstrap ${report.seconds.bootstrap} s, deploy ${report.seconds.deploy} s, tasks ${report.seconds.tasks} s)`,
  );
  for (const problem of report.problems) console.log(`  problem: ${problem}`);
  if (report.problems.length > 0) {
    console.log(`  logs: ${report.workDir}`);
    process.exitCode = 1;
  }
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main().catch((error: unknown) => {
    console.error(error instanceof Error ? error.message : String(error));
    process.exitCode = 1;
  });
}
