/**
 * What task events add per task on AWS (docs/events.md, docs/benchmarks.md), from the stack's
 * shape (lib/task-events.ts) and list prices:
 * - each state change is one PutEvents entry on the bus (one 64 KB chunk: an event is ~300 bytes);
 * - the stream function reads the task table's stream (not billed), a batch of up to 100 records
 *   per invocation (256 MB), one PutEvents call per 10 events;
 * - per webhook: a FIFO SendMessageBatch, ReceiveMessage and DeleteMessageBatch per 10 events, and
 *   a delivery invocation (256 MB) per 10, each POST ~50 ms.
 * A no-op task changes state 4 times (QUEUED, DISPATCHED, RUNNING, SUCCEEDED: test/unit/events.test.ts)
 * and its item is written 4 times (no heartbeats): 4 events, 4 stream records.
 */
import type { UsagePerTask } from './call-counter.ts';

export interface TaskEventsModel {
  readonly eventsPerTask: number;
  readonly streamRecordsPerTask: number;
  /** Webhooks configured (each takes every event). */
  readonly webhooks: number;
}

export const NO_OP_TASK_EVENTS: TaskEventsModel = { eventsPerTask: 4, streamRecordsPerTask: 4, webhooks: 0 };

const STREAM_BATCH = 100;
const FUNCTION_GB = 0.25;
const INVOKE_MS = 5;
const PUT_EVENTS_MS = 20;
const SQS_MS = 12;
const POST_MS = 50;

/** The usage events add to a task (to add to the task's own). */
export function taskEventsUsage(
  model: TaskEventsModel,
): Required<Pick<UsagePerTask, 'eventBridgeEvents' | 'lambdaInvocations' | 'lambdaGbSeconds' | 'sqsFifoRequests'>> {
  const streamInvocations = model.streamRecordsPerTask / STREAM_BATCH;
  const batchesOf10 = model.eventsPerTask / 10;
  const streamMs = streamInvocations * INVOKE_MS + batchesOf10 * PUT_EVENTS_MS + model.webhooks * batchesOf10 * SQS_MS;
  const deliveryInvocations = model.webhooks * batchesOf10;
  const deliveryMs = model.webhooks * (batchesOf10 * (INVOKE_MS + 2 * SQS_MS) + model.eventsPerTask * POST_MS);
  return {
    eventBridgeEvents: model.eventsPerTask,
    lambdaInvocations: streamInvocations + deliveryInvocations,
    lambdaGbSeconds: (FUNCTION_GB * (streamMs + deliveryMs)) / 1000,
    sqsFifoRequests: model.webhooks * 3 * batchesOf10,
  };
}
