/**
 * Reservations: what a dispatch round's pick holds, and the one way each hold is let go.
 *
 * When the engine picks a task it counts the task against its pool, tenant quota and
 * concurrency key at once, and the intake moves the task's ref from its window to `taken`.
 * Admission may then take durable holds too (a place among the concurrency key's holders). A
 * `Reservation` owns all of them until the round decides (Kueue's assume and forget):
 *
 *   pick ─▶ Reservation (capacity, quota, rate, key, window entry, the fence it will write)
 *            ├ commit(written)  the dispatch write landed: the attempt moves to the scheduler's
 *            │                  active set (released when it ends), the ref leaves `taken`
 *            └ abort(reason)    refused, held, throttled, failed or stopping: the engine lets go
 *                               of the capacity, the key's place goes back when no write can
 *                               have landed, and the task waits again or leaves its window
 *
 * Both are idempotent (a second call does nothing). A reservation that is still open when the
 * round ends is a bug in the round: `endRound` reports it and aborts it, so no path that forgets
 * one leaks quota or strands a task in `taken` (the compensating calls it replaces were five,
 * and one round that threw between the pick and the write held its other picks for good).
 */
import type { IntakeWindows, QueuedRef } from '../core/intake/index.ts';
import type { TaskLogger } from '../core/logger.ts';
import type { SchedulingPolicy } from '../core/policy/index.ts';
import type { PriorityTier, Task } from '../core/task.ts';
import { toRef } from './intake.ts';
import type { FlowControl } from './ports.ts';

/** Why a reservation was let go; it decides what becomes of the task and of its key's place. */
export type AbortReason =
  /** The item is not QUEUED any more (ended, cancelled, dispatched by another): out of its window. */
  | 'gone'
  /** Still waiting, but not as the ref said (retried, delayed, another tier): waits as the item says. */
  | 'changed'
  /** The round's consistent read failed: waits again as the ref said. */
  | 'read-failed'
  /** Tenant settings moved since the picks: the next round picks under the new ones. */
  | 'settings-moved'
  /** A constraint unit held it: a paused tenant or type, its start rate, a full concurrency key. */
  | 'paused'
  | 'rate'
  | 'key-full'
  /** Shutdown began before the writes. */
  | 'stopping'
  /** The dispatch write was refused: someone else moved the item (see `gone`/`changed` for what it is now). */
  | 'refused'
  /** DynamoDB throttled the write: the tenant-tier backs off alone. */
  | 'throttled'
  /** The write failed unanswered: it may have landed. */
  | 'write-failed'
  /** The round threw with this reservation undecided. */
  | 'round-failed'
  /** Still open when the round ended: a bug, reported by `endRound`. */
  | 'unsettled';

export interface AbortDetail {
  /** The item as last read (the consistent read, or the current item a refused write returned). */
  readonly item?: Task | undefined;
  /** The error behind the abort (a throttle, a failed write). */
  readonly error?: unknown;
}

/** What reservations do to the intake (the `Intake` is one): its windows, and waiting again. */
export interface ReservedIntake {
  readonly windows: Pick<IntakeWindows, 'taken' | 'dispatched' | 'dropped'>;
  /** A picked task waits again (back into its window and the engine). */
  returned(ref: QueuedRef): void;
  /** Its tenant-tier was throttled: it backs off alone. */
  throttled(tenantId: string, tier: PriorityTier, error: unknown): void;
}

export interface ReservationsDeps {
  /** The engine: picks (each pick counts against capacity at once) and lets go. */
  readonly policy: Pick<SchedulingPolicy, 'next' | 'unpick'>;
  readonly intake: ReservedIntake;
  /** The durable flow-control records (the concurrency keys' holders). */
  readonly flow?: Pick<FlowControl, 'releaseKey'> | undefined;
  /** The dispatch write landed: count the attempt (`read` is the QUEUED item the write replaced). */
  readonly onCommitted: (written: Task, nowMs: number, read: Task) => void;
  readonly logger?: TaskLogger | undefined;
}

type ReservationState = 'open' | 'committed' | 'aborted';

/** One pick's holds, from the pick until its commit or abort. */
export class Reservation {
  /** The window entry the pick took (the intake's ref: index or message, never the truth). */
  readonly ref: QueuedRef;
  readonly #book: Reservations;
  #state: ReservationState = 'open';
  /** The QUEUED item as the round's consistent read found it. */
  #item: Task | undefined;
  /** The concurrency key place taken for it (key name), released with an abort unless the write may have landed. */
  #key: string | undefined;
  #writeIssued = false;

  constructor(book: Reservations, ref: QueuedRef) {
    this.#book = book;
    this.ref = ref;
  }

  get taskId(): string {
    return this.ref.taskId;
  }

  get state(): ReservationState {
    return this.#state;
  }

