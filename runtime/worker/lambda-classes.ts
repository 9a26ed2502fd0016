/**
 * The Lambda pool's memory classes at run time. The entry worker (the smallest class, on the
 * `worker-lambda` queue) runs each attempt that fits it and hands a bigger one to the function
 * of its class with an asynchronous invoke:
 *
 *   worker-lambda ──ESM──▶ entry (512 MiB) ── fits? ── yes ──▶ runAttempt
 *                                              └ no ──▶ Invoke (Event) 2,048 MiB function ──▶ runAttempt
 *
 * The handoff keeps every guarantee of the queue path: the attempt is fenced (a duplicate or
 * late invoke finds the fence moved and is skipped), a failed invoke leaves the message to come
 * back, and an invoke Lambda loses or gives up on leaves the task DISPATCHED until its dispatch
 * lease runs out and the reconciler dispatches it again, as for a lost worker message.
 */
import type { WorkerMessage } from '../adapters/queues.ts';
import { type LambdaWorkerSize, lambdaWorkerClassFor, type TaskResources } from '../core/task.ts';
import { LAMBDA_WORKER_CLASSES } from '../infra/resources.ts';
import { type AttemptDeps, type AttemptOutcome, runAttempt } from './run-attempt.ts';

/** Where a worker runs a message: here, or in the function of a bigger class. */
export type Placement = { readonly kind: 'here' } | { readonly kind: 'handoff'; readonly memoryMiB: number };

/**
 * Where a worker of `ownMemoryMiB` runs a task asking for `resources`. The class is the smallest
 * that fits the task; a worker at least that big runs it itself, so a class function never
 * hands anything on. A task beyond every class was refused or sent to Fargate at submit: should
 * one come, the largest class runs it.
 */
export function placeAttempt(
  resources: TaskResources,
  ownMemoryMiB: number,
  classes: readonly LambdaWorkerSize[] = LAMBDA_WORKER_CLASSES,
): Placement {
  const largest = classes.at(-1);
  if (!largest) throw new Error('placeAttempt: no Lambda worker classes');
  const needed = lambdaWorkerClassFor(resources, classes) ?? largest;
  return needed.memoryMiB <= ownMemoryMiB ? { kind: 'here' } : { kind: 'handoff', memoryMiB: needed.memoryMiB };
}

/** What became of a message at a Lambda worker: its attempt's outcome, or handed to a bigger class. */
export type LambdaWorkerOutcome =
  | (AttemptOutcome & { readonly memoryMiB: number })
  | { readonly kind: 'handed-off'; readonly memoryMiB: number };

export interface LambdaWorkerDeps {
  readonly attempt: AttemptDeps;
  /** This function's memory class. */
  readonly ownMemoryMiB: number;
  /**
   * Start the function of a bigger class on the message without waiting for it (on AWS an
   * asynchronous Lambda invoke; locally a run in the process). Throws when it was not started.
   */
  readonly handOff: (memoryMiB: number, message: WorkerMessage) => Promise<void>;
  readonly classes?: readonly LambdaWorkerSize[];
}

/**
 * One message at a Lambda worker: run it here or hand it on. Throws only for infrastructure
 * errors (the store, the queue or the invoke unreachable): the message then comes back.
 */
export async function runLambdaWorkerMessage(
  deps: LambdaWorkerDeps,
  message: WorkerMessage,
): Promise<LambdaWorkerOutcome> {
  let resources = message.task?.resources ?? message.resources;
  let toRun = message;
  if (!resources) {
    // A message that does not say (from a scheduler older than the classes): the item does. Run
    // here, the read spares the start write its own.
    const stored = await deps.attempt.store.get(message.taskId);
    resources = stored?.resources;
    if (stored?.fence === message.fence) toRun = { ...message, task: stored };
  }
  const placement: Placement = resources ? placeAttempt(resources, deps.ownMemoryMiB, deps.classes) : { kind: 'here' };
  if (resources && placement.kind === 'handoff') {
    // Handed on as received, with what the task asks for: never larger than the message SQS took
    // (an invoke's event is capped at 256 KB, as a message is), whatever the item holds.
    await deps.handOff(placement.memoryMiB, { ...message, resources });
    return { kind: 'handed-off', memoryMiB: placement.memoryMiB };
  }
  // It fits here; or there is no item, and runAttempt says so (skipped).
  const outcome = await runAttempt(deps.attempt, toRun);
  return { ...outcome, memoryMiB: deps.ownMemoryMiB };
}
