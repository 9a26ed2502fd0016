/**
 * Task events: every state change of a task is one event, delivered at least once (docs/events.md).
 * Pure: the event is a function of the item before and after the write, so the local outbox
 * (recorded in the same conditional write) and the AWS feed (built from the table's stream images)
 * produce the same event, with the same `id`, for the same change.
 *
 * `sequence` is the task's own count of state changes (`eventSequence` on the item): 1 for the
 * QUEUED of its creation, +1 at every write that changes `state`, unchanged by writes that do not
 * (lease renewals, a cancel request on a running task). So it is strictly increasing across a
 * task's state changes and has no gaps: a consumer orders by it, and a gap means an event is still
 * on its way. `version` is not used: it moves on every write, heartbeats included.
 */
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import type { Task, TaskEvent, TaskState } from './task.ts';

export const TASK_EVENT_TYPE = 'task.state_changed';
/** EventBridge `source` and `detail-type` of the events on AWS. */
export const TASK_EVENT_SOURCE = 'task-scheduler';
export const TASK_EVENT_DETAIL_TYPE = 'Task State Change';
/** The webhook request header carrying the body's signature. */
export const SIGNATURE_HEADER = 'x-signature';

export type { TaskEvent };

/**
 * The id of a task's `sequence`-th change: deterministic, so every delivery of one change (and
 * both feeds) carry the same id. `submittedAt` tells apart a task re-created with the same
 * idempotent id after the first expired.
 */
export function taskEventId(taskId: string, submittedAt: string, sequence: number): string {
  const digest = createHash('sha256').update(`${taskId}\u0000${submittedAt}\u0000${sequence}`).digest('base64url');
  return `evt_${digest.slice(0, 26)}`;
}

/**
 * The event of a write from `before` (undefined: the task's creation) to `after`, or undefined
 * when the write changed no state. Items written before events existed carry no
 * `eventSequence`: their first change after the upgrade is numbered from there (1, 2, ...).
 */
export function stateChangeEvent(
  before: Pick<Task, 'state' | 'eventSequence'> | undefined,
  after: Task,
): TaskEvent | undefined {
  if (before && before.state === after.state) return undefined;
  if (before && (after.eventSequence ?? 0) <= (before.eventSequence ?? 0)) return undefined;
  const sequence = after.eventSequence ?? 1;
  return {
    id: taskEventId(after.taskId, after.submittedAt, sequence),
    type: TASK_EVENT_TYPE,
    time: after.stateChangedAt ?? after.submittedAt,
    taskId: after.taskId,
    tenantId: after.tenantId,
    taskType: after.type,
    state: after.state,
    previousState: before?.state ?? null,
    attempt: after.attempts,
    sequence,
  };
}

/** Which events a webhook takes: each given list must contain the event's value. */
export interface WebhookFilters {
  readonly tenantId?: readonly string[] | undefined;
  readonly taskType?: readonly string[] | undefined;
  readonly state?: readonly TaskState[] | undefined;
}

export function matchesFilters(filters: WebhookFilters | undefined, event: TaskEvent): boolean {
  if (!filters) return true;
  if (filters.tenantId && !filters.tenantId.includes(event.tenantId)) return false;
  if (filters.taskType && !filters.taskType.includes(event.taskType)) return false;
  if (filters.state && !filters.state.includes(event.state)) return false;
  return true;
}

/** `sha256=<hex HMAC-SHA256 of the raw body with the secret>`: the `x-signature` header's value. */
export function signatureOf(secret: string, rawBody: string | Uint8Array): string {
  return `sha256=${createHmac('sha256', secret).update(rawBody).digest('hex')}`;
}

/** A receiver's check of `x-signature`, in constant time. */
export function verifySignature(secret: string, rawBody: string | Uint8Array, header: string | undefined): boolean {
  if (!header) return false;
  const expected = Buffer.from(signatureOf(secret, rawBody));
  const given = Buffer.from(header);
  return expected.length === given.length && timingSafeEqual(expected, given);
}

/**
 * Exponential backoff with jitter for a webhook delivery's `failures`-th retry: a random wait
 * between half and all of 2^failures seconds, capped at 5 minutes (never sooner than half: a
 * webhook that is down is not called again at once). Delivery goes on until it succeeds.
 */
export function webhookRetryDelayMs(failures: number, random: () => number = Math.random): number {
  const cap = Math.min(300_000, 1000 * 2 ** Math.min(failures, 20));
  return Math.round(cap / 2 + (random() * cap) / 2);
}
