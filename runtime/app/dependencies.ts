/**
 * Task dependencies over the stores (the rules are pure: core/dependencies.ts; the argument in full:
 * docs/dependencies.md).
 *
 *   submit:   check every dependency exists (consistent reads) ─▶ write the task held (one PutItem)
 *   its creation, from the durable change feed ─▶ register(): for each dependency it waits on,
 *             add the edge (dependents bucket) ─▶ read the dependency consistently:
 *               ended     ─▶ settle the edge now
 *               not ended ─▶ mark it `hasDependents` (conditional on its version), unless marked
 *   a marked dependency's end, from the durable change feed ─▶ settle(): read its dependents'
 *             buckets consistently ─▶ settle each edge ─▶ delete the buckets read
 *   settle an edge: SUCCEEDED ─▶ take it off the dependent's `waitingOn` (the last one releases it,
 *             and it is announced); FAILED / CANCELLED ─▶ cancel the dependent, DEPENDENCY_FAILED
 *
 * No missed wake-up: the edge is written before the dependency is read, and the dependency's
 * dependents are read after its final write, so whichever comes second sees the other. A final
 * write after the mark carries the mark (the mark moved the version: a write built on an older
 * read is refused and read again), so its change is settled; one before the mark is seen by the
 * read. Both halves run from the durable change feed (local: the item's outbox and its relay; AWS:
 * the table's stream), which retries until they succeed, so a crash between a write and the
 * next step delays a dependent and never strands it. Every step is idempotent.
 */
import type { DependentsStore } from '../adapters/dependents-store.ts';
import type { QueueClient } from '../adapters/queues.ts';
import type { TaskStore } from '../adapters/task-store.ts';
import {
  type DependencyEnd,
  dependencyFailed,
  dependencySucceeded,
  failsDependents,
  isHeld,
  markHasDependents,
} from '../core/dependencies.ts';
import { InvalidTransitionError, ValidationError } from '../core/errors.ts';
import type { TaskEvent } from '../core/events.ts';
import { isTerminal, type Task, type TaskState } from '../core/task.ts';

/**
 * The dependencies' states, read consistently, before a submit writes anything (undefined when
 * the task exists already: the submit is a repeat, answered with it). Refused (400
 * `unknown_dependency`, naming them) when some do not exist or belong to another tenant (the same
 * answer, so nothing is learnt about other tenants' ids), or when the task would depend on itself.
 */
export async function checkDependencies(
  store: Pick<TaskStore, 'getMany'>,
  tenantId: string,
  taskId: string,
  dependsOn: readonly string[],
): Promise<Map<string, TaskState> | undefined> {
  if (dependsOn.includes(taskId)) return dependencyStates(new Map(), tenantId, taskId, dependsOn);
  // The task itself is read too: a repeat of an accepted request (same idempotency key) finds it
  // and is answered with it, even if a dependency has since gone (TTL deletes ended tasks).
  const found = await store.getMany([taskId, ...dependsOn]);
  if (found.has(taskId)) return undefined;
  return dependencyStates(found, tenantId, taskId, dependsOn);
}

/**
 * {@link checkDependencies} over tasks already read (consistently): a batch reads every item's
 * dependencies at once.
 */
export function dependencyStates(
  found: ReadonlyMap<string, Task>,
  tenantId: string,
  taskId: string,
  dependsOn: readonly string[],
): Map<string, TaskState> {
  if (dependsOn.includes(taskId)) {
    throw new ValidationError('invalid_dependency', 'A task cannot depend on itself', { field: 'dependsOn', taskId });
  }
  const missing = dependsOn.filter((id) => found.get(id)?.tenantId !== tenantId);
  if (missing.length > 0) {
    const listed = `${missing.slice(0, 10).join(', ')}${missing.length > 10 ? ', …' : ''}`;
    throw new ValidationError(
      'unknown_dependency',
      `dependsOn names ${missing.length} task${missing.length === 1 ? '' : 's'} tenant ${tenantId} does not have: ${listed}`,
      { field: 'dependsOn', missing },
    );
  }
  return new Map(dependsOn.map((id) => [id, found.get(id)!.state]));
}

/** A dependent's item takes one write per dependency that ends: many may end at once. */
const DEPENDENT_WRITE_ATTEMPTS = 25;

export interface DependencyServiceDeps {
  readonly store: TaskStore;
  readonly dependents: DependentsStore;
  readonly queues: QueueClient;
  readonly now?: () => Date;
  /** Told of each change this service makes to a dependent (the local runtime logs them). */
  readonly onChange?: ((task: Task) => void) | undefined;
}

export class DependencyService {
  readonly #deps: DependencyServiceDeps;
  readonly #now: () => Date;

  constructor(deps: DependencyServiceDeps) {
    this.#deps = deps;
    this.#now = deps.now ?? (() => new Date());
  }

