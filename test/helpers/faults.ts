/**
 * Fault injection for the emulator-backed AWS SDK clients: what dynalite and fauxqs never do on
 * their own. A middleware on each client (AWS SDK v3 `middlewareStack`, `initialize` step, so it
 * sits above the SDK's own retries: what it throws is what our code sees once retries are spent)
 * can, per call:
 *   - `throttle`: refuse before the request is sent (ProvisionedThroughputExceeded / RequestThrottled);
 *   - `ambiguous`: let the request land, then throw a timeout (the caller cannot tell it landed);
 *   - `crash`: kill the component: this call and every later one throws `Crash` before sending,
 *     as if the process died here (requests already on the wire still land);
 *   - `duplicate`: on ReceiveMessage, hand every message back 2–3 times in the same batch, so a
 *     consumer processes the same delivery concurrently.
 * A `WriteLog` observes every task write that landed, to audit histories after a run.
 */

import { DynamoDBClient, ProvisionedThroughputExceededException } from '@aws-sdk/client-dynamodb';
import { PurgeQueueCommand, RequestThrottled, SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { Emulators } from '../../local/emulators.ts';
import { BatchStore } from '../../runtime/adapters/batch-store.ts';
import { ControlStore } from '../../runtime/adapters/control-store.ts';
import { LeasePages } from '../../runtime/adapters/lease-pages.ts';
import { parseInsert } from '../../runtime/adapters/partiql-insert.ts';
import { QueueClient } from '../../runtime/adapters/queues.ts';
import { TaskStore } from '../../runtime/adapters/task-store.ts';
import { TaskService } from '../../runtime/app/task-service.ts';
import type { SchedulerConfig } from '../../runtime/core/config.ts';
import { isTerminal, type Task, type TaskState } from '../../runtime/core/task.ts';
import { CONTROL_TABLE, LEASES_TABLE, TASKS_TABLE } from '../../runtime/infra/resources.ts';
import type { TaskTypeRegistry } from '../../runtime/task-types/define.ts';

/** A component "died" at this point: nothing after it runs. */
export class Crash extends Error {
  constructor(where: string) {
    super(`injected crash at ${where}`);
    this.name = 'Crash';
  }
}

export type FaultKind = 'throttle' | 'ambiguous' | 'crash' | 'duplicate';

export interface SdkCall {
  readonly service: 'dynamodb' | 'sqs';
  /** e.g. `PutItemCommand`, `SendMessageBatchCommand`. */
  readonly command: string;
  /** Table id (`tasks`, `control`) or queue id (`tier-normal`, `worker-lambda`, ...). */
  readonly target: string;
  readonly input: Record<string, unknown>;
}

export type FaultDecider = (call: SdkCall) => FaultKind | undefined;

export interface FaultCounts {
  calls: number;
  throttle: number;
  ambiguous: number;
  crash: number;
  duplicate: number;
}

export const newCounts = (): FaultCounts => ({ calls: 0, throttle: 0, ambiguous: 0, crash: 0, duplicate: 0 });

/** Seeded PRNG: fault schedules replay exactly from a fast-check seed. */
export { seededRandom } from '../../runtime/core/random.ts';

/** Faults at random with the given per-call probabilities (only where they make sense). */
export function randomFaults(
  random: () => number,
  rates: Partial<Record<FaultKind, number>>,
  only: (call: SdkCall) => boolean = () => true,
): FaultDecider {
  return (call) => {
    if (!only(call)) return undefined;
    const roll = random();
    let edge = 0;
    for (const kind of ['crash', 'throttle', 'ambiguous', 'duplicate'] as const) {
      if (kind === 'duplicate' && call.command !== 'ReceiveMessageCommand') continue;
      edge += rates[kind] ?? 0;
      if (roll < edge) return kind;
    }
    return undefined;
  };
}

export function throttleError(service: SdkCall['service']): Error {
  return service === 'dynamodb'
    ? new ProvisionedThroughputExceededException({ message: 'injected: throughput exceeded', $metadata: {} })
    : new RequestThrottled({ message: 'injected: request throttled', $metadata: {} });
}

export function ambiguousError(): Error {
  return Object.assign(new Error('injected: socket timed out after the request was sent'), {
    name: 'TimeoutError',
    $metadata: {},
  });
}

type AnyClient = DynamoDBClient | SQSClient;

/** A client's fault state: what was injected, and whether its component is dead. */
export class FaultInjector {
  readonly counts = newCounts();
  decide: FaultDecider | undefined;
  #dead: string | undefined;
  #inFlight = 0;
  #idleWaiters: (() => void)[] = [];

  constructor(decide?: FaultDecider) {
    this.decide = decide;
  }

  get dead(): boolean {
    return this.#dead !== undefined;
  }

  /** Injectors of the same process: a crash kills them all. */
  readonly peers: FaultInjector[] = [];

  /** Every later call throws Crash before it is sent. */
  kill(where = 'kill'): void {
    if (this.#dead) return;
    this.#dead = where;
    for (const peer of this.peers) peer.kill(where);
  }

  /** Resolves once no call is on the wire (a dead component's last writes have landed or not). */
  idle(): Promise<void> {
    if (this.#inFlight === 0) return Promise.resolve();
    return new Promise((resolve) => this.#idleWaiters.push(resolve));
  }

  /** Install on a client. `targetOf` maps the call's input to a table or queue id. */
  install(
    client: AnyClient,
    service: SdkCall['service'],
    targetOf: (input: Record<string, unknown>) => string,
    onLanded?: (call: SdkCall, output: Record<string, unknown> | undefined) => void,
  ): void {
    const middleware = (next: (args: unknown) => Promise<unknown>, context: { commandName?: string }) =>
      (async (args: { input: Record<string, unknown> }) => {
        const call: SdkCall = {
          service,
          command: context.commandName ?? 'unknown',
          target: targetOf(args.input),
          input: args.input,
        };
        this.counts.calls++;
        if (this.#dead) throw new Crash(`${this.#dead} (then ${call.command} ${call.target})`);
        const fault = this.decide?.(call);
        if (fault === 'crash') {
          this.counts.crash++;
          this.kill(`${call.command} ${call.target}`);
          throw new Crash(`${call.command} ${call.target}`);
        }
        if (fault === 'throttle') {
          this.counts.throttle++;
          throw throttleError(service);
        }
        this.#inFlight++;
        let result: { output?: { Messages?: unknown[] } & Record<string, unknown> };
        try {
          result = (await next(args)) as typeof result;
        } finally {
          this.#inFlight--;
          if (this.#inFlight === 0) for (const wake of this.#idleWaiters.splice(0)) wake();
        }
        onLanded?.(call, result.output);
        if (fault === 'ambiguous') {
          this.counts.ambiguous++;
          throw ambiguousError();
        }
        const messages = result.output?.Messages;
        if (fault === 'duplicate' && messages && messages.length > 0) {
          this.counts.duplicate++;
          // The same delivery (same receipt handle) two or three times, handled concurrently.
          result.output!.Messages = messages.flatMap((m, i) => (i % 2 === 0 ? [m, m, m] : [m, m]));
        }
        return result;
      }) as never;
    (client.middlewareStack as { add: (m: unknown, o: unknown) => void }).add(middleware, {
      step: 'initialize',
      name: 'faultInjection',
      override: true,
    });
  }
}

/** Every task write that landed, in the order the store answered (dynalite serialises writes). */
export class WriteLog {
  readonly #writes: Task[] = [];
  readonly #byTask = new Map<string, Task[]>();

  record(task: Task): void {
    this.#writes.push(task);
    const list = this.#byTask.get(task.taskId) ?? [];
    list.push(task);
    this.#byTask.set(task.taskId, list);
  }

  get size(): number {
    return this.#writes.length;
  }

  /** Versions of one task, oldest first. */
  history(taskId: string): Task[] {
    return [...(this.#byTask.get(taskId) ?? [])].sort((a, b) => a.version - b.version);
  }

  /** How many landed writes moved the task into `state`. */
  entries(taskId: string, state: TaskState): number {
    const history = this.history(taskId);
    return history.filter((t, i) => t.state === state && (i === 0 || history[i - 1]!.state !== state)).length;
  }

  /**
   * Audit every landed write. Returns human-readable violations (empty when all hold):
   * versions strictly increase by one (no lost update), no write after a terminal state, attempts
   * never above maxAttempts, tier and aging origin kept across retries, at most one SUCCEEDED,
   * and per-tenant DISPATCHED+RUNNING never above `quota(tenantId)` at any point in the log.
   */
  audit(quota: (tenantId: string) => number): string[] {
    const problems: string[] = [];
    for (const [taskId] of this.#byTask) {
      const history = this.history(taskId);
      const first = history[0]!;
      history.forEach((task, i) => {
        if (i > 0 && task.version !== history[i - 1]!.version + 1) {
          problems.push(`${taskId}: version ${history[i - 1]!.version} followed by ${task.version}`);
        }
        if (i > 0 && isTerminal(history[i - 1]!.state)) {
          problems.push(`${taskId}: written ${task.state} (v${task.version}) after terminal ${history[i - 1]!.state}`);
        }
        if (task.attempts > task.maxAttempts) {
          problems.push(`${taskId}: attempts ${task.attempts} > maxAttempts ${task.maxAttempts}`);
        }
        if (task.priority !== first.priority || task.agingFrom !== first.agingFrom) {
          problems.push(`${taskId}: tier/aging changed to ${task.priority}/${task.agingFrom} at v${task.version}`);
        }
      });
      if (this.entries(taskId, 'SUCCEEDED') > 1) problems.push(`${taskId}: SUCCEEDED written more than once`);
    }
    const state = new Map<string, Task>();
    const active = new Map<string, number>();
    const isActive = (task: Task | undefined) => task?.state === 'DISPATCHED' || task?.state === 'RUNNING';
    for (const write of this.#writes) {
      const before = state.get(write.taskId);
      if (before && before.version >= write.version) continue; // answered out of order: older
      state.set(write.taskId, write);
      const delta = (isActive(write) ? 1 : 0) - (isActive(before) ? 1 : 0);
      if (delta === 0) continue;
      const count = (active.get(write.tenantId) ?? 0) + delta;
      active.set(write.tenantId, count);
      if (count > quota(write.tenantId)) {
        problems.push(`tenant ${write.tenantId}: ${count} dispatched/running > quota ${quota(write.tenantId)}`);
      }
    }
    return problems;
  }
}

/** The stores and queues of one component (a scheduler, a worker process) on its own clients. */
export interface FaultyComponent {
  readonly name: string;
  readonly dynamo: FaultInjector;
  readonly sqs: FaultInjector;
  readonly store: TaskStore;
  readonly control: ControlStore;
  readonly queues: QueueClient;
  readonly tasks: TaskService;
  /** Batch items over this component's clients (no counting hook: its store counts nothing). */
  readonly batches: BatchStore;
  /** The process dies: every later SDK call throws Crash. */
  kill(where?: string): void;
  readonly dead: boolean;
  /** Wait until its last requests have landed, then close its clients. */
  dispose(): Promise<void>;
}

export function faultyComponent(options: {
  name: string;
  emulators: Emulators;
  config: SchedulerConfig;
  registry: TaskTypeRegistry;
  now: () => Date;
  decide?: FaultDecider;
  log?: WriteLog;
}): FaultyComponent {
  const { emulators } = options;
  const credentials = { accessKeyId: 'local', secretAccessKey: 'local' };
  // Fresh clients, so a dead component's failures are its own (the SDK retries stay on: the
  // injected faults sit above them, like errors that survived the SDK's retries).
  const dynamodb = new DynamoDBClient({ region: 'us-east-1', endpoint: emulators.dynamodbUrl, credentials });
  const sqs = new SQSClient({ region: 'us-east-1', endpoint: emulators.sqsUrl, credentials });
  const documents = DynamoDBDocumentClient.from(dynamodb, {
    marshallOptions: { removeUndefinedValues: true, convertEmptyValues: false },
  });
  const tableIds = new Map(Object.entries(emulators.tables).map(([id, name]) => [name, id]));
  const queueIds = new Map(Object.entries(emulators.queueUrls).map(([id, url]) => [url, id]));
  const dynamo = new FaultInjector(options.decide);
  const sqsFaults = new FaultInjector(options.decide);
  dynamo.peers.push(sqsFaults);
  sqsFaults.peers.push(dynamo);
  const log = options.log;
  dynamo.install(
    dynamodb,
    'dynamodb',
    (input) => tableIds.get(String(input.TableName)) ?? String(input.TableName ?? 'batch'),
    log
      ? (call, output) => {
          if (call.command === 'PutItemCommand' && call.target === TASKS_TABLE.id) {
            log.record(stripDerived(call.input.Item as Record<string, unknown>));
          }
          // A batch's creates (task-store.ts createMany): each INSERT on the tasks table that
          // its statement's answer says was written.
          if (call.command === 'BatchExecuteStatementCommand') {
            const statements = call.input.Statements as { Statement: string; Parameters?: unknown[] }[];
            const responses = (output?.Responses ?? []) as { Error?: unknown }[];
            for (const [i, statement] of statements.entries()) {
              const insert = parseInsert(statement.Statement, statement.Parameters);
              if (responses[i]?.Error !== undefined) continue;
              if ('item' in insert && tableIds.get(insert.tableName) === TASKS_TABLE.id) {
                log.record(stripDerived(insert.item));
              }
            }
          }
        }
      : undefined,
  );
  sqsFaults.install(sqs, 'sqs', (input) => queueIds.get(String(input.QueueUrl)) ?? String(input.QueueUrl));
  const store = new TaskStore(documents, emulators.tables[TASKS_TABLE.id]!, {
    leases: new LeasePages(documents, emulators.tables[LEASES_TABLE.id]!),
  });
  const control = new ControlStore(documents, emulators.tables[CONTROL_TABLE.id]!);
  const queues = new QueueClient(sqs, emulators.queueUrls);
  const tasks = new TaskService({
    store,
    control,
    queues,
    registry: options.registry,
    config: options.config,
    now: options.now,
  });
  return {
    name: options.name,
    dynamo,
    sqs: sqsFaults,
    store,
    control,
    queues,
    tasks,
    batches: new BatchStore(documents, emulators.tables[TASKS_TABLE.id]!),
    kill(where = 'kill') {
      dynamo.kill(where);
      sqsFaults.kill(where);
    },
    get dead() {
      return dynamo.dead || sqsFaults.dead;
    },
    async dispose() {
      await Promise.all([dynamo.idle(), sqsFaults.idle()]);
      dynamodb.destroy();
      sqs.destroy();
    },
  };
}

function stripDerived(item: Record<string, unknown>): Task {
  const { listKey, tenantState, leasedShard, leasedAt, activeShard, dueAt, expiresAt, ...task } = item;
  return task as unknown as Task;
}

/** Loss of queue state: purge every queue (messages visible, delayed and in flight). */
export async function purgeAllQueues(sqs: SQSClient, queueUrls: Readonly<Record<string, string>>): Promise<void> {
  await Promise.all(Object.values(queueUrls).map((url) => sqs.send(new PurgeQueueCommand({ QueueUrl: url }))));
}

/** A clock the test moves forward (leases, backoffs, the backstop's overdue check) while SQS keeps real time. */
export class FakeClock {
  #offsetMs = 0;
  readonly now = (): Date => new Date(Date.now() + this.#offsetMs);
  advance(ms: number): void {
    this.#offsetMs += ms;
  }
}
