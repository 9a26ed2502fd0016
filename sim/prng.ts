import { seededRandom } from '../runtime/core/random.ts';

/** A small seeded PRNG (mulberry32): the simulator must replay the same trace for the same seed. */
export class Prng {
  readonly #random: () => number;

  constructor(seed: number) {
    this.#random = seededRandom(seed);
  }

  /** Uniform in [0, 1). */
  next(): number {
    return this.#random();
  }

  /** Uniform integer in [0, n). */
  int(n: number): number {
    return Math.floor(this.next() * n);
  }

  /** Exponentially distributed with the given mean. */
  exponential(mean: number): number {
    return -Math.log(1 - this.next()) * mean;
  }
}
