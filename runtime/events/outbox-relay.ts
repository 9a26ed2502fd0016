/**
 * The local runtime's event feed (dynalite has no streams): a durable outbox in each task item,
 * drained by this relay to the configured webhooks. docs/events.md has the argument in full:
 *
 *   state write ──(one conditional PutItem)──▶ item { state, eventSequence, outbox: [..., event] }
 *   relay ──consistent read──▶ POST each event, in order, to each webhook that takes it
 *        ──once every such webhook has it──▶ ack: REMOVE outbox[0] IF outbox[0].id = event.id
 *
 * - Nothing is lost: an event exists only inside the write that made the change, and leaves the
 *   item only after every webhook that takes it answered 2xx. A crash (kill -9) anywhere leaves it
 *   in the item; the relay's first scan after a start finds every item with an outbox.
 * - In order per task and webhook: a webhook gets a task's events oldest first, the next only after
 *   the previous one was delivered to it.
 * - At least once: a crash between a delivery and its ack sends it again (the same `id`) after the
 *   restart. A writer that read the item before an ack cannot put the event back: its write
 *   requires the outbox as read (`TaskStore.apply`). This relay remembers what it delivered (per
 *   task and webhook, the highest `sequence`), so while one webhook is retried, those that took
 *   an event are not sent it again.
 * - A failing webhook is retried with backoff until it answers 2xx, holding back only its own
 *   later events of that task: other webhooks and other tasks go on.
 */
import type { TaskStore } from '../adapters/task-store.ts';
import type { TaskEvent } from '../core/events.ts';
import { webhookRetryDelayMs } from '../core/events.ts';
import type { TaskLogger } from '../core/logger.ts';
import { postWebhook, type WebhookTarget, webhookTakes } from './webhooks.ts';

export interface OutboxRelayOptions {
  readonly store: TaskStore;
  readonly webhooks: readonly WebhookTarget[];
  /** Sends one event to one webhook; throws when it was not taken. @default postWebhook */
  readonly deliver?: (target: WebhookTarget, event: TaskEvent) => Promise<void>;
  readonly logger?: TaskLogger | undefined;
  readonly now?: () => number;
  readonly random?: () => number;
  /** Tasks whose outbox is worked on at once. @default 8 */
  readonly concurrency?: number;
  /** Between scans of the table for outboxes (the relay's backstop for hints it never got). @default 30_000 */
  readonly scanEveryMs?: number;
  /**
   * Steps that must run for an event before it is acknowledged (the dependencies' settling,
   * app/dependencies.ts), in the task's event order. Idempotent: a crash repeats them. One that
   * throws holds back the task's later events and is retried with backoff.
   */
  readonly consumers?: readonly OutboxConsumer[];
}

/** A step of the durable change feed: runs for every recorded event, at least once, in order per task. */
export type OutboxConsumer = (event: TaskEvent) => Promise<void>;

/** The relay's own index for its consumers, beside the webhooks' (0, 1, …). */
const CONSUMERS = -1;

/** Tasks whose delivered sequences are remembered (so a webhook that took an event is not sent it again while another retries). */
const REMEMBERED_TASKS = 100_000;

export class OutboxRelay {
  readonly #options: OutboxRelayOptions;
  readonly #now: () => number;
  readonly #deliver: (target: WebhookTarget, event: TaskEvent) => Promise<void>;
  /** Tasks to look at, and not before when (a webhook's backoff). */
  readonly #due = new Map<string, number>();
  readonly #inFlight = new Set<string>();
  /** Hinted while in flight: look again once done. */
  readonly #again = new Set<string>();
  /** `${taskId}|${submittedAt}` → webhook index → highest sequence it took. */
  readonly #delivered = new Map<string, Map<number, number>>();
  /** `${taskId}|${submittedAt}#${webhook}` → consecutive failures and the next try. */
  readonly #failing = new Map<string, { failures: number; retryAtMs: number }>();
  #stopped = false;
  #wake: (() => void) | undefined;
  #loop: Promise<void> | undefined;
  #scanning: Promise<void> | undefined;
  #lastScanMs = Number.NEGATIVE_INFINITY;
  #sent = 0;
  #scans = 0;

  constructor(options: OutboxRelayOptions) {
    this.#options = options;
    this.#now = options.now ?? Date.now;
    this.#deliver = options.deliver ?? ((target, event) => postWebhook(target, event));
  }

  /** Events POSTed so far (each webhook's delivery counts once). */
  get sent(): number {
    return this.#sent;
  }

