/**
 * The AWS event feed: the task table's stream (NEW_AND_OLD_IMAGES) read by a Lambda
 * (runtime/handlers/task-events.ts). Each INSERT or MODIFY whose images show a state change is
 * one event, built by the same function as the local outbox's (`stateChangeEvent`), so it has
 * the same `id`. DynamoDB Streams keep one item's records in order within its shard, and the
 * Lambda reads a shard in order: a task's events leave in order.
 */
import { unmarshall } from '@aws-sdk/util-dynamodb';
import type { DynamoDBRecord } from 'aws-lambda';
import { stateChangeEvent, type TaskEvent } from '../core/events.ts';
import type { Task } from '../core/task.ts';

export interface StreamChange {
  /** The record's stream sequence number: where a retry resumes (partial batch response). */
  readonly sequenceNumber: string;
  readonly event: TaskEvent;
  /** The item after the change (the new image): what the dependencies' step decides on. */
  readonly task: Task;
}

type Image = NonNullable<NonNullable<DynamoDBRecord['dynamodb']>['NewImage']>;

const itemOf = (image: Image | undefined): Task | undefined =>
  image ? (unmarshall(image as Parameters<typeof unmarshall>[0]) as Task) : undefined;

/** The state-change events of a batch of stream records, in stream order (REMOVEs, TTL's deletes, are none). */
export function changesOfStream(records: readonly DynamoDBRecord[]): StreamChange[] {
  const changes: StreamChange[] = [];
  for (const record of records) {
    if (record.eventName !== 'INSERT' && record.eventName !== 'MODIFY') continue;
    const after = itemOf(record.dynamodb?.NewImage);
    if (!after?.taskId || !after.state) continue;
    const before = record.eventName === 'INSERT' ? undefined : itemOf(record.dynamodb?.OldImage);
    const event = stateChangeEvent(before, after);
    if (event) changes.push({ sequenceNumber: record.dynamodb?.SequenceNumber ?? '', event, task: after });
  }
  return changes;
}
