/**
 * Lambda's limits where the simulation runs Lambda functions (the API, the scheduler, the
 * Lambda-pool workers), as AWS documents them:
 * - the account's concurrency: every function's invocations in flight share one regional quota
 *   (1,000 by default; as low as 10 on a new account). An invocation beyond it is throttled: it
 *   does not run (the API answers 429 and its client retries; a scheduled or asynchronous
 *   invocation is retried later by Lambda, here at the next tick).
 * - an SQS event source mapping's scaling (standard queues): while messages wait it runs 5
 *   concurrent batches at first and adds up to 300 a minute (5 a second here), at most its
 *   MaximumConcurrency (2 to 1,000; the stack sets the Lambda pool's concurrency) and at most
 *   what the account has free; when the queue is empty it goes back to 5.
 *
 * What is simplified: a worker environment (its poller and the invocations it runs one batch at
 * a time) holds one unit of the account's concurrency for as long as it exists, not only while
 * its handler runs; environments are added and retired once a second.
 */

/** The account's regional concurrency, shared by every simulated function. */
export class LambdaAccount {
  readonly limit: number;
  #inUse = 0;
  #peak = 0;
  #throttles = 0;

  constructor(limit = 1000) {
    this.limit = limit;
  }

  /** One invocation (or environment) starts if a unit is free; false: it is throttled. */
  tryAcquire(): boolean {
    if (this.#inUse >= this.limit) {
      this.#throttles++;
      return false;
    }
    this.#inUse++;
    this.#peak = Math.max(this.#peak, this.#inUse);
    return true;
  }

  release(): void {
    if (this.#inUse === 0) throw new Error('LambdaAccount: released more units than were acquired');
    this.#inUse--;
  }

  get inUse(): number {
    return this.#inUse;
  }
  get peak(): number {
    return this.#peak;
  }
  /** Invocations refused for want of concurrency. */
  get throttles(): number {
    return this.#throttles;
  }
}

/** SQS event source mapping scaling, standard queues (AWS Lambda developer guide). */
export const SQS_ESM_SCALING = {
  /** Concurrent batches when messages first arrive, and the floor it scales back to. */
  initial: 5,
  /** Batches added per minute at most while messages keep waiting. */
  addedPerMinute: 300,
  /** MaximumConcurrency's range. */
  minMaximumConcurrency: 2,
  maxMaximumConcurrency: 1000,
} as const;

/**
 * The concurrency the mapping aims for one step later: up by `addedPerMinute` per minute (pro
 * rata) while messages wait, back to `initial` when none do, never above `maximum`.
 */
export function nextMappingConcurrency(options: {
  readonly current: number;
  readonly waiting: number;
  readonly maximum: number;
  readonly stepMs: number;
}): number {
  const { initial, addedPerMinute } = SQS_ESM_SCALING;
  const floor = Math.min(initial, options.maximum);
  if (options.waiting === 0) return floor;
  const grown = Math.max(options.current, floor) + (addedPerMinute * options.stepMs) / 60_000;
  return Math.min(options.maximum, grown);
}

/** One worker environment the mapping runs (a poller running one batch at a time). */
export interface MappedEnvironment {
  /** Retire it: it stops receiving and ends when its batch is done. */
  stop(): void;
  /** Resolves when it ended: retired, or its process died. */
  readonly ended: Promise<void>;
}

export interface EventSourceMappingOptions {
  readonly account: LambdaAccount;
  /** MaximumConcurrency, clamped to 2..1,000 as the stack does. */
  readonly maximumConcurrency: number;
  /** Messages waiting in the queue (visible ones: what the pollers find). */
  readonly waiting: () => number;
  /** Start one environment. */
  readonly start: () => MappedEnvironment;
  /** How often the mapping rescales, ms (default 1,000). */
  readonly stepMs?: number;
}

/** The mapping: starts and retires environments once a step, within its scaling and the account. */
export class SqsEventSourceMapping {
  readonly #options: EventSourceMappingOptions;
  readonly #maximum: number;
  readonly #environments = new Set<MappedEnvironment>();
  #target: number = SQS_ESM_SCALING.initial;
  #timer: ReturnType<typeof setInterval> | undefined;
  #peak = 0;

  constructor(options: EventSourceMappingOptions) {
    this.#options = options;
    this.#maximum = Math.min(
      SQS_ESM_SCALING.maxMaximumConcurrency,
      Math.max(SQS_ESM_SCALING.minMaximumConcurrency, options.maximumConcurrency),
    );
    this.#target = Math.min(SQS_ESM_SCALING.initial, this.#maximum);
  }

  /** Start the first environments and rescale every step from now on. */
  start(): void {
    this.#fill();
    const stepMs = this.#options.stepMs ?? 1000;
    this.#timer = setInterval(() => this.step(stepMs), stepMs);
  }

