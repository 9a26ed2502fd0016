/** The Lambda worker pool's modelled bill per task, by memory class (no AWS here: durations are modelled). */
import { LAMBDA_ENTRY_CLASS } from '../../runtime/infra/resources.ts';

/** An asynchronous Lambda invoke from the entry worker to a bigger class (modelled like an SQS call). */
const LAMBDA_INVOKE_MS = 12;

/**
 * The Lambda pool's worker bill per task, modelled (runtime/worker/lambda-classes.ts, lib/):
 * each task runs `workerMs` in the memory class it ran in locally (the class functions have the
 * classes' memory); a task above the entry class also costs the entry's invocation that hands
 * it on (an invoke call) and a second Lambda request. Event source batch size 1: one worker
 * invocation per task.
 */
export function workerLambdaUsage(
  classes: readonly number[],
  workerMs: number,
  entryMemoryMiB: number = LAMBDA_ENTRY_CLASS.memoryMiB,
): { invocations: number; gbSeconds: number; handedOff: number } {
  if (classes.length === 0) return { invocations: 0, gbSeconds: 0, handedOff: 0 };
  const handoffMs = 5 + LAMBDA_INVOKE_MS;
  let gbSeconds = 0;
  let handedOff = 0;
  for (const memoryMiB of classes) {
    gbSeconds += (memoryMiB / 1024) * (workerMs / 1000);
    if (memoryMiB > entryMemoryMiB) {
      handedOff++;
      gbSeconds += (entryMemoryMiB / 1024) * (handoffMs / 1000);
    }
  }
  const n = classes.length;
  return { invocations: (n + handedOff) / n, gbSeconds: gbSeconds / n, handedOff: handedOff / n };
}
