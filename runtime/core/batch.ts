/**
 * Batches (issue 25): many tasks submitted in one request, and a then-task submitted once every
 * one of them has ended. Pure rules: ids, shards, limits and counts; no I/O, no clock.
 *
 * Counting, in one picture (docs/batches.md has the argument):
 *
 *   member index i ──▶ counter shard floor(i / 100): four string sets of member indexes,
 *   `succeeded` `failed` `cancelled` `excluded` (refused, or never written), an index in at most
 *   one (the ADD is conditioned on its absence from all four: a repeat changes nothing)
 *   shard full (set sizes = its members) ──▶ ADD shard number to the batch's `doneShards` set
 *   every shard done ──▶ the then-task, with a deterministic id (its create is idempotent)
 */
import type { TaskState } from './task.ts';

/** Most tasks in one batch request (PRODUCT.md). */
export const MAX_BATCH_TASKS = 1000;

/**
 * Most bytes of a batch request body. On AWS the body travels as a string inside the Lambda's
 * event, whose invoke payload may be at most 6 MB (6,291,456 bytes); JSON escaping may double a
 * body (every quote and newline gains a backslash), so 3,000,000 bytes is the most that always
 * fits with the rest of the event. API Gateway's own limit (10 MB) is above it.
 */
export const MAX_BATCH_BODY_BYTES = 3_000_000;

/** Members per counter shard: a counter item of 100 short indexes stays under 1 KB (one write unit). */
export const BATCH_SHARD_SIZE = 100;

/** Keys of the open-batch list the sweeper reads (a batch's shard: a hash of its id). */
export const OPEN_BATCH_SHARDS = 4;

/** The sets a member index is counted in. */
export const COUNT_SETS = ['succeeded', 'failed', 'cancelled', 'excluded'] as const;
export type CountSet = (typeof COUNT_SETS)[number];

export interface BatchCounts {
  readonly succeeded: number;
  readonly failed: number;
  readonly cancelled: number;
  /** Items refused at submit, or never written (a request that died half-way and was not retried). */
  readonly excluded: number;
}

/** A batch member's end as its completion message reports it (the scheduler counts these). */
export interface BatchMemberEnd {
  readonly batchId: string;
  readonly batchIndex: number;
  readonly state: TaskState;
}

/** What the then-task's payload gets, under `batch`. */
export interface BatchSummary {
  readonly batchId: string;
  readonly succeeded: number;
  readonly failed: number;
  readonly cancelled: number;
}

export const shardCount = (total: number): number => Math.ceil(total / BATCH_SHARD_SIZE);
export const shardOfIndex = (index: number): number => Math.floor(index / BATCH_SHARD_SIZE);

/** How many member indexes shard `shard` of a batch of `total` covers. */
export function shardSize(total: number, shard: number): number {
  return Math.max(0, Math.min(BATCH_SHARD_SIZE, total - shard * BATCH_SHARD_SIZE));
}

/**
 * The idempotency key an item without its own gets: a retry of the same batch request (same
 * batch id) names the same task again, so it creates nothing.
 */
export const impliedItemKey = (batchId: string, index: number): string => `${batchId}#${index}`;

/** The key the then-task is created under (tenant + this, like any idempotent submit). */
export const thenTaskKey = (batchId: string): string => `${batchId}#then`;

/** The set a member's end state is counted in; undefined while it has not ended. */
export function countSetOf(state: TaskState): CountSet | undefined {
  switch (state) {
    case 'SUCCEEDED':
      return 'succeeded';
    case 'FAILED':
      return 'failed';
    case 'CANCELLED':
      return 'cancelled';
    default:
      return undefined;
  }
}

/** The then-task's payload: the caller's object with `batch` added (a non-object payload is wrapped). */
export function thenPayload(payload: unknown, summary: BatchSummary): Record<string, unknown> {
  const base =
    payload === undefined
      ? {}
      : typeof payload === 'object' && payload !== null && !Array.isArray(payload)
        ? (payload as Record<string, unknown>)
        : { value: payload };
  return { ...base, batch: summary };
}

/** Which open-batch key a batch is listed under (FNV-1a of its id). */
export function openShardOf(batchId: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < batchId.length; i++) {
    hash ^= batchId.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash % OPEN_BATCH_SHARDS;
}

/**
 * When the sweeper looks at an unfinished batch again after its `sweeps`-th look: a minute, then
 * doubling, at most 30 minutes (it reads the members not yet counted, so not too often).
 */
export function nextSweepDelayMs(sweeps: number): number {
  return Math.min(30 * 60_000, 60_000 * 2 ** Math.min(sweeps, 10));
}

/**
 * A member the sweeper finds never written (the submitting request died before writing it and
 * was not retried) is excluded once the batch is this old: the client's retry window.
 */
export const UNWRITTEN_MEMBER_GRACE_MS = 15 * 60_000;
