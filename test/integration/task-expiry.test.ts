/**
 * The local stand-in for DynamoDB TTL (issue 15): finished tasks older than the retention are
 * deleted, everything else stays, and a task retried since the sweep read it is kept.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTaskExpiry } from '../../local/task-expiry.ts';
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
});
