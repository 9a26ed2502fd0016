/**
 * The Lambda service, played for the functions of a stack deployed into moto (moto stores
 * functions and event source mappings but runs code only in Docker): execution environments as
 * child processes running each function's deployed bundle (lambda-runtime.ts), the Invoke API on
 * a loopback port (the functions' own LambdaClient reaches it through AWS_ENDPOINT_URL_LAMBDA:
 * scheduler wakes, hand-overs, memory-class hand-offs), and each SQS event source mapping as
 * Lambda runs it (long-poll, batch, partial batch responses, MaximumConcurrency).
 *
 * What differs from Lambda, on purpose: asynchronous retries wait 1 s instead of about a minute
 * (the retry count is the function's, from its EventInvokeConfig); an environment is reused until
 * the check ends (no idle reaping); a timed-out invocation kills its environment, as on Lambda.
 */
import { type ChildProcess, fork } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { createWriteStream, type WriteStream } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  DeleteMessageBatchCommand,
  GetQueueUrlCommand,
  type Message,
  ReceiveMessageCommand,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import type { InvokeReply, InvokeRequest } from './lambda-runtime.ts';

const RUNTIME = path.join(path.dirname(fileURLToPath(import.meta.url)), 'lambda-runtime.ts');

export interface DeployedFunction {
  readonly logicalId: string;
  readonly name: string;
  readonly arn: string;
  /** The deployed bundle's entry file and its export (`index.handler` → index.mjs, handler). */
  readonly handlerFile: string;
  readonly handlerExport: string;
  /** The function's environment variables, as deployed. */
  readonly environment: Readonly<Record<string, string>>;
  readonly timeoutSeconds: number;
  readonly memoryMiB: number;
  /** Retries of a failed asynchronous invocation (EventInvokeConfig; Lambda's default 2). */
  readonly asyncRetries: number;
}

export interface EventSourceMapping {
  readonly uuid: string;
  readonly functionName: string;
  readonly queueArn: string;
  readonly batchSize: number;
  readonly maximumConcurrency: number;
  readonly reportBatchItemFailures: boolean;
}

export type InvokeOutcome =
  | { readonly ok: true; readonly result: unknown }
  | { readonly ok: false; readonly errorType: string; readonly errorMessage: string };

export interface FunctionStats {
  invocations: number;
  asyncInvocations: number;
  errors: number;
  environments: number;
}

interface Environment {
  readonly child: ChildProcess;
  readonly ready: Promise<void>;
  busy: boolean;
  dead: boolean;
  readonly pending: Map<number, (reply: InvokeReply | { type: 'exit'; code: number | null }) => void>;
}

export interface LambdaServiceOptions {
  readonly functions: readonly DeployedFunction[];
  /** AWS endpoints, credentials and region every environment gets. */
  readonly awsEnvironment: Readonly<Record<string, string>>;
  /** Each function's stdout and stderr go to `<logDir>/<name>.log`. */
  readonly logDir: string;
  /** Environments at most per function (Lambda's concurrency, scaled to one machine). @default 4 */
  readonly maxEnvironments?: number;
  /** Told of every invocation's end (for the check's report). */
  readonly onInvoked?: (fn: DeployedFunction, outcome: InvokeOutcome, invocationType: 'sync' | 'async') => void;
}

export class LambdaService {
  readonly #options: LambdaServiceOptions;
  readonly #byName = new Map<string, DeployedFunction>();
  readonly #environments = new Map<string, Environment[]>();
  readonly #waiters = new Map<string, (() => void)[]>();
  readonly #logs = new Map<string, WriteStream>();
  readonly #stats = new Map<string, FunctionStats>();
  readonly #asyncInFlight = new Set<Promise<void>>();
  #server: Server | undefined;
  #invokeEndpoint: string | undefined;
  #stopped = false;
  #nextId = 1;
  readonly #pollers: Promise<void>[] = [];

  constructor(options: LambdaServiceOptions) {
    this.#options = options;
    for (const fn of options.functions) {
      this.#byName.set(fn.name, fn);
      this.#byName.set(fn.arn, fn);
      this.#stats.set(fn.name, { invocations: 0, asyncInvocations: 0, errors: 0, environments: 0 });
    }
  }

  /** Invocations, errors and environments per function name. */
  stats(): ReadonlyMap<string, FunctionStats> {
    return this.#stats;
  }

  function(nameOrArn: string): DeployedFunction {
    // `function:NAME:QUALIFIER` and partial ARNs: the name is what matters here.
    const fn = this.#byName.get(nameOrArn) ?? this.#byName.get(nameOrArn.split(':').at(-1) ?? '');
    if (!fn) throw new Error(`No deployed function ${nameOrArn}`);
    return fn;
  }