  /** The item the round read (after `read`). */
  get item(): Task {
    if (!this.#item) throw new Error(`reservation ${this.taskId}: the item has not been read`);
    return this.#item;
  }

  /** The fence the dispatch writes: one past the QUEUED item's. */
  get fence(): number {
    return this.item.fence + 1;
  }

  /** The consistent read found the item QUEUED as the ref said: the round goes on with it. */
  read(item: Task): void {
    this.#item = item;
  }

  /** A place among its concurrency key's holders (at `fence`) is held for it. */
  keyTaken(): void {
    this.#key = this.item.concurrencyKey;
  }

  /** The dispatch write is on its way: from now on it may land whatever its answer. */
  writing(): void {
    this.#writeIssued = true;
  }

  /**
   * The dispatch write landed: the attempt is counted by the scheduler from now on. Returns
   * false when already committed; committing an aborted reservation is a bug (its holds are gone).
   */
  commit(written: Task, nowMs: number): boolean {
    if (this.#state === 'committed') return false;
    if (this.#state === 'aborted') {
      throw new Error(`reservation ${this.taskId}: committed after it was aborted (a dispatch written unreserved)`);
    }
    this.#state = 'committed';
    this.#book.settled(this);
    this.#book.intake.windows.dispatched(this.ref, this.item.fence, nowMs);
    this.#book.onCommitted(written, nowMs, this.item);
    return true;
  }

  /** Let every hold go (see AbortReason). Returns false when already committed or aborted. */
  abort(reason: AbortReason, detail: AbortDetail = {}): boolean {
    if (this.#state !== 'open') return false;
    this.#state = 'aborted';
    this.#book.settled(this);
    const { policy, intake } = this.#book;
    policy.unpick(this.taskId);
    if (this.#key !== undefined && this.#item && !this.#mayHaveLanded(reason)) {
      this.#book.releaseKey(this.#item.tenantId, this.#key, this.taskId, this.fence);
    }
    if (reason === 'throttled') intake.throttled(this.ref.tenantId, this.ref.priority, detail.error);
    const waitsAs = this.#waitsAs(reason, detail.item);
    if (waitsAs) intake.returned(waitsAs);
    else intake.windows.dropped(this.taskId, this.ref.tenantId, this.ref.priority);
    return true;
  }

  /**
   * As what the task waits again after an abort, or undefined when it leaves its window: it is
   * not QUEUED any more, or it moved to another tenant-tier (whose own window reads it).
   */
  #waitsAs(reason: AbortReason, item: Task | undefined): QueuedRef | undefined {
    if (reason === 'gone') return undefined;
    // A refused write says what the item is now; without it, someone else moved the item on.
    const known = reason === 'refused' ? item : (item ?? this.#item);
    if (reason === 'refused' && !known) return undefined;
    if (!known) return this.ref;
    if (known.state !== 'QUEUED') return undefined;
    if (known.priority !== this.ref.priority || known.tenantId !== this.ref.tenantId) return undefined;
    return toRef(known);
  }

  /** Whether a dispatch write for it can have landed (then its key's place stays: the holder is checked when stale). */
  #mayHaveLanded(reason: AbortReason): boolean {
    return this.#writeIssued && reason !== 'refused';
  }
}

/** The round's reservations: picks them from the engine and the intake, and sees each decided. */
export class Reservations {
  readonly policy: ReservationsDeps['policy'];
  readonly intake: ReservedIntake;
  readonly onCommitted: ReservationsDeps['onCommitted'];
  readonly #deps: ReservationsDeps;
  readonly #open = new Set<Reservation>();
  #releases: Promise<void>[] = [];

  constructor(deps: ReservationsDeps) {
    this.#deps = deps;
    this.policy = deps.policy;
    this.intake = deps.intake;
    this.onCommitted = deps.onCommitted;
  }

  /** Reservations neither committed nor aborted yet. */
  get openCount(): number {
    return this.#open.size;
  }

  /**
   * Every task the engine lets start at `nowMs`, each reserved with its window entry. A pick
   * whose ref left its window meanwhile (dropped, throttled) is let go at once.
   */
  pickAll(nowMs: number): Reservation[] {
    const picked: Reservation[] = [];
    for (let candidate = this.policy.next(nowMs); candidate; candidate = this.policy.next(nowMs)) {
      const ref = this.intake.windows.taken(candidate.taskId, candidate.tenantId, candidate.priority);
      if (!ref) {
        this.policy.unpick(candidate.taskId);
        continue;
      }
      const reservation = new Reservation(this, ref);
      this.#open.add(reservation);
      picked.push(reservation);
    }
    return picked;
  }

  /** The key places aborts handed back, once written (a failure leaves the holder to be found stale). */
  async released(): Promise<void> {
    const releases = this.#releases;
    this.#releases = [];
    await Promise.all(releases);
  }

  /**
   * The round is over: a reservation still open is a bug in the round. Each is reported and
   * aborted (its task waits again, its capacity is free). Returns how many there were.
   */
  endRound(): number {
    const open = [...this.#open];
    for (const reservation of open) {
      this.#deps.logger?.error('a reservation was neither committed nor aborted by its round; aborted', {
        taskId: reservation.taskId,
        tenantId: reservation.ref.tenantId,
      });
      reservation.abort('unsettled');
    }
    return open.length;
  }

  /** @internal A reservation was decided. */
  settled(reservation: Reservation): void {
    this.#open.delete(reservation);
  }

  /** @internal Hand a key's place back (a conditional write on its holders item). */
  releaseKey(tenantId: string, key: string, taskId: string, fence: number): void {
    const flow = this.#deps.flow;
    if (!flow) return;
    this.#releases.push(
      flow.releaseKey(tenantId, key, taskId, fence).catch((error: unknown) => {
        // The holder stays until a start of the key finds it stale (dispatch.ts staleHolders).
        this.#deps.logger?.warn('could not hand back a concurrency key place', { taskId, key, error: String(error) });
      }),
    );
  }
}
