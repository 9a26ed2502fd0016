/**
 * Retry backoff: exponential with full jitter (AWS Architecture Blog, "Exponential Backoff And
 * Jitter"): delay = random(0, min(max, base · 2^(attempt−1))). Full jitter spreads a burst of
 * simultaneous failures instead of retrying them in lockstep. `random` is injected for tests.
 */
export interface BackoffOptions {
  readonly baseDelaySeconds: number;
  readonly maxDelaySeconds: number;
}

export function backoffMs(attempt: number, options: BackoffOptions, random: () => number = Math.random): number {
  const exponent = Math.max(0, attempt - 1);
  // Cap the exponent so 2^n never overflows into Infinity for absurd attempt numbers.
  const ceiling = Math.min(options.maxDelaySeconds, options.baseDelaySeconds * 2 ** Math.min(exponent, 30));
  return Math.floor(random() * ceiling * 1000);
}
