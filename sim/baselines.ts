/**
 * Peers' orderings, behind the same small interface as our SchedulingPolicy, so the simulator can
 * replay one trace through each:
 *   - strict-priority: tiers, FIFO within a tier, no aging (BullMQ priorities, Temporal task-queue
 *     priority keys without fairness);
 *   - round-robin: one FIFO per tenant, served in turn (Hatchet's round-robin concurrency groups,
 *     BullMQ Pro groups);
 *   - fifo: one queue in arrival order (a plain SQS queue or a Postgres-backed job table).
 * All of them model the same worker pools: a task starts only if it fits its pool's free capacity;
 * a Fargate task that does not fit is passed by later ones that do (first fit among the next 64),
 * with no reservation — the usual behaviour of a worker that pulls what it can run.
 */
import { fits } from '../runtime/core/policy/constraints.ts';
import { addInto, capacityOf, demandOf, zeroVector } from '../runtime/core/policy/drf.ts';
import { IndexedHeap, NOT_IN_HEAP } from '../runtime/core/policy/heap.ts';
import type { Candidate, Pools, ResourceVector } from '../runtime/core/policy/types.ts';
import { tierRank } from '../runtime/core/task.ts';

/** What the simulator drives. SchedulingPolicy satisfies it. */
export interface Dispatcher {
  add(candidate: Candidate): unknown;
  /** `nowMs`: when the slot freed (our engine counts the pool's pace from it). */
  release(taskId: string, nowMs?: number): unknown;
  next(nowMs: number): Candidate | undefined;
}

export const BASELINE_NAMES = ['strict-priority', 'round-robin', 'fifo-queue'] as const;
export type BaselineName = (typeof BASELINE_NAMES)[number];

const FIRST_FIT_WINDOW = 64;

interface Queued {
  readonly candidate: Candidate;
  readonly demand: ResourceVector;
  readonly rank: number;
  index: number;
}

const slot = {
  get: (item: Queued) => item.index,
  set: (item: Queued, index: number) => {
    item.index = index;
  },
};

/** Pool capacity bookkeeping shared by the baselines. */
class Pools2 {
  readonly capacity: ResourceVector;
  readonly used = zeroVector();
  readonly #active = new Map<string, ResourceVector>();

  constructor(pools: Pools) {
    this.capacity = capacityOf(pools);
  }

  fits(item: Queued): boolean {
    return fits(item.demand, this.used, this.capacity);
  }

  take(item: Queued): void {
    this.#active.set(item.candidate.taskId, item.demand);
    addInto(this.used, item.demand, 1);
  }

  release(taskId: string): void {
    const demand = this.#active.get(taskId);
    if (!demand) return;
    this.#active.delete(taskId);
    addInto(this.used, demand, -1);
  }
}

const queued = (candidate: Candidate): Queued => ({
  candidate,
  demand: demandOf(candidate.runtime, candidate.resources),
  rank: tierRank(candidate.priority),
  index: NOT_IN_HEAP,
});

/** One global order (per pool), first fit within a window. */
class OrderedQueue implements Dispatcher {
  readonly #pools: Pools2;
  readonly #queues: { lambda: IndexedHeap<Queued>; fargate: IndexedHeap<Queued> };
  readonly #queueList: readonly IndexedHeap<Queued>[];

  constructor(pools: Pools, before: (a: Queued, b: Queued) => boolean) {
    this.#pools = new Pools2(pools);
    this.#queues = { lambda: new IndexedHeap(before, slot), fargate: new IndexedHeap(before, slot) };
    this.#queueList = [this.#queues.lambda, this.#queues.fargate];
  }

  add(candidate: Candidate): void {
    this.#queues[candidate.runtime].push(queued(candidate));
  }

  release(taskId: string): void {
    this.#pools.release(taskId);
  }

  next(_nowMs: number): Candidate | undefined {
    for (const queue of this.#queueList) {
      const top = queue.peek();
      if (!top) continue;
      if (this.#pools.fits(top)) {
        queue.pop();
        this.#pools.take(top);
        return top.candidate;
      }
      let scanned = 0;
      for (const item of queue.ordered()) {
        if (this.#pools.fits(item)) {
          queue.remove(item);
          this.#pools.take(item);
          return item.candidate;
        }
        if (++scanned >= FIRST_FIT_WINDOW) break;
      }
    }
    return undefined;
  }
}

/** One tenant's FIFO in a round-robin ring (a circular doubly linked list: O(1) join and leave). */
interface RingNode {
  readonly tenantId: string;
  readonly items: Queued[];
  head: number;
  prev: RingNode;
  next: RingNode;
}

class Ring {
  readonly nodes = new Map<string, RingNode>();
  cursor: RingNode | undefined;

  enqueue(item: Queued): void {
    const tenantId = item.candidate.tenantId;
    let node = this.nodes.get(tenantId);
    if (!node) {
      const fresh = { tenantId, items: [], head: 0 } as unknown as RingNode;
      // Join just before the cursor: the newcomer waits a full turn, like in a real rotation.
      const after = this.cursor;
      if (after) {
        fresh.next = after;
        fresh.prev = after.prev;
        after.prev.next = fresh;
        after.prev = fresh;
      } else {
        fresh.next = fresh;
        fresh.prev = fresh;
        this.cursor = fresh;
      }
      this.nodes.set(tenantId, fresh);
      node = fresh;
    }
    node.items.push(item);
  }

  /** Takes the head of `node`, removing the node from the ring when it empties. */
  take(node: RingNode): Queued {
    const item = node.items[node.head++] as Queued;
    if (node.head === node.items.length) {
      this.nodes.delete(node.tenantId);
      if (node.next === node) this.cursor = undefined;
      else {
        node.prev.next = node.next;
        node.next.prev = node.prev;
        this.cursor = node.next;
      }
    } else {
      if (node.head > 1024 && node.head * 2 > node.items.length) {
        node.items.splice(0, node.head);
        node.head = 0;
      }
      this.cursor = node.next;
    }
    return item;
  }
}

/** Tenants served in turn, FIFO within a tenant. */
class RoundRobin implements Dispatcher {
  readonly #pools: Pools2;
  readonly #rings = { lambda: new Ring(), fargate: new Ring() };

  constructor(pools: Pools) {
    this.#pools = new Pools2(pools);
  }

  add(candidate: Candidate): void {
    this.#rings[candidate.runtime].enqueue(queued(candidate));
  }

  release(taskId: string): void {
    this.#pools.release(taskId);
  }

  next(_nowMs: number): Candidate | undefined {
    for (const ring of [this.#rings.lambda, this.#rings.fargate]) {
      const turns = Math.min(ring.nodes.size, FIRST_FIT_WINDOW);
      let node = ring.cursor;
      for (let turn = 0; turn < turns && node; turn++) {
        if (this.#pools.fits(node.items[node.head] as Queued)) {
          const item = ring.take(node);
          this.#pools.take(item);
          return item.candidate;
        }
        node = node.next;
      }
    }
    return undefined;
  }
}

const byArrival = (a: Queued, b: Queued) => a.candidate.seq < b.candidate.seq;

export function createBaseline(name: BaselineName, pools: Pools): Dispatcher {
  switch (name) {
    case 'strict-priority':
      return new OrderedQueue(pools, (a, b) => (a.rank !== b.rank ? a.rank < b.rank : byArrival(a, b)));
    case 'round-robin':
      return new RoundRobin(pools);
    case 'fifo-queue':
      return new OrderedQueue(pools, byArrival);
  }
}
