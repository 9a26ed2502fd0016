/**
 * The stream function's PutEvents step (runtime/handlers/task-events.ts `putOnBus`): entries
 * EventBridge failed are sent again, backing off between rounds, and a chunk still failing after
 * PUT_EVENTS_ROUNDS is thrown (the record is retried by Lambda from there).
 */
import type { PutEventsCommand, PutEventsCommandOutput } from '@aws-sdk/client-eventbridge';
import { describe, expect, it } from 'vitest';
import type { TaskEvent } from '../../runtime/core/events.ts';
import type { Task } from '../../runtime/core/task.ts';
import type { StreamChange } from '../../runtime/events/stream.ts';
import { PUT_EVENTS_ROUNDS, putOnBus } from '../../runtime/handlers/task-events.ts';

const change = (i: number): StreamChange => {
  const event = { id: `evt_${i}`, taskId: `tsk_${i}`, time: '2026-12-03T10:00:00.000Z' } as unknown as TaskEvent;
  return { sequenceNumber: String(i), event, task: { taskId: `tsk_${i}` } as Task };
};

/** A PutEvents that throttles the events of changes `failing` for the first `rounds` calls. */
function throttling(rounds: number, failing: readonly number[]) {
  const failingIds = new Set(failing.map((i) => `evt_${i}`));
  const calls: number[] = [];
  const send = async (command: PutEventsCommand): Promise<PutEventsCommandOutput> => {
    const entries = command.input.Entries ?? [];
    calls.push(entries.length);
    const throttled = calls.length <= rounds;
    return {
      $metadata: {},
      FailedEntryCount: throttled ? failing.length : 0, // (not read: each entry says)
      Entries: entries.map((entry, i) =>
        throttled && failingIds.has(JSON.parse(entry.Detail ?? '{}').id)
          ? { ErrorCode: 'ThrottlingException' }
          : { EventId: `e${i}` },
      ),
    };
  };
  return { calls, send };
}

describe('putOnBus', () => {
  it('sends the entries EventBridge failed again, after a pause that grows each round (an immediate retry meets the same throttle)', async () => {
    // Prepare: 3 of 10 entries throttled twice
    const { calls, send } = throttling(2, [1, 4, 7]);
    const pauses: number[] = [];

    // Act
    await putOnBus(
      Array.from({ length: 10 }, (_, i) => change(i)),
      'bus',
      send,
      async (ms) => pauses.push(ms),
    );

    // Assess: all 10, then the 3 twice; a pause before each retry, the second at least as long as the first's floor doubled
    expect(calls).toEqual([10, 3, 3]);
    expect(pauses).toHaveLength(2);
    expect(pauses[0]).toBeGreaterThanOrEqual(100);
    expect(pauses[0]).toBeLessThan(200);
    expect(pauses[1]).toBeGreaterThanOrEqual(200);
    expect(pauses[1]).toBeLessThan(400);
  });

  it('throws when entries still fail after its rounds, so that Lambda retries the record', async () => {
    const { calls, send } = throttling(PUT_EVENTS_ROUNDS, [1]);
    await expect(putOnBus([change(1), change(2)], 'bus', send, async () => {})).rejects.toThrow(
      `PutEvents refused 1 entries ${PUT_EVENTS_ROUNDS} times`,
    );
    expect(calls).toEqual([2, 1, 1]);
  });

  it('sends nothing without a bus', async () => {
    const { calls, send } = throttling(0, []);
    await putOnBus([change(1)], undefined, send, async () => {});
    expect(calls).toEqual([]);
  });
});
