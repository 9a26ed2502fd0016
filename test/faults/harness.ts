/**
 * A whole system on the emulators with faults: the real Scheduler (and its Reconciler), real
 * QueueWorkers running runAttempt, a recording task type, a fake clock for leases and backoffs,
 * and per-component fault injection (test/helpers/faults.ts). A crashed component is replaced by
 * a fresh one that knows only what DynamoDB and SQS know, as after a real process crash.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { z } from 'zod';
import { type Emulators, startEmulators } from '../../local/emulators.ts';
import { type ConfigInput, parseConfig, type SchedulerConfig } from '../../runtime/core/config.ts';
import { NonRetryableError } from '../../runtime/core/errors.ts';
import type { Task } from '../../runtime/core/task.ts';
import { workerQueue } from '../../runtime/infra/resources.ts';
import { Scheduler } from '../../runtime/scheduler/scheduler.ts';
import { defineTaskType, type TaskContext, TaskTypeRegistry } from '../../runtime/task-types/define.ts';
import { DEMO_TASK_TYPES } from '../../runtime/task-types/demo.ts';
import { QueueWorker } from '../../runtime/worker/queue-worker.ts';
import type { AttemptStep } from '../../runtime/worker/run-attempt.ts';
import {
  Crash,
  FakeClock,
  type FaultDecider,
  type FaultyComponent,
  faultyComponent,
  purgeAllQueues,
  WriteLog,
} from '../helpers/faults.ts';

export interface RecordPayload {
  /** Fail (retryably) the first n attempts. */
  readonly failTimes: number;
  /** Throw NonRetryableError. */
  readonly permanent: boolean;
  /** Work time, real milliseconds (abortable). */
  readonly ms: number;
}

/** Every handler run that reached its end, by task: the side effect a real handler would make. */
export class Recorder {
  readonly starts = new Map<string, number>();
  readonly completions = new Map<string, { fence: number; attempt: number }[]>();

  started(ctx: TaskContext): void {
    this.starts.set(ctx.taskId, (this.starts.get(ctx.taskId) ?? 0) + 1);
  }

  completed(ctx: TaskContext): void {
    const list = this.completions.get(ctx.taskId) ?? [];
    list.push({ fence: ctx.fence, attempt: ctx.attempt });
    this.completions.set(ctx.taskId, list);
  }
}

export function recordingTaskType(recorder: Recorder) {
  return defineTaskType({
    type: 'test.record',
    description: 'Records each run that completes; fails or fails permanently on request.',
    payload: z.strictObject({
      failTimes: z.number().int().min(0),
      permanent: z.boolean(),
      ms: z.number().int().min(0),
    }),
    async handler(payload: RecordPayload, ctx) {
      recorder.started(ctx);
      await sleep(payload.ms, undefined, { signal: ctx.signal });
      if (payload.permanent) throw new NonRetryableError('permanent failure');
      if (ctx.attempt <= payload.failTimes) throw new Error(`planned failure ${ctx.attempt}/${payload.failTimes}`);
      recorder.completed(ctx);
      return { fence: ctx.fence, attempt: ctx.attempt };
    },
  });
}

export interface HarnessOptions {
  readonly config?: ConfigInput;
  readonly random?: () => number;
  /** SDK faults for the scheduler, workers and submitters (reassignable: `harness.decide`). */
  readonly decide?: FaultDecider;
  /** Worker processes (QueueWorkers on the lambda pool's queue). */
  readonly workers?: number;
  /** Real-time visibility of a received worker message before it is delivered again. */
  readonly workerVisibilitySeconds?: number;
}

/** Test defaults: short leases, no retry delay (SQS delays are real time), small pools. */
export const FAULT_CONFIG: ConfigInput = {
  pools: { lambda: { concurrency: 4 }, fargate: { vcpu: 2, memoryMiB: 4096 } },
  tenantDefaults: { weight: 1, maxConcurrency: 2 },
  retry: { baseDelaySeconds: 0, maxDelaySeconds: 0 },
  scheduler: { dispatchLeaseSeconds: 5, runLeaseSeconds: 5, bufferSize: 50 },
};

/** Clock jumps (65 s each) with no task moving, after which runUntilSettled calls it stuck. */
const STUCK_AFTER_CLOCK_JUMPS = 20;

