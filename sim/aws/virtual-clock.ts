/**
 * Virtual time for the chaos simulation: the process's timers, `Date` and its random sources
 * (Math.random, crypto.randomBytes, crypto.randomUUID) are replaced (@sinonjs/fake-timers and
 * the project's seeded PRNG) while a run lasts, so the
 * production code — its sleeps, leases, heartbeats, long polls and the AWS SDK's retry backoffs —
 * runs on simulated time, hours in seconds, and one seed gives one history.
 *
 * The run loop lets every pending promise settle (one real `setImmediate`: nothing in a run waits
 * on real I/O, the fakes answer in memory), then fires the next due timer, and so on. Timers due
 * at the same instant fire in the order they were set, so the history does not depend on the
 * host's speed.
 */
import crypto from 'node:crypto';
import { syncBuiltinESMExports } from 'node:module';
import FakeTimers from '@sinonjs/fake-timers';
import { seededRandom } from '../../runtime/core/random.ts';

const realSetImmediate = globalThis.setImmediate;
const realMathRandom = Math.random;
const realRandomBytes = crypto.randomBytes;
const realRandomUUID = crypto.randomUUID;

/** Settle every promise that can settle without a timer firing. */
export const settle = (): Promise<void> => new Promise((resolve) => realSetImmediate(resolve));

export interface VirtualClock {
  /** Simulated epoch milliseconds. */
  nowMs(): number;
  /** Run timers until simulated time reaches `untilMs`, or until `done()` says stop. */
  runUntil(untilMs: number, done?: () => boolean): Promise<void>;
  /** Put the real timers, Date and Math.random back. */
  uninstall(): void;
}

let installed = false;

/**
 * Replace the global timers, Date and Math.random until `uninstall()`. Only one clock at a time:
 * a second install while one is active is refused rather than silently sharing time.
 */
export function installVirtualClock(options: { startMs: number; seed: number }): VirtualClock {
  if (installed) throw new Error('A virtual clock is already installed');
  installed = true;
  const clock = FakeTimers.withGlobal(globalThis).install({
    now: options.startMs,
    toFake: [
      'setTimeout',
      'clearTimeout',
      'setInterval',
      'clearInterval',
      'setImmediate',
      'clearImmediate',
      'Date',
      'performance',
      'hrtime',
    ],
    // Long runs fire millions of timers.
    loopLimit: Number.MAX_SAFE_INTEGER,
  });
  // The SDK's retry jitter, the stores' write tokens and every other caller of Math.random,
  // randomBytes or randomUUID draw from the seed (syncBuiltinESMExports updates the bindings
  // of `import { randomBytes } from 'node:crypto'` too).
  const random = seededRandom(options.seed ^ 0x5eed);
  Math.random = random;
  const seededBytes = (size: number) => {
    const bytes = Buffer.allocUnsafe(size);
    for (let i = 0; i < size; i++) bytes[i] = Math.floor(random() * 256);
    return bytes;
  };
  Object.assign(crypto, {
    randomBytes: (size: number, callback?: (error: Error | null, bytes: Buffer) => void) => {
      const bytes = seededBytes(size);
      if (!callback) return bytes;
      setTimeout(() => callback(null, bytes), 0);
      return undefined;
    },
    randomUUID: () => {
      const hex = seededBytes(16).toString('hex');
      return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-a${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
    },
  });
  syncBuiltinESMExports();
  return {
    nowMs: () => clock.now,
    async runUntil(untilMs, done) {
      for (;;) {
        await settle();
        if (done?.()) return;
        const next = clock.countTimers() > 0 ? peekNext(clock) : undefined;
        if (next === undefined || next > untilMs) {
          // No timer is due before untilMs: advancing fires nothing.
          if (clock.now < untilMs) clock.tick(untilMs - clock.now);
          await settle();
          return;
        }
        clock.next();
      }
    },
    uninstall() {
      clock.uninstall();
      Math.random = realMathRandom;
      Object.assign(crypto, { randomBytes: realRandomBytes, randomUUID: realRandomUUID });
      syncBuiltinESMExports();
      installed = false;
    },
  };
}

/** When the next timer is due (fake-timers keeps them in a min-heap, `clock.timerHeap`). */
function peekNext(clock: object): number | undefined {
  const heap = (clock as unknown as { timerHeap?: { peek(): { callAt: number } | undefined } }).timerHeap;
  return heap?.peek()?.callAt;
}
