/**
 * The start-rate limit's arithmetic: GCRA (the generic cell rate algorithm, ATM's virtual
 * scheduling form of a token bucket), pure and in integer microseconds so every party computes
 * the same answer: the engine's mirror, the control store's conditional write (the arbiter), the
 * API's explanation and the chaos checker.
 *
 * State: one number, the theoretical arrival time TAT. With emission interval T = 1/rate and
 * tolerance τ = (burst − 1)·T, a start at t conforms iff max(TAT, t) ≤ t + τ, and then
 * TAT ← max(TAT, t) + T. Granting n starts at once is n conforming starts at the same t.
 *
 * Guarantee (why `burst + ⌊W·rate⌋` in any window of W seconds, the 4×2+4): take the n
 * starts recorded in a closed window [a, a+W] and the one of them granted last, at t ≤ a+W. The
 * other n−1 were granted before it, each pushing TAT on by T from at least their own time ≥ a,
 * so TAT ≥ a + (n−1)·T when it was granted, and it conformed: a + (n−1)·T ≤ t + τ ≤ a + W + τ.
 * So n ≤ 1 + (W + τ)/T = burst + W·rate. The argument needs only that grants are serialized (each
 * sees the TAT its predecessors left: the conditional write), not that they come in time order:
 * a grant whose clock is behind is judged at its own earlier t, which is stricter.
 */
import type { StartRate } from '../tenant-settings.ts';

/** T in microseconds, rounded up: a rate that does not divide a second is kept, never exceeded. */
export function emissionIntervalUs(rate: StartRate): number {
  return Math.ceil(1_000_000 / rate.perSecond);
}

/** τ in microseconds. */
export function toleranceUs(rate: StartRate): number {
  return (rate.burst - 1) * emissionIntervalUs(rate);
}

export interface Grant {
  /** How many of the starts asked for conform now (0..want). */
  readonly granted: number;
  /** TAT after them (unchanged when none was granted). */
  readonly tatUs: number;
}

/** Grant up to `want` starts at `nowUs` against `tatUs` (undefined: a full bucket). */
export function grantStarts(rate: StartRate, tatUs: number | undefined, nowUs: number, want: number): Grant {
  const t = emissionIntervalUs(rate);
  const from = Math.max(tatUs ?? nowUs, nowUs);
  const room = nowUs + toleranceUs(rate) - from;
  const granted = room < 0 ? 0 : Math.min(want, Math.floor(room / t) + 1);
  return { granted, tatUs: granted > 0 ? from + granted * t : (tatUs ?? nowUs) };
}

/** The earliest instant (µs) one more start conforms. */
export function nextStartUs(rate: StartRate, tatUs: number | undefined, nowUs: number): number {
  if (tatUs === undefined) return nowUs;
  return Math.max(nowUs, tatUs - toleranceUs(rate));
}

/**
 * Whether recorded start times (ms, any order) conform to the limit: sorted, they must pass GCRA
 * one by one (the exact test of "at most burst + ⌊W·rate⌋ in every window"). Returns the first
 * start that does not, or undefined.
 */
export function firstNonConforming(rate: StartRate, startsMs: readonly number[]): number | undefined {
  let tat: number | undefined;
  for (const ms of [...startsMs].sort((a, b) => a - b)) {
    const grant = grantStarts(rate, tat, ms * 1000, 1);
    if (grant.granted === 0) return ms;
    tat = grant.tatUs;
  }
  return undefined;
}
