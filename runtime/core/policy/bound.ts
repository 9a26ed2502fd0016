/**
 * The wait bound under `fair-share`: a rotation below the fair share, DRF above it.
 *
 * The rule (policy.ts). Per pool, tenants with ready work form a rotation: each has a turn, the
 * later of when it was last served in the pool and when its work there became due. A tenant is
 * below its fair share when its weighted dominant share (over every pool) is under 1 / W, W the
 * summed weight of the tenants with work in the engine. The pool's next task comes from the
 * tenants below their fair share, the earliest turn first (then arrival order); when none waits,
 * from the one with the smallest weighted dominant share (DRF), ties to the earliest turn; inside
 * a tenant, tiers with aging pick the task. Serving a tenant moves its turn to now (the end of the
 * rotation); a tenant that starts waiting joins at the end, behind every tenant already waiting.
 *
 * Claim. Let X wait in pool p at time t₀, the only waiting task of its tenant x, fitting p. Let
 * k be the tenants with ready work in p at t₀ whose turn is before x's. Assume (A1) x submits
 * nothing more and nothing more of x becomes due while X waits; (A2) a dispatched task holds its
 * pool at most its hold: its timeout plus the dispatch and run leases, enforced at submit (τ_p
 * for a task whose own hold is not known: the pool's timeout cap plus the leases); (A3) the
 * scheduler runs. Then X starts by
 *
 *     t₁ = the time x's running tasks have all ended (t₀ if none runs),
 *     Lambda (c slots):  the (r + 1)-th smallest of the slots' first free times e_s, plus q·τ,
 *                        k = q·c + r, where e_s is the end of the task in slot s at t₀ (t₀ for
 *                        a free slot) when t₁ = t₀, and t₁ + τ for every slot when t₁ > t₀ (a
 *                        task may end early and its slot be refilled before t₁);
 *     Fargate:           E + (k + h)·τ, E = every task running at t₀ ended (t₁ = t₀), or the
 *                        later of that and t₁ + τ (t₁ > t₀); h = 1 if the pool is reserved for
 *                        another task at t₀ or t₁ > t₀, else 0.
 *
 * Proof. (1) From t₁ on, x runs nothing (A1: X is all it has), so its share is 0, below its fair
 * share (1 / W > 0 while x has work): no tenant above its fair share goes before X in p, those
 * below go before it only by an earlier turn, and X's key (below, turn) stays put.
 * (2) No tenant that starts waiting after t₀ goes before X: it joins with a turn after x's
 * (ties to arrival order; work let go by flow control joins at that instant, not at its due
 * time), and x's turn does not move while X waits. (3) Each of the k tenants
 * goes before X at most once: once served, its turn is later than x's. (4) Lambda: after t₁,
 * every slot that frees goes to X or to one of the k (work conserving, X fits any free slot, and
 * nothing else ranks before X); the slot's task at t₁ ends by e_s and each later one holds it
 * at most τ, so the (k + 1)-th free slot after t₁, which X must get, frees by the stated time.
 * Fargate: the pool is reserved for its best task when that does not fit (EASY), and only
 * tasks that end before it would fit anyway start beside it, so it starts by the time every task
 * running when it reserved has ended. Under fair-share the reservation stays with its task
 * against tenants of equal share (policy.ts #reservedFor), so after t₁ the pool is reserved for
 * X, for one of the k, or for the task that held it at t₁ (at most one, and only if the pool was
 * held at t₀ or t₁ > t₀: with x at share 0 from t₀ no other task becomes best before X). The
 * first start is by E; after each start the next reserved task starts within τ (every running
 * task then ends within τ of that start). With k + h + 1 starts at most, X starts by
 * E + (k + h)·τ.   ∎
 *
 * Each tenant counts once, whatever its weight or its backlog: the rotation is what makes the
 * bound a number of tenants, not of tasks. A tenant with other waiting work gets no bound here:
 * after each of its turns it goes to the end, behind tenants that joined meanwhile, and those
 * may keep coming (fair share among them is the point). A delayed task gets none either until
 * it is due: tenants that start waiting before then join ahead of it.
 *
 * Tightness. In the Lambda pool, given t₁, k and the slots' ends, the bound is reached (in an
 * open system, with enough tenants): every slot's task may run to its end and each later one to
 * τ, the k may take the first k releases, and before t₁ tenants at share 0 (arriving later too)
 * may refill every slot. So it can only get tighter through what it is given: the ends known at
 * t₀ and τ (docs/policy.md, "How tight it can be at submit"; test/unit/policy/adversarial.test.ts
 * runs these worst cases).
 */
import type { Runtime } from '../task.ts';