export class Harness {
  readonly emulators: Emulators;
  readonly config: SchedulerConfig;
  readonly clock = new FakeClock();
  readonly log = new WriteLog();
  readonly recorder = new Recorder();
  readonly registry: TaskTypeRegistry;
  readonly random: () => number;
  /** Fault-free view for setting up and inspecting. */
  readonly admin: FaultyComponent;
  decide: FaultDecider | undefined;
  /** Probability that a worker dies at each step boundary of runAttempt. */
  stepCrashRate = 0;
  readonly stats = { schedulerCrashes: 0, workerCrashes: 0, stepCrashes: 0, purges: 0, clockJumps: 0 };
  #scheduler: { component: FaultyComponent; scheduler: Scheduler } | undefined;
  #workers: { component: FaultyComponent; worker: QueueWorker }[] = [];
  #generation = 0;
  readonly #options: HarnessOptions;

  private constructor(emulators: Emulators, options: HarnessOptions) {
    this.emulators = emulators;
    this.#options = options;
    this.config = parseConfig(options.config ?? FAULT_CONFIG, 'fault test configuration');
    this.random = options.random ?? Math.random;
    this.decide = options.decide;
    this.registry = new TaskTypeRegistry([...DEMO_TASK_TYPES, recordingTaskType(this.recorder)]);
    this.admin = this.component('admin', false);
  }

  static async start(options: HarnessOptions = {}): Promise<Harness> {
    return new Harness(await startEmulators(), options);
  }

  /** SDK faults injected so far, over every component. */
  faultCounts(): Record<string, number> {
    return { ...this.#faults };
  }

  readonly #faults: Record<string, number> = { throttle: 0, ambiguous: 0, crash: 0, duplicate: 0 };

  component(name: string, faulty = true): FaultyComponent {
    const count = (kind: string) => {
      this.#faults[kind] = (this.#faults[kind] ?? 0) + 1;
    };
    return faultyComponent({
      name: `${name}#${++this.#generation}`,
      emulators: this.emulators,
      config: this.config,
      registry: this.registry,
      now: this.clock.now,
      log: this.log,
      ...(faulty
        ? {
            decide: (call) => {
              const fault = this.decide?.(call);
              if (fault) count(fault);
              return fault;
            },
          }
        : {}),
    });
  }

  /**
   * Submit through a faulty API component, retrying with the same idempotency key until the
   * service answers (an ambiguous failure may have created the task: the retry returns it).
   */
  async submit(input: Parameters<FaultyComponent['tasks']['submit']>[0] & { idempotencyKey: string }): Promise<Task> {
    for (let round = 0; ; round++) {
      const api = this.component('api');
      try {
        const { task } = await api.tasks.submit(input);
        return task;
      } catch (error) {
        if (round > 50) throw error;
      } finally {
        await api.dispose();
      }
    }
  }

  /** One scheduler tick; any error is a crash: the process is gone and a new one resumes. */
  async tick(): Promise<void> {
    try {
      if (!this.#scheduler) {
        const component = this.component('scheduler');
        this.#scheduler = {
          component,
          scheduler: new Scheduler({
            store: component.store,
            control: component.control,
            queues: component.queues,
            config: this.config,
            now: this.clock.now,
            random: this.random,
          }),
        };
        await this.#scheduler.scheduler.resume();
      }
      await this.#scheduler.scheduler.tick({ waitSeconds: 0 });
    } catch {
      await this.crashScheduler();
    }
  }

  async crashScheduler(): Promise<void> {
    const current = this.#scheduler;
    if (!current) return;
    this.#scheduler = undefined;
    this.stats.schedulerCrashes++;
    current.component.kill('scheduler crash');
    // A dead process's requests on the wire land (or not) before anyone takes over.
    await current.component.dispose();
  }

  get scheduler(): Scheduler | undefined {
    return this.#scheduler?.scheduler;
  }

  startWorkers(count = this.#options.workers ?? 2): void {
    for (let i = 0; i < count; i++) this.#workers.push(this.#newWorker());
  }