  /** Stop rescaling (the environments running go on). */
  stop(): void {
    clearInterval(this.#timer);
  }

  /** One rescale: the new target from the queue, then environments started or retired to it. */
  step(stepMs: number): void {
    this.#target = nextMappingConcurrency({
      current: this.#target,
      waiting: this.#options.waiting(),
      maximum: this.#maximum,
      stepMs,
    });
    this.#fill();
    let excess = this.#environments.size - Math.floor(this.#target);
    for (const environment of this.#environments) {
      if (excess-- <= 0) break;
      this.#environments.delete(environment);
      environment.stop();
    }
  }

  /** Environments running now, the most at once, and the target. */
  get running(): number {
    return this.#environments.size;
  }
  get peak(): number {
    return this.#peak;
  }
  get target(): number {
    return this.#target;
  }

  #fill(): void {
    while (this.#environments.size < Math.floor(this.#target) && this.#options.account.tryAcquire()) {
      const environment = this.#options.start();
      this.#environments.add(environment);
      this.#peak = Math.max(this.#peak, this.#environments.size);
      // Its unit is free once it ended, whether retired or dead (a dead one is replaced next step).
      void environment.ended.then(() => {
        this.#environments.delete(environment);
        this.#options.account.release();
      });
    }
  }
}

/** What a simulated invocation's handler gets of Lambda's context. */
export interface SimulatedContext {
  readonly functionName: string;
  readonly awsRequestId: string;
  getRemainingTimeInMillis(): number;
}

/** One invocation as the function runs it: its handler's promise, and how to stop it dead. */
export interface RunningInvocation {
  readonly done: Promise<unknown>;
  /** The invocation is stopped where it is (its timeout): none of its calls is answered any more. */
  kill(): void;
}

export interface SimulatedFunctionOptions<E> {
  readonly name: string;
  readonly account: LambdaAccount;
  /** The function's timeout: an invocation still running then is stopped. */
  readonly timeoutMs: number;
  /**
   * How long Lambda keeps an asynchronous event it could not start for want of concurrency
   * (the function's maximum event age), retrying after 1 s, 2 s, 4 s... as AWS does.
   */
  readonly maxEventAgeMs: number;
  /** Start the handler on `event` (a new execution environment each time). */
  readonly run: (event: E, context: SimulatedContext) => RunningInvocation;
}

/**
 * A Lambda function invoked asynchronously (InvocationType Event): each event starts an
 * invocation at once if the account has concurrency free, else waits and is retried until its
 * maximum age, then dropped. An invocation holds a unit of concurrency until its handler returns
 * (or throws; asynchronous retries of a failed handler are off, as the stack configures the
 * scheduler) or its timeout stops it.
 */
export class SimulatedFunction<E> {
  readonly #options: SimulatedFunctionOptions<E>;
  #invocations = 0;
  #running = 0;
  #timedOut = 0;
  #dropped = 0;

  constructor(options: SimulatedFunctionOptions<E>) {
    this.#options = options;
  }

  /** Invocations started, running now, stopped by the timeout, events dropped unstarted. */
  get invocations(): number {
    return this.#invocations;
  }
  get running(): number {
    return this.#running;
  }
  get timedOut(): number {
    return this.#timedOut;
  }
  get dropped(): number {
    return this.#dropped;
  }

  /** Lambda's Invoke with InvocationType Event: accepted at once, run when concurrency allows. */
  invokeAsync(event: E): void {
    this.#attempt(event, Date.now(), 0);
  }

  #attempt(event: E, queuedAtMs: number, retries: number): void {
    const { account, maxEventAgeMs, timeoutMs, name } = this.#options;
    if (!account.tryAcquire()) {
      const delayMs = 1000 * 2 ** retries;
      if (Date.now() + delayMs - queuedAtMs > maxEventAgeMs) {
        this.#dropped++;
        return;
      }
      setTimeout(() => this.#attempt(event, queuedAtMs, retries + 1), delayMs);
      return;
    }
    const n = ++this.#invocations;
    this.#running++;
    const startedAtMs = Date.now();
    const invocation = this.#options.run(event, {
      functionName: name,
      awsRequestId: `${name}-${n}`,
      getRemainingTimeInMillis: () => startedAtMs + timeoutMs - Date.now(),
    });
    let ended = false;
    const end = () => {
      if (ended) return;
      ended = true;
      clearTimeout(timer);
      this.#running--;
      account.release();
    };
    const timer = setTimeout(() => {
      if (ended) return;
      this.#timedOut++;
      invocation.kill();
      end();
    }, timeoutMs);
    invocation.done.then(end, end);
  }
}