  /** A synchronous invoke (RequestResponse). */
  async invoke(nameOrArn: string, event: unknown): Promise<InvokeOutcome> {
    const fn = this.function(nameOrArn);
    this.#stats.get(fn.name)!.invocations++;
    const outcome = await this.#run(fn, event);
    if (!outcome.ok) this.#stats.get(fn.name)!.errors++;
    this.#options.onInvoked?.(fn, outcome, 'sync');
    return outcome;
  }

  /** An asynchronous invoke (Event): queued, answered at once, retried on error as Lambda does. */
  invokeAsync(nameOrArn: string, event: unknown): void {
    const fn = this.function(nameOrArn);
    this.#stats.get(fn.name)!.asyncInvocations++;
    const run = (async () => {
      for (let attempt = 0; attempt <= fn.asyncRetries && !this.#stopped; attempt++) {
        if (attempt > 0) await sleep(1_000);
        this.#stats.get(fn.name)!.invocations++;
        const outcome = await this.#run(fn, event);
        this.#options.onInvoked?.(fn, outcome, 'async');
        if (outcome.ok) return;
        this.#stats.get(fn.name)!.errors++;
      }
    })();
    this.#asyncInFlight.add(run);
    void run.finally(() => this.#asyncInFlight.delete(run));
  }

  /** Asynchronous invocations queued or running. */
  get asyncInFlight(): number {
    return this.#asyncInFlight.size;
  }

  /** The Lambda Invoke API (`POST /2015-03-31/functions/{name}/invocations`) on a loopback port. */
  async startInvokeEndpoint(): Promise<string> {
    const server = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        const match = /^\/2015-03-31\/functions\/([^/]+)\/invocations/.exec(request.url ?? '');
        const reply = (status: number, body: string, headers: Record<string, string> = {}) => {
          response.writeHead(status, { 'content-type': 'application/json', ...headers });
          response.end(body);
        };
        if (request.method !== 'POST' || !match) {
          reply(404, JSON.stringify({ message: `Not played here: ${request.method} ${request.url}` }));
          return;
        }
        let fn: DeployedFunction;
        try {
          fn = this.function(decodeURIComponent(match[1]!));
        } catch (error) {
          reply(404, JSON.stringify({ Type: 'User', message: String(error) }), {
            'x-amzn-errortype': 'ResourceNotFoundException',
          });
          return;
        }
        const text = Buffer.concat(chunks).toString('utf8');
        const event = text ? (JSON.parse(text) as unknown) : {};
        const requestId = randomUUID();
        if ((request.headers['x-amz-invocation-type'] ?? 'RequestResponse') === 'Event') {
          this.invokeAsync(fn.name, event);
          reply(202, '', { 'x-amzn-requestid': requestId });
          return;
        }
        this.invoke(fn.name, event).then(
          (outcome) =>
            outcome.ok
              ? reply(200, JSON.stringify(outcome.result ?? null), { 'x-amzn-requestid': requestId })
              : reply(200, JSON.stringify({ errorType: outcome.errorType, errorMessage: outcome.errorMessage }), {
                  'x-amz-function-error': 'Unhandled',
                  'x-amzn-requestid': requestId,
                }),
          (error: unknown) => reply(500, JSON.stringify({ message: String(error) })),
        );
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    this.#server = server;
    this.#invokeEndpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    return this.#invokeEndpoint;
  }

  /** Run each SQS event source mapping as Lambda's pollers do, until stop(). */
  startEventSourceMappings(mappings: readonly EventSourceMapping[], sqs: SQSClient): void {
    for (const mapping of mappings) this.#pollers.push(this.#poll(mapping, sqs));
  }

  async #poll(mapping: EventSourceMapping, sqs: SQSClient): Promise<void> {
    const fn = this.function(mapping.functionName);
    const queueName = mapping.queueArn.split(':').at(-1)!;
    const { QueueUrl } = await sqs.send(new GetQueueUrlCommand({ QueueName: queueName }));
    const concurrency = Math.max(1, Math.min(mapping.maximumConcurrency, this.#options.maxEnvironments ?? 4));
    const running = new Set<Promise<void>>();
    while (!this.#stopped) {
      if (running.size >= concurrency) {
        await Promise.race(running);
        continue;
      }
      let messages: Message[];
      try {
        const received = await sqs.send(
          new ReceiveMessageCommand({
            QueueUrl,
            MaxNumberOfMessages: mapping.batchSize,
            WaitTimeSeconds: 1,
            MessageSystemAttributeNames: ['All'],
            MessageAttributeNames: ['All'],
          }),
        );
        messages = received.Messages ?? [];
      } catch (error) {
        if (this.#stopped) break;
        this.#log(fn, `event source mapping: receive failed: ${String(error)}`);
        await sleep(1_000);
        continue;
      }
      if (messages.length === 0) continue;
      const batch = this.#deliver(fn, mapping, QueueUrl!, messages, sqs);
      running.add(batch);
      void batch.finally(() => running.delete(batch));
    }
    await Promise.all(running);
  }

  async #deliver(
    fn: DeployedFunction,
    mapping: EventSourceMapping,
    queueUrl: string,
    messages: Message[],
    sqs: SQSClient,
  ): Promise<void> {
    const region = mapping.queueArn.split(':')[3] ?? 'us-east-1';
    const event = {
      Records: messages.map((message) => ({
        messageId: message.MessageId,
        receiptHandle: message.ReceiptHandle,
        body: message.Body,
        attributes: message.Attributes ?? {},
        messageAttributes: Object.fromEntries(
          Object.entries(message.MessageAttributes ?? {}).map(([key, value]) => [
            key,
            { stringValue: value.StringValue, dataType: value.DataType, stringListValues: [], binaryListValues: [] },
          ]),
        ),
        md5OfBody: message.MD5OfBody,
        eventSource: 'aws:sqs',
        eventSourceARN: mapping.queueArn,
        awsRegion: region,
      })),
    };
    this.#log(
      fn,
      `event source mapping: delivering ${messages.map((m) => `${m.MessageId} (receive ${m.Attributes?.ApproximateReceiveCount})`).join(', ')}`,
    );
    const outcome = await this.invoke(fn.name, event);
    // A failed invocation leaves the whole batch to come back after its visibility timeout.
    if (!outcome.ok) {
      this.#log(
        fn,
        `event source mapping: invocation failed (${outcome.errorType}): the batch comes back after its visibility timeout`,
      );
      return;
    }
    const failed = new Set(
      mapping.reportBatchItemFailures
        ? (
            (outcome.result as { batchItemFailures?: { itemIdentifier: string }[] } | null)?.batchItemFailures ?? []
          ).map((failure) => failure.itemIdentifier)
        : [],
    );
    const done = messages.filter((message) => !failed.has(message.MessageId ?? ''));
    if (done.length === 0) return;
    const deleted = await sqs.send(
      new DeleteMessageBatchCommand({
        QueueUrl: queueUrl,
        Entries: done.map((message, i) => ({ Id: String(i), ReceiptHandle: message.ReceiptHandle })),
      }),
    );
    if ((deleted.Failed ?? []).length > 0) {
      this.#log(fn, `event source mapping: delete refused: ${JSON.stringify(deleted.Failed)}`);
    }
  }