export interface RotationBoundInput {
  readonly runtime: Runtime;
  readonly nowMs: number;
  /** k: tenants that may go before it, each at most once. */
  readonly ahead: number;
  /** t₁: when its tenant's running tasks have all ended at the latest (`nowMs` when none runs). */
  readonly tenantFreeAtMs: number;
  /**
   * When the pool's running tasks end at the latest, as ascending steps `[n, atMs]` ("by atMs at
   * least n slots are free", the last step at the pool's size for Lambda), or Fargate's one step
   * `[1, drainAtMs]`. A coarser (later) description gives a larger, still sound, bound.
   */
  readonly freeBy: readonly (readonly [number, number])[];
  /** c: the Lambda pool's slots. */
  readonly slots: number;
  /** τ: the longest a task dispatched from now on may hold the pool, seconds. */
  readonly holdSeconds: number;
  /** Fargate: the pool is reserved for another task now. */
  readonly reservedForOther?: boolean | undefined;
}

/** The bound proved above, seconds from `nowMs`. */
export function rotationBoundSeconds(input: RotationBoundInput): number {
  const { nowMs, ahead, holdSeconds } = input;
  const holdMs = holdSeconds * 1000;
  const t1 = Math.max(nowMs, input.tenantFreeAtMs);
  const last = (steps: readonly (readonly [number, number])[]) => steps.at(-1)?.[1] ?? nowMs;
  if (input.runtime === 'fargate') {
    const drainMs = Math.max(nowMs, last(input.freeBy));
    const first = t1 > nowMs ? Math.max(drainMs, t1 + holdMs) : drainMs;
    const held = input.reservedForOther || t1 > nowMs ? 1 : 0;
    return (first + (ahead + held) * holdMs - nowMs) / 1000;
  }
  const slots = Math.max(1, input.slots);
  const ends = slotEnds(input.freeBy, slots, nowMs);
  const firstEnds = (t1 > nowMs ? ends.map((end) => Math.max(end, t1 + holdMs)) : ends).sort((a, b) => a - b);
  const rounds = Math.floor(ahead / slots);
  const within = ahead - rounds * slots;
  return ((firstEnds[within] as number) + rounds * holdMs - nowMs) / 1000;
}

/** One end per slot from the steps; slots the steps leave out end with the last step. */
function slotEnds(steps: readonly (readonly [number, number])[], slots: number, nowMs: number): number[] {
  const ends: number[] = [];
  let counted = 0;
  for (const [count, atMs] of steps) {
    for (; counted < Math.min(count, slots); counted++) ends.push(Math.max(nowMs, atMs));
  }
  const tail = Math.max(nowMs, steps.at(-1)?.[1] ?? nowMs);
  for (; counted < slots; counted++) ends.push(tail);
  return ends;
}

/**
 * The bound on the pool's pace instead of on timeouts (Lambda). The timeout bound charges every
 * slot refill the pool's cap (τ), so where tasks run far below their timeouts it is many times the
 * real wait (docs/policy.md, "How tight it can be at submit"). This one counts releases instead.
 *
 * Claim. X, k and t₁ as above; s = max(t₀, t₁). Under (A1) and (A3), and with (A4) the pool frees
 * at least k + 1 slots between s and s + (k + 1)/ρ, X starts by then (ρ: slots freed a second).
 *
 * Proof. From s on x runs nothing, so X's key is (0, turn_x) and only the k can go before it
 * (steps (1)–(3) above). Every slot that frees after s, and every slot free at s, goes to X or to
 * one of the k (work conserving; X fits any slot), and each of the k takes one at most. So of
 * k + 1 slots freed after s, one is X's, and (A4) gives k + 1 by the stated time.   ∎
 *
 * Below its fair share. Let σ be x's weighted dominant share at t₀ and assume (A6) the summed
 * weight of the tenants with work stays at most W̄ from t₀ until X starts, with σ·W̄ < 1, and x is
 * below its quota and X held by no flow control at t₀. Then the same holds with s = t₀.
 *
 * Proof. x's share only falls while X waits (A1: its running tasks end, nothing is added), so
 * σ(t) ≤ σ < 1 / W̄ ≤ 1 / W(t): x is below its fair share throughout and X's key is (below, turn_x)
 * from t₀. Tenants above their fair share go after it; of those below, only ones with an earlier
 * turn, which are the k (a tenant that starts waiting after t₀ joins behind x, step (2)), each at
 * most once (step (3)). x stays below its quota (its count only falls), so X may start whenever it
 * is first; the rest is the proof above from s = t₀.   ∎
 *
 * No timeout enters it except through t₁ (its own tenant's running tasks). (A4) is a statement
 * about the future that the API takes from the past (pace.ts: the fewest slots the pool freed in
 * any 10 s of the last minute); it says so in `wait.assumes` and in `assumedFreed`, so whoever
 * holds the answer can check it (the chaos checker does).
 */