  /** Where the edges are kept (tests wrap it to interleave a dependency's end). */
  get dependentsStore(): DependentsStore {
    return this.#deps.dependents;
  }

  /** The dependents registered on a task and not yet settled. */
  async dependentsOf(dependencyId: string): Promise<string[]> {
    return (await this.#deps.dependents.of(dependencyId)).dependents;
  }

  /**
   * Whether a change needs this service (what the local outbox records besides webhooks' events):
   * the creation of a held task, or the end of a task some other task depends on.
   */
  static concerns(task: Task, event: Pick<TaskEvent, 'state' | 'previousState'>): boolean {
    if (event.previousState === null) return isHeld(task);
    return isTerminal(event.state) && task.hasDependents === true;
  }

  /**
   * The durable change feed's step for one change of `taskId` (the local relay and the AWS stream
   * consumer call it; it may be called again for the same change). Reads the task as it is now.
   */
  async onChange(taskId: string, event: Pick<TaskEvent, 'state' | 'previousState'>): Promise<void> {
    if (event.previousState === null) {
      const task = await this.#deps.store.get(taskId);
      if (task && isHeld(task)) await this.register(task);
      return;
    }
    if (isTerminal(event.state)) await this.settle(taskId);
  }

  /** Register a held task on each dependency it waits on (idempotent; see the header). */
  async register(dependent: Task): Promise<void> {
    for (const dependencyId of dependent.waitingOn ?? []) {
      await this.#deps.dependents.add(dependencyId, dependent.taskId);
      const dependency = await this.#markOrRead(dependencyId);
      // Gone: it existed at the submit's check, so it ended and TTL deleted it since; waiting on
      // it would strand the task, and whether it succeeded is no longer known.
      if (!dependency) await this.#settleEdge(dependent.taskId, { taskId: dependencyId, state: 'GONE' });
      else if (isTerminal(dependency.state)) await this.#settleEdge(dependent.taskId, dependency);
    }
  }

  /**
   * The dependency as read after its mark: marked while not ended (undefined when it is gone),
   * or ended (then the caller settles the edge).
   */
  async #markOrRead(dependencyId: string): Promise<Task | undefined> {
    try {
      return await this.#deps.store.transition(dependencyId, (current) => markHasDependents(current, this.#now()), {
        attempts: DEPENDENT_WRITE_ATTEMPTS,
      });
    } catch (error) {
      if (error instanceof InvalidTransitionError) return error.current;
      if (error instanceof Error && error.name === 'TaskNotFoundError') return undefined;
      throw error;
    }
  }

  /**
   * Settle every dependent of a task that has ended (idempotent). Read as it is now: a task retried
   * by an operator since is not ended, and its next end settles them.
   *
   * Bucket by bucket, each deleted once its dependents are settled, so a settle cut short resumes
   * at the first bucket left: on AWS it runs in the stream function, which Lambda stops at its
   * timeout (60 s) and whose record is retried from the start; walking every dependent again each
   * time, a fan-out whose settled part alone filled an invocation never got further.
   */
  async settle(dependencyId: string): Promise<void> {
    const dependency = await this.#deps.store.get(dependencyId);
    if (!dependency || !isTerminal(dependency.state)) return;
    const read = await this.#deps.dependents.of(dependencyId);
    for (const bucket of read.buckets) {
      for (const dependentId of bucket.dependents) await this.#settleEdge(dependentId, dependency);
      await this.#deps.dependents.clear({ buckets: [bucket] });
    }
  }

  /** One edge: the dependency ended; release or cancel the dependent (nothing when already done). */
  async #settleEdge(dependentId: string, dependency: DependencyEnd): Promise<void> {
    const now = this.#now();
    let wrote = false;
    let changed: Task;
    try {
      changed = await this.#deps.store.transition(
        dependentId,
        (current) => {
          const planned =
            dependency.state === 'SUCCEEDED'
              ? dependencySucceeded(current, dependency.taskId, now)
              : dependency.state === 'GONE' || failsDependents(dependency.state)
                ? dependencyFailed(current, dependency, now)
                : undefined;
          wrote = planned !== undefined;
          return planned;
        },
        { attempts: DEPENDENT_WRITE_ATTEMPTS },
      );
    } catch (error) {
      // A registration whose task was never written (a submit that crashed) leaves an edge to nothing.
      if (error instanceof Error && error.name === 'TaskNotFoundError') return;
      throw error;
    }
    // Released (by this step, or by an earlier run of it that may have crashed before announcing):
    // announce it, as a submit does. A repeat is harmless (the scheduler de-duplicates on taskId);
    // a lost one is found by the registry backstop, as for a submit.
    if (dependency.state === 'SUCCEEDED' && changed.state === 'QUEUED' && !isHeld(changed)) {
      await this.#deps.queues.announce([changed], now);
    }
    if (wrote) this.#deps.onChange?.(changed);
  }
}