  async #run(fn: DeployedFunction, event: unknown): Promise<InvokeOutcome> {
    if (this.#stopped)
      return { ok: false, errorType: 'ServiceStopped', errorMessage: 'the played Lambda service stopped' };
    const environment = await this.#acquire(fn);
    try {
      await environment.ready;
    } catch (error) {
      this.#release(fn, environment);
      return { ok: false, errorType: 'Runtime.InitError', errorMessage: String(error) };
    }
    const id = this.#nextId++;
    const deadlineMs = Date.now() + fn.timeoutSeconds * 1000;
    const reply = await new Promise<InvokeReply | { type: 'exit'; code: number | null } | { type: 'timeout' }>(
      (resolve) => {
        const timer = setTimeout(() => resolve({ type: 'timeout' }), fn.timeoutSeconds * 1000 + 1_000);
        environment.pending.set(id, (message) => {
          clearTimeout(timer);
          resolve(message);
        });
        environment.child.send({
          type: 'invoke',
          id,
          event,
          deadlineMs,
          requestId: randomUUID(),
        } satisfies InvokeRequest);
      },
    );
    environment.pending.delete(id);
    if (reply.type === 'timeout') {
      // As on Lambda: the environment that timed out is not reused.
      environment.dead = true;
      environment.child.kill('SIGKILL');
    }
    this.#release(fn, environment);
    switch (reply.type) {
      case 'result':
        return { ok: true, result: reply.result };
      case 'error':
        return { ok: false, errorType: reply.errorType, errorMessage: reply.errorMessage };
      case 'timeout':
        return {
          ok: false,
          errorType: 'Sandbox.Timedout',
          errorMessage: `Task timed out after ${fn.timeoutSeconds} s`,
        };
      default:
        return { ok: false, errorType: 'Runtime.ExitError', errorMessage: `environment exited (${reply.code})` };
    }
  }

