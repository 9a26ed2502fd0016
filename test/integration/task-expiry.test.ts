/**
 * The local stand-in for DynamoDB TTL (issue 15): finished tasks older than the retention are
 * deleted, everything else stays, and a task retried since the sweep read it is kept.
 */
import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTaskExpiry } from '../../local/task-expiry.ts';
import { cancel } from '../../runtime/core/lifecycle.ts';
import { failedTask, runningTask, submitTask, succeededTask } from '../helpers/factories.ts';
import { startTestServices, type TestServices } from '../helpers/services.ts';

let services: TestServices;

beforeAll(async () => {
  services = await startTestServices();
});
afterAll(async () => {
  await services.stop();
});

describe('Function: startTaskExpiry', () => {
  it('deletes finished tasks once past the retention and keeps waiting, running and recent ones', async () => {
    // Prepare
    const finished = [
      await succeededTask(services),
      await failedTask(services),
      await services.tasks.cancel((await submitTask(services)).taskId),
    ];
    const kept = [await submitTask(services), await runningTask(services)];
    const later = new Date(Date.now() + 2 * 3600_000);
    const expiry = startTaskExpiry({
      documents: services.clients.documents,
      tableName: services.store.tableName,
      retentionSeconds: 3600,
      now: () => later,
    });
    const recent = startTaskExpiry({
      documents: services.clients.documents,
      tableName: services.store.tableName,
      retentionSeconds: 3 * 3600,
      now: () => later,
    });

    // Act
    const deletedByRecent = await recent.sweep();
    const deleted = await expiry.sweep();
    await Promise.all([expiry.stop(), recent.stop()]);

    // Assess
    expect(deletedByRecent).toBe(0);
    expect(deleted).toBeGreaterThanOrEqual(finished.length);
    for (const task of finished) expect(await services.store.get(task.taskId)).toBeUndefined();
    for (const task of kept) expect(await services.store.get(task.taskId)).toBeDefined();
  });

  it('keeps a task retried after it finished', async () => {
    // Prepare
    const failed = await failedTask(services);
    await services.tasks.retry(failed.taskId);
    const expiry = startTaskExpiry({
      documents: services.clients.documents,
      tableName: services.store.tableName,
      retentionSeconds: 1,
      now: () => new Date(Date.now() + 3600_000),
    });

    // Act
    await expiry.sweep();
    await expiry.stop();

    // Assess
    expect(await services.store.get(failed.taskId)).toMatchObject({ state: 'QUEUED' });
  });

  it("deletes an ended batch's records once the batch ended longer ago than the retention, and keeps an open batch's", async () => {
    // Prepare: one batch ended (its members cancelled), one still open
    const batchOf = (tenantId: string) => ({
      tasks: [0, 1].map((n) => ({ tenantId, type: 'demo.echo', payload: { n } })),
    });
    const ended = await services.batches.submit(batchOf('expiry-ended'));
    const open = await services.batches.submit(batchOf('expiry-open'));
    for (const result of ended.results) {
      if ('taskId' in result) await services.store.transition(result.taskId, (task) => cancel(task, new Date()));
    }
    await services.batches.describe(ended.batchId);
    const recordsOf = async (batchId: string) => {
      const page = await services.clients.documents.send(
        new ScanCommand({
          TableName: services.store.tableName,
          FilterExpression: 'begins_with(taskId, :batch)',
          ExpressionAttributeValues: { ':batch': batchId },
        }),
      );
      return page.Items ?? [];
    };
    await expect
      .poll(async () => (await recordsOf(ended.batchId)).every((item) => item.expiresAt !== undefined))
      .toBe(true);
    const openRecords = (await recordsOf(open.batchId)).length;
    const endedRecords = (await recordsOf(ended.batchId)).length;
    const sweepAt = (retentionSeconds: number) =>
      startTaskExpiry({
        documents: services.clients.documents,
        tableName: services.store.tableName,
        retentionSeconds,
        now: () => new Date(Date.now() + 2 * 3600_000),
      });

    // Act: a retention longer than the time since the end, then a shorter one
    const longer = sweepAt(3 * 3600);
    await longer.sweep();
    await longer.stop();
    const keptByLonger = (await recordsOf(ended.batchId)).length;
    const shorter = sweepAt(3600);
    await shorter.sweep();
    await shorter.stop();

    // Assess
    expect(endedRecords).toBeGreaterThan(0);
    expect(keptByLonger).toBe(endedRecords);
    expect(await recordsOf(ended.batchId)).toEqual([]);
    expect((await recordsOf(open.batchId)).length).toBe(openRecords);
    expect(openRecords).toBeGreaterThan(0);
  });
});
