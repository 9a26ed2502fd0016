/**
 * When an announcement of a delayed task becomes visible (runtime/adapters/queues.ts `announce`):
 * with no scheduler running, only the minute tick finds it (runtime/scheduler/activation.ts), so a
 * task delayed beyond the horizon is announced the horizon before it is due, and the tick starts
 * a scheduler in time to hold it; a shorter delay (a retry's backoff) is announced when due.
 */
import type { SendMessageBatchCommand, SQSClient } from '@aws-sdk/client-sqs';
import { describe, expect, it } from 'vitest';
import { ANNOUNCE_AHEAD_SECONDS, MAX_DELAY_SECONDS, QueueClient } from '../../runtime/adapters/queues.ts';
import { createTask } from '../../runtime/core/lifecycle.ts';
import { tierQueue } from '../../runtime/infra/resources.ts';
import { DUE_HORIZON_MS } from '../../runtime/scheduler/activation.ts';
import { taskSpec } from '../helpers/factories.ts';

const NOW = new Date('2026-12-03T10:00:00.000Z');

/** The DelaySeconds each announcement was sent with, by taskId. */
async function delaysOf(dueInSeconds: readonly number[]): Promise<(number | undefined)[]> {
  const sent: { MessageBody?: string | undefined; DelaySeconds?: number | undefined }[] = [];
  const sqs = {
    send: async (command: SendMessageBatchCommand) => {
      sent.push(...(command.input.Entries ?? []));
      return { Successful: (command.input.Entries ?? []).map((entry) => ({ Id: entry.Id })), Failed: [] };
    },
  } as unknown as SQSClient;
  const queues = new QueueClient(sqs, { [tierQueue('normal').id]: 'https://sqs.example/tier-normal' });
  const tasks = dueInSeconds.map((seconds, i) =>
    createTask(`tsk_${i}`, taskSpec({ tenantId: 'a', runAt: new Date(NOW.getTime() + seconds * 1000) }), NOW),
  );
  await queues.announce(tasks, NOW);
  return tasks.map((task) => sent.find((entry) => entry.MessageBody?.includes(task.taskId))?.DelaySeconds);
}

describe('QueueClient.announce: when a delayed task is announced', () => {
  it("the horizon before it is due when its delay is longer; when due otherwise; at most SQS's 15 minutes from now", async () => {
    expect(ANNOUNCE_AHEAD_SECONDS * 1000).toBe(DUE_HORIZON_MS);
    expect(await delaysOf([0, 30, 90, 91, 300, 990, 5_000])).toEqual([
      undefined,
      30,
      90,
      1,
      300 - ANNOUNCE_AHEAD_SECONDS,
      MAX_DELAY_SECONDS,
      MAX_DELAY_SECONDS,
    ]);
  });
});