  #newWorker(): { component: FaultyComponent; worker: QueueWorker } {
    const component = this.component('worker');
    const faults = (step: AttemptStep) => {
      if (this.stepCrashRate > 0 && this.random() < this.stepCrashRate) {
        this.stats.stepCrashes++;
        component.kill(`worker step ${step}`);
        throw new Crash(`worker step ${step}`);
      }
    };
    const worker = new QueueWorker({
      queues: component.queues,
      queueId: workerQueue('lambda').id,
      maxConcurrent: this.config.pools.lambda.concurrency,
      waitSeconds: 1,
      visibilitySeconds: this.#options.workerVisibilitySeconds ?? 2,
      attempt: {
        store: component.store,
        queues: component.queues,
        registry: this.registry,
        config: this.config,
        now: this.clock.now,
        random: this.random,
        faults,
      },
    });
    worker.start();
    return { component, worker };
  }

  /** Replace dead worker processes; optionally kill a live one first (chaos). */
  async reviveWorkers(killOne = false): Promise<void> {
    if (killOne && this.#workers.length > 0) {
      this.#workers[Math.floor(this.random() * this.#workers.length)]!.component.kill('worker killed');
    }
    for (let i = 0; i < this.#workers.length; i++) {
      const { component, worker } = this.#workers[i]!;
      if (!component.dead) continue;
      this.stats.workerCrashes++;
      this.#workers[i] = this.#newWorker();
      // The old process is gone; its in-flight attempts fail on their next call.
      void worker.stop().then(() => component.dispose());
    }
  }

  async purgeQueues(): Promise<void> {
    this.stats.purges++;
    await purgeAllQueues(this.emulators.clients.sqs, this.emulators.queueUrls);
  }

  /** Jump past every lease (and the backstop's ORPHAN_AFTER_MS): zombies and recovery follow. */
  jumpClock(ms = 65_000): void {
    this.stats.clockJumps++;
    this.clock.advance(ms);
  }

  /** Current state of the given tasks (consistent reads). */
  async states(taskIds: readonly string[]): Promise<Map<string, Task>> {
    return this.admin.store.getMany(taskIds);
  }

  /**
   * Drive ticks until every task is terminal. While `chaos` runs, `onRound` injects faults;
   * afterwards faults stop and the clock jumps whenever progress stalls, so every lease and
   * backstop re-announcement comes due. Stuck means no task moved across
   * STUCK_AFTER_CLOCK_JUMPS jumps of the clock (over 20 simulated minutes): a count of the
   * system's own chances, not of wall time, so a slow machine is not taken for a stuck one.
   * `maxMs` only bounds the wall time, generously, to fail before the test's own timeout.
   */
  async runUntilSettled(
    taskIds: readonly string[],
    options: { chaosMs: number; maxMs: number; onRound?: (round: number) => Promise<void> },
  ): Promise<Map<string, Task>> {
    const started = Date.now();
    let lastProgress = Date.now();
    let lastSignature = '';
    let jumpsWithoutProgress = 0;
    for (let round = 0; ; round++) {
      const chaos = Date.now() - started < options.chaosMs;
      if (chaos) await options.onRound?.(round);
      else {
        this.decide = undefined;
        this.stepCrashRate = 0;
      }
      await this.reviveWorkers();
      await this.tick();
      const states = await this.states(taskIds);
      const terminal = [...states.values()].filter((t) => ['SUCCEEDED', 'FAILED', 'CANCELLED'].includes(t.state));
      if (terminal.length === taskIds.length) return states;
      const signature = taskIds.map((id) => `${states.get(id)?.state}${states.get(id)?.version}`).join();
      if (signature !== lastSignature) {
        lastSignature = signature;
        lastProgress = Date.now();
        jumpsWithoutProgress = 0;
      } else if (!chaos && Date.now() - lastProgress > 1_000) {
        this.jumpClock();
        jumpsWithoutProgress++;
        lastProgress = Date.now();
      }
      if (jumpsWithoutProgress > STUCK_AFTER_CLOCK_JUMPS || Date.now() - started > options.maxMs) {
        const stuck = [...states.values()].filter((t) => !terminal.includes(t));
        const snapshot = this.scheduler?.snapshot();
        if (process.env.FAULTS_DEBUG)
          console.log(
            JSON.stringify(
              {
                stats: this.stats,
                snapshot,
                held: this.scheduler?.heldCount,
                active: this.scheduler?.activeCount,
                stuck,
              },
              null,
              1,
            ),
          );
        throw new Error(
          `not settled (${jumpsWithoutProgress} clock jumps without progress, ${Date.now() - started} ms): ${stuck.map((t) => `${t.taskId} ${t.state} v${t.version} f${t.fence}`).join('; ')}`,
        );
      }
      await sleep(20);
    }
  }

  async stop(): Promise<void> {
    await this.crashScheduler().catch(() => {});
    await Promise.all(
      this.#workers.map(async ({ component, worker }) => {
        await worker.stop();
        await component.dispose();
      }),
    );
    this.#workers = [];
    await this.admin.dispose();
    await this.emulators.stop();
  }
}