  /** A write recorded events for this task: look at it soon. */
  notify(taskId: string): void {
    if (this.#inFlight.has(taskId)) this.#again.add(taskId);
    else if (!this.#due.has(taskId)) this.#due.set(taskId, this.#now());
    this.#wake?.();
  }

  /**
   * Scan for outboxes now, then keep delivering until stopped. With no webhook configured no
   * write records an event, so after the first scan has emptied what a previous run with
   * webhooks left, the relay ends (`finished`) instead of scanning the table every 30 s.
   */
  start(): void {
    this.#loop ??= this.#run();
  }

  /** Resolves when the relay's loop ended: stopped, or with no webhook, nothing left to empty. */
  get finished(): Promise<void> {
    return this.#loop ?? Promise.resolve();
  }

  /** Table scans made so far (the start's, then one every `scanEveryMs` while webhooks exist). */
  get scans(): number {
    return this.#scans;
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    this.#wake?.();
    await this.#loop;
    await this.#scanning?.catch(() => undefined);
  }

  /** Find every task with an outbox (the start after a crash, then every `scanEveryMs`). */
  async scan(): Promise<void> {
    this.#lastScanMs = this.#now();
    this.#scans++;
    let cursor: Record<string, unknown> | undefined;
    do {
      const page = await this.#options.store.scanOutbox(cursor);
      for (const taskId of page.taskIds) this.notify(taskId);
      cursor = page.next;
    } while (cursor && !this.#stopped);
  }

  /** Work until nothing is due now (tests and tools; the running relay does this in its loop). */
  async drain(): Promise<void> {
    for (;;) {
      const batch = this.#takeDue();
      if (batch.length === 0) return;
      await Promise.all(batch.map((taskId) => this.#work(taskId)));
    }
  }

  async #run(): Promise<void> {
    const scanEvery = this.#options.scanEveryMs ?? 30_000;
    const running = new Set<Promise<void>>();
    const concurrency = this.#options.concurrency ?? 8;
    // Without webhooks nothing new gets an outbox but what the consumers need, written in this
    // process (hinted): only the start's scan is needed. Without consumers either, nothing new.
    const rescans = this.#options.webhooks.length > 0;
    const consumes = (this.#options.consumers ?? []).length > 0;
    let scanned = false;
    while (!this.#stopped) {
      if (!rescans && !consumes && scanned && !this.#scanning && this.#due.size === 0 && running.size === 0) break;
      if (!this.#scanning && (rescans || !scanned) && this.#now() - this.#lastScanMs >= scanEvery) {
        scanned = true;
        this.#scanning = this.scan()
          .catch((error: unknown) => {
            scanned = false; // the leftovers are still to be found: scan again after scanEveryMs
            this.#options.logger?.warn('event outbox scan failed', { error: String(error) });
          })
          .finally(() => {
            this.#scanning = undefined;
            this.#wake?.();
          });
      }
      for (const taskId of this.#takeDue(concurrency - running.size)) {
        const work = this.#work(taskId).finally(() => {
          running.delete(work);
          this.#wake?.();
        });
        running.add(work);
      }
      let nextDue = this.#lastScanMs + scanEvery;
      for (const atMs of this.#due.values()) nextDue = Math.min(nextDue, atMs);
      const waitMs = Math.max(10, Math.min(1000, nextDue - this.#now()));
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, waitMs);
        this.#wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.#wake = undefined;
    }
    await Promise.allSettled([...running]);
  }

  /** Up to `max` due tasks, taken off the due list and marked in flight. */
  #takeDue(max = Number.POSITIVE_INFINITY): string[] {
    const nowMs = this.#now();
    const taken: string[] = [];
    for (const [taskId, atMs] of this.#due) {
      if (taken.length >= max) break;
      if (atMs > nowMs || this.#inFlight.has(taskId)) continue;
      this.#due.delete(taskId);
      this.#inFlight.add(taskId);
      taken.push(taskId);
    }
    return taken;
  }

  async #work(taskId: string): Promise<void> {
    try {
      const retryAtMs = await this.#deliverTask(taskId);
      if (retryAtMs !== undefined) this.#due.set(taskId, retryAtMs);
    } catch (error) {
      // A read or an ack failed (the store is unwell): the outbox is intact, try again shortly.
      this.#options.logger?.warn('event outbox: delivery round failed', { taskId, error: String(error) });
      this.#due.set(taskId, this.#now() + 1000);
    } finally {
      this.#inFlight.delete(taskId);
      if (this.#again.delete(taskId) && !this.#due.has(taskId)) this.#due.set(taskId, this.#now());
    }
  }

  /**
   * Deliver what the task's outbox holds and acknowledge what every webhook has. Returns when to
   * look again (a webhook's backoff), or undefined when the outbox is empty.
   */
  async #deliverTask(taskId: string): Promise<number | undefined> {
    const { store, webhooks } = this.#options;
    for (let round = 0; round < 16 && !this.#stopped; round++) {
      const task = await store.get(taskId);
      const outbox = task?.outbox ?? [];
      if (!task || outbox.length === 0) return undefined;
      const key = `${task.taskId}|${task.submittedAt}`;
      const delivered = this.#remember(key);
      // Each webhook in order of the task's events, stopping at its first that fails or waits;
      // each event acknowledged as soon as every webhook that takes it has it, before the next
      // is sent, so a crash repeats at most the one event in flight (docs/events.md).
      const held = new Set<number>();
      let retryAtMs: number | undefined;
      let length = outbox.length;
      let acking = true;
      let moved = false;
      for (const event of outbox) {
        if (!held.has(CONSUMERS) && (delivered.get(CONSUMERS) ?? 0) < event.sequence) {
          const at = await this.#consume(key, event);
          if (at === undefined) delivered.set(CONSUMERS, event.sequence);
          else {
            held.add(CONSUMERS);
            retryAtMs = Math.min(retryAtMs ?? Number.POSITIVE_INFINITY, at);
          }
        }
        for (const target of webhooks) {
          if (held.has(target.index) || !webhookTakes(target, event)) continue;
          if ((delivered.get(target.index) ?? 0) >= event.sequence) continue;
          const failing = this.#failing.get(`${key}#${target.index}`);
          if (failing && failing.retryAtMs > this.#now()) {
            held.add(target.index);
            retryAtMs = Math.min(retryAtMs ?? Number.POSITIVE_INFINITY, failing.retryAtMs);
            continue;
          }
          try {
            await this.#deliver(target, event);
            this.#sent++;
            delivered.set(target.index, event.sequence);
            this.#failing.delete(`${key}#${target.index}`);
          } catch (error) {
            held.add(target.index);
            const failures = (failing?.failures ?? 0) + 1;
            const at = this.#now() + webhookRetryDelayMs(failures, this.#options.random);
            this.#failing.set(`${key}#${target.index}`, { failures, retryAtMs: at });
            retryAtMs = Math.min(retryAtMs ?? Number.POSITIVE_INFINITY, at);
            this.#options.logger?.warn('webhook delivery failed; retrying', {
              taskId,
              eventId: event.id,
              sequence: event.sequence,
              webhook: target.url,
              failures,
              error: error instanceof Error ? error.message : String(error),
            });
          }
        }
        // Acknowledge the delivered prefix, oldest first.
        if (!acking) continue;
        const waiting =
          (delivered.get(CONSUMERS) ?? 0) < event.sequence ||
          webhooks.some((target) => webhookTakes(target, event) && (delivered.get(target.index) ?? 0) < event.sequence);
        if (waiting) {
          acking = false;
          continue;
        }
        if (!(await store.ackOutboxHead(taskId, event.id, length))) {
          moved = true;
          break;
        }
        length--;
      }
      // The item moved under us (an event appended): read it again.
      if (!moved) return length === 0 ? undefined : retryAtMs;
    }
    return this.#now();
  }

  /** Run the consumers for one event: undefined when done, else when to try again. */
  async #consume(key: string, event: TaskEvent): Promise<number | undefined> {
    const consumers = this.#options.consumers ?? [];
    if (consumers.length === 0) return undefined;
    const failingKey = `${key}#${CONSUMERS}`;
    const failing = this.#failing.get(failingKey);
    if (failing && failing.retryAtMs > this.#now()) return failing.retryAtMs;
    try {
      for (const consume of consumers) await consume(event);
      this.#failing.delete(failingKey);
      return undefined;
    } catch (error) {
      const failures = (failing?.failures ?? 0) + 1;
      const at = this.#now() + Math.min(webhookRetryDelayMs(failures, this.#options.random), 30_000);
      this.#failing.set(failingKey, { failures, retryAtMs: at });
      this.#options.logger?.warn('event outbox: a consumer failed; retrying', {
        taskId: event.taskId,
        sequence: event.sequence,
        failures,
        error: error instanceof Error ? error.message : String(error),
      });
      return at;
    }
  }

  #remember(key: string): Map<number, number> {
    let delivered = this.#delivered.get(key);
    if (delivered) {
      this.#delivered.delete(key);
    } else {
      delivered = new Map();
      if (this.#delivered.size >= REMEMBERED_TASKS) {
        const oldest = this.#delivered.keys().next().value;
        if (oldest !== undefined) this.#delivered.delete(oldest);
      }
    }
    this.#delivered.set(key, delivered);
    return delivered;
  }
}
