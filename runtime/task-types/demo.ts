/**
 * Built-in demo task types (PRODUCT.md "Local runtime"): sleep, fail n times, echo.
 */
import { z } from 'zod';
import { defineTaskType } from './define.ts';

export const demoSleep = defineTaskType({
  type: 'demo.sleep',
  description: 'Sleeps for `ms` milliseconds (stops early when cancelled), then returns how long it slept.',
  payload: z.strictObject({ ms: z.number().int().min(0).max(3_600_000) }),
  async handler({ ms }, ctx) {
    const started = Date.now();
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(resolve, ms);
      ctx.signal.addEventListener(
        'abort',
        () => {
          clearTimeout(timer);
          reject(ctx.signal.reason);
        },
        { once: true },
      );
    });
    return { sleptMs: Date.now() - started };
  },
});

export const demoFail = defineTaskType({
  type: 'demo.fail',
  description: 'Fails its first `failTimes` attempts, then succeeds.',
  payload: z.strictObject({ failTimes: z.number().int().min(0).max(100) }),
  defaults: { maxAttempts: 5 },
  async handler({ failTimes }, ctx) {
    if (ctx.attempt <= failTimes) {
      throw new Error(`demo.fail: attempt ${ctx.attempt} of ${failTimes} planned failures`);
    }
    return { succeededOnAttempt: ctx.attempt };
  },
});

export const demoEcho = defineTaskType({
  type: 'demo.echo',
  description: 'Returns its payload.',
  payload: z.unknown(),
  async handler(payload) {
    return { echo: payload };
  },
});

export const DEMO_TASK_TYPES = [demoSleep, demoFail, demoEcho] as const;