export interface PaceBoundInput {
  readonly nowMs: number;
  /** k. */
  readonly ahead: number;
  /** t₀: the instant X is in the rotation (now, or later when it joins later). */
  readonly fromMs: number;
  /** t₁; t₀ when its tenant is below its fair share (A6, the second claim). */
  readonly tenantFreeAtMs: number;
  /** ρ: slots the pool frees a second (> 0). */
  readonly freedPerSecond: number;
}

export interface PaceBound {
  /** Seconds from `nowMs`. */
  readonly seconds: number;
  /** (A4): at least `slots` freed between `fromMs` and `byMs`. */
  readonly freed: { readonly slots: number; readonly fromMs: number; readonly byMs: number };
}

/** The pace bound proved above, or null without a pace. */
export function paceBound(input: PaceBoundInput): PaceBound | null {
  if (!(input.freedPerSecond > 0)) return null;
  const fromMs = Math.max(input.fromMs, input.tenantFreeAtMs);
  const slots = input.ahead + 1;
  const byMs = fromMs + Math.ceil((slots / input.freedPerSecond) * 1000);
  return { seconds: (byMs - input.nowMs) / 1000, freed: { slots, fromMs, byMs } };
}

/**
 * The bound on the Lambda pool's headroom: at light load neither the pace (a pool idle for 10 s
 * freed nothing then) nor the timeouts say anything close to the wait, which is one round.
 *
 * Claim. X in its Lambda pool's rotation from t₀ (the snapshot's instant, or the latest instant it
 * joins), its tenant below quota, X held by no flow control. Under (A3) and (A5) fewer than c
 * tasks are dispatched or running at every instant from t₀ until X starts, as the scheduler counts
 * them, X starts in the scheduler's first dispatch round after t₀.
 *
 * Proof. A round picks waiting tasks in the engine's order for as long as one fits
 * (runtime/scheduler/reservation.ts `pickAll`; work conserving). A Lambda task fits any free slot,
 * and X's tenant is below quota and nothing holds X, so the round stops before X only if the pool
 * is full, which (A5) excludes; so X is picked in it. Neither X's share nor its turn enters: this
 * holds whatever its tenant runs and whoever joins, so long as the pool does not fill.   ∎
 *
 * (A5) is a statement about the future the API takes from the past: the most slots in use in any
 * 10 s of the last minute (pace.ts UsedSlots), with room besides for every tenant ahead and X. It
 * says so in `wait.assumes` and `assumedHeadroom`, so whoever holds the answer can check it (the
 * chaos checker does, from the dispatches and ends it recorded); the answer it beat is given as
 * the worst case.
 */
export interface HeadroomBoundInput {
  readonly nowMs: number;
  /** t₀. */
  readonly fromMs: number;
  /** Where the assumption's window ends (the caller sets it to the bound's end). */
  readonly byMs: number;
  /** c: the pool's slots. */
  readonly slots: number;
}

export interface HeadroomBound {
  /** Seconds from `nowMs` to the round's instant (t₀, or now when that is past), the round itself not included. */
  readonly seconds: number;
  /** (A5): fewer than `slots` tasks hold the pool at every instant between `fromMs` and `byMs`. */
  readonly below: { readonly slots: number; readonly fromMs: number; readonly byMs: number };
}

/** The headroom bound proved above: the scheduler's round (its lag) is the caller's to add. */
export function headroomBound(input: HeadroomBoundInput): HeadroomBound {
  return {
    seconds: Math.max(0, input.fromMs - input.nowMs) / 1000,
    below: { slots: input.slots, fromMs: input.fromMs, byMs: Math.max(input.byMs, input.fromMs) },
  };
}

/**
 * A compact, conservative form of Lambda free steps for publishing: the steps at 1, 2, 4, 8, …
 * slots and at the pool's size, each with the time of the latest step it covers (so any count
 * between two published ones reads the later time, never an earlier one).
 */
export function coarsenSteps(
  steps: readonly (readonly [number, number])[],
  slots: number,
): (readonly [number, number])[] {
  const ends = slotEnds(steps, slots, Number.NEGATIVE_INFINITY);
  const out: [number, number][] = [];
  for (let n = 1; ; n = Math.min(slots, n * 2)) {
    out.push([n, ends[n - 1] as number]);
    if (n >= slots) break;
  }
  return out;
}
