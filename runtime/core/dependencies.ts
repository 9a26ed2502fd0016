/**
 * Task dependencies (`dependsOn`): pure rules, no I/O. app/dependencies.ts runs them over the
 * stores; docs/dependencies.md has the whole argument.
 *
 * A task submitted with dependencies that have not all SUCCEEDED is written *held*: QUEUED, with
 * `waitingOn` listing the ones still open, and without a `byTenantQueue` entry, so the scheduler
 * never reads it, counts it against a quota or gives it a fair share. Each dependency's end takes
 * one id off `waitingOn` (SUCCEEDED) or cancels the task with `DEPENDENCY_FAILED` (FAILED or
 * CANCELLED); the write that takes the last id off also releases it (the queue entry appears).
 * Every step is one conditional write of one item, and repeating it changes nothing.
 */
import { InvalidTransitionError } from './errors.ts';
import { plan, type TransitionPlan } from './lifecycle.ts';
import { isTerminal, type Task, type TaskError, type TaskState } from './task.ts';

/** At most this many dependencies per task (the product specification). */
export const MAX_DEPENDENCIES = 100;

/** The error code of a task cancelled because a dependency did not succeed. */
export const DEPENDENCY_FAILED = 'DEPENDENCY_FAILED';

/** The error a task cancelled for its dependency carries. */
export function dependencyFailedError(dependency: DependencyEnd): TaskError {
  return {
    name: DEPENDENCY_FAILED,
    code: DEPENDENCY_FAILED,
    message:
      dependency.state === 'GONE'
        ? `Dependency ${dependency.taskId} no longer exists (it ended and was deleted)`
        : `Dependency ${dependency.taskId} ended ${dependency.state}`,
    retryable: false,
  };
}

/** How a dependency ended, as its settling read it: `GONE` when its item was deleted (TTL, after its end). */
export interface DependencyEnd {
  readonly taskId: string;
  readonly state: TaskState | 'GONE';
}

/** Whether the task is held for dependencies: QUEUED, with some not yet succeeded. */
export const isHeld = (task: Pick<Task, 'state' | 'waitingOn'>): boolean =>
  task.state === 'QUEUED' && (task.waitingOn?.length ?? 0) > 0;

/** A dependency in one of these states makes its dependents cancel. */
export const failsDependents = (state: TaskState): boolean => state === 'FAILED' || state === 'CANCELLED';

/**
 * A new task held on those of its dependencies (read consistently just before) that have not
 * SUCCEEDED; unchanged when all have. `states` maps each dependency id to its state.
 */
export function holdOnDependencies(task: Task, states: ReadonlyMap<string, TaskState>): Task {
  const open = (task.dependsOn ?? []).filter((id) => states.get(id) !== 'SUCCEEDED');
  return open.length === 0 ? task : { ...task, waitingOn: open };
}

/**
 * Mark a dependency as having dependents, while it has not ended: its final write then carries
 * the mark, so the durable change feed settles its dependents. Undefined when already marked.
 * Throws InvalidTransitionError once it has ended (the caller settles the edge itself).
 */
export function markHasDependents(task: Task, now: Date): TransitionPlan | undefined {
  if (isTerminal(task.state)) {
    throw new InvalidTransitionError('markDependents', task, 'it has ended; settle its dependents directly');
  }
  if (task.hasDependents) return undefined;
  return plan('markDependents', task, now, [task.state], { hasDependents: true });
}

/**
 * Dependency `dependencyId` SUCCEEDED: take it off the held task's `waitingOn`, and release the task
 * when it was the last (it becomes eligible now, and ages from now). Undefined when there is
 * nothing to do (not held on it: done already, cancelled, or released).
 */
export function dependencySucceeded(task: Task, dependencyId: string, now: Date): TransitionPlan | undefined {
  if (!isHeld(task) || !task.waitingOn!.includes(dependencyId)) return undefined;
  const waitingOn = task.waitingOn!.filter((id) => id !== dependencyId);
  if (waitingOn.length > 0) return plan('dependencySucceeded', task, now, ['QUEUED'], { waitingOn });
  const nowIso = now.toISOString();
  const eligible = Date.parse(task.runAt) > now.getTime() ? task.runAt : nowIso;
  // Released: it ages from when it became eligible, as a delayed task does.
  return plan('dependencySucceeded', task, now, ['QUEUED'], { runAt: eligible, agingFrom: eligible }, ['waitingOn']);
}

/**
 * Dependency ended FAILED or CANCELLED: the held task is CANCELLED with `DEPENDENCY_FAILED` (its own
 * dependents follow when this write's change is settled). Undefined when it is no longer held.
 */
export function dependencyFailed(task: Task, dependency: DependencyEnd, now: Date) {
  if (!isHeld(task) || !task.waitingOn!.includes(dependency.taskId)) return undefined;
  return plan(
    'dependencyFailed',
    task,
    now,
    ['QUEUED'],
    { state: 'CANCELLED', finishedAt: now.toISOString(), error: dependencyFailedError(dependency) },
    ['waitingOn'],
  );
}