  async #acquire(fn: DeployedFunction): Promise<Environment> {
    const max = this.#options.maxEnvironments ?? 4;
    for (;;) {
      const pool = (this.#environments.get(fn.name) ?? []).filter((environment) => !environment.dead);
      this.#environments.set(fn.name, pool);
      const idle = pool.find((environment) => !environment.busy);
      if (idle) {
        idle.busy = true;
        return idle;
      }
      if (pool.length < max) {
        const environment = this.#spawn(fn);
        environment.busy = true;
        pool.push(environment);
        return environment;
      }
      await new Promise<void>((resolve) => {
        const waiters = this.#waiters.get(fn.name) ?? [];
        waiters.push(resolve);
        this.#waiters.set(fn.name, waiters);
      });
    }
  }

  #release(fn: DeployedFunction, environment: Environment): void {
    environment.busy = false;
    this.#waiters.get(fn.name)?.shift()?.();
  }

  #spawn(fn: DeployedFunction): Environment {
    this.#stats.get(fn.name)!.environments++;
    const log = this.#logFor(fn);
    const child = fork(RUNTIME, [], {
      execArgv: ['--experimental-strip-types', '--no-warnings', '--enable-source-maps'],
      // Lambda's environment is the function's own, not the invoker's.
      env: {
        PATH: process.env.PATH ?? '',
        HOME: process.env.HOME ?? '',
        TZ: 'UTC',
        ...this.#options.awsEnvironment,
        // The functions' own LambdaClient (wakes, hand-overs, hand-offs) reaches this service.
        ...(this.#invokeEndpoint ? { AWS_ENDPOINT_URL_LAMBDA: this.#invokeEndpoint } : {}),
        ...fn.environment,
        // The check counts each attempt's 'task RUNNING' line, logged at debug (issue 28).
        POWERTOOLS_LOG_LEVEL: 'DEBUG',
        AWS_LAMBDA_FUNCTION_NAME: fn.name,
        AWS_LAMBDA_FUNCTION_MEMORY_SIZE: String(fn.memoryMiB),
        AWS_LAMBDA_FUNCTION_VERSION: '$LATEST',
        AWS_EXECUTION_ENV: 'AWS_Lambda_nodejs24.x',
        DEPLOY_CHECK_HANDLER_FILE: fn.handlerFile,
        DEPLOY_CHECK_HANDLER_EXPORT: fn.handlerExport,
        DEPLOY_CHECK_FUNCTION_ARN: fn.arn,
      },
      stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
    });
    child.stdout?.pipe(log, { end: false });
    child.stderr?.pipe(log, { end: false });
    const pending: Environment['pending'] = new Map();
    let markReady: () => void;
    let failInit: (error: Error) => void;
    const ready = new Promise<void>((resolve, reject) => {
      markReady = resolve;
      failInit = reject;
    });
    const environment: Environment = { child, ready, busy: false, dead: false, pending };
    child.on('message', (message: InvokeReply | { type: 'ready' }) => {
      if (message.type === 'ready') markReady();
      else pending.get(message.id)?.(message);
    });
    child.once('exit', (code) => {
      environment.dead = true;
      failInit(new Error(`${fn.name}: environment exited during init (${code}); see ${this.logFile(fn)}`));
      for (const resolve of pending.values()) resolve({ type: 'exit', code });
    });
    ready.catch(() => undefined);
    return environment;
  }

  logFile(fn: DeployedFunction): string {
    return path.join(this.#options.logDir, `${fn.name}.log`);
  }

  #logFor(fn: DeployedFunction): WriteStream {
    let log = this.#logs.get(fn.name);
    if (!log) {
      log = createWriteStream(this.logFile(fn), { flags: 'a' });
      this.#logs.set(fn.name, log);
    }
    return log;
  }

  #log(fn: DeployedFunction, line: string): void {
    this.#logFor(fn).write(`[deploy check] ${line}\n`);
  }

  #stopping: Promise<void> | undefined;

  /** Stop polling, end every environment (running invocations with it) and close the logs; idempotent. */
  stop(): Promise<void> {
    this.#stopping ??= this.#stop();
    return this.#stopping;
  }

  async #stop(): Promise<void> {
    this.#stopped = true;
    // Running invocations end with their environments (as when Lambda reclaims them).
    const environments = [...this.#environments.values()].flat();
    for (const environment of environments) {
      if (environment.child.exitCode === null && environment.child.signalCode === null)
        environment.child.kill('SIGTERM');
    }
    await Promise.all(
      environments.map(
        (environment) =>
          new Promise<void>((resolve) => {
            if (environment.child.exitCode !== null || environment.child.signalCode !== null) resolve();
            else environment.child.once('exit', () => resolve());
          }),
      ),
    );
    await Promise.all(this.#pollers);
    await Promise.all([...this.#asyncInFlight]);
    await new Promise<void>((resolve) => (this.#server ? this.#server.close(() => resolve()) : resolve()));
    this.#server?.closeAllConnections();
    await Promise.all([...this.#logs.values()].map((log) => new Promise<void>((resolve) => log.end(() => resolve()))));
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
