/**
 * Finished tasks leave nothing behind in the local runtime once the retention has passed
 * (issue 15): the items, their index entries and the messages that carried them are gone.
 * The tasks run through the whole runtime on a data folder; the sweep is then run on the same
 * folder with a clock past the retention, so no wall-clock wait is involved.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, describe, expect, it } from 'vitest';
import { consoleLogger } from '../../local/console-logger.ts';
import { startLocalRuntime } from '../../local/runtime.ts';
import { LOCAL_RETENTION_SECONDS, startTaskExpiry } from '../../local/task-expiry.ts';
import { parseConfig } from '../../runtime/core/config.ts';
import { snapshotWrites, startTestServices } from '../helpers/services.ts';

const dataDir = mkdtempSync(join(tmpdir(), 'local-expiry-'));
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

describe('Local runtime: task expiry', () => {
  it('after the retention, finished tasks are gone from the table, its indexes and the queues', async () => {
    // Prepare: run tasks to the end, then stop the runtime (its own sweep keeps them for an hour).
    const count = 5;
    let finished = 0;
    let allFinished!: () => void;
    const done = new Promise<void>((resolve) => {
      allFinished = resolve;
    });
    const runtime = await startLocalRuntime({
      config: parseConfig({}),
      dataDir,
      summaryEverySeconds: 0,
      logger: consoleLogger({ quiet: true }),
      idleStopMs: 500,
      onOutcome: (outcome) => {
        if (outcome.kind === 'finished' && ++finished === count) allFinished();
      },
    });
    const taskIds: string[] = [];
    for (let n = 0; n < count; n++) {
      const { task } = await runtime.services.tasks.submit({ tenantId: 'acme', type: 'demo.echo', payload: { n } });
      taskIds.push(task.taskId);
    }
    await done;
    // The scheduler reads the workers' completion reports before it stops for want of work.
    while (runtime.schedulerRunning()) await new Promise((resolve) => setTimeout(resolve, 50));
    await runtime.stop();
    const services = await startTestServices({ dataDir });
    const before = await snapshotWrites(services);
    const expiry = startTaskExpiry({
      documents: services.clients.documents,
      tableName: services.store.tableName,
      retentionSeconds: LOCAL_RETENTION_SECONDS,
      now: () => new Date(Date.now() + (LOCAL_RETENTION_SECONDS + 60) * 1000),
    });

    // Act
    const deleted = await expiry.sweep();
    await expiry.stop();

    // Assess
    const after = await snapshotWrites(services);
    const listed = await services.clients.documents.send(
      // Every index entry of the tenant's (all of them ended: `byTenantState`, sharded).
      new ScanCommand({
        TableName: services.store.tableName,
        IndexName: 'byTenantState',
        FilterExpression: 'begins_with(tenantState, :tenant)',
        ExpressionAttributeValues: { ':tenant': 'acme#' },
      }),
    );
    const remaining = await Promise.all(taskIds.map((taskId) => services.store.get(taskId)));
    await services.stop();
    expect(before.tasks).toBe(count);
    expect(deleted).toBe(count);
    expect(after.tasks).toBe(0);
    expect(listed.Count).toBe(0);
    expect(remaining.filter((task) => task !== undefined)).toEqual([]);
    expect(after.queues).toEqual(Object.fromEntries(Object.keys(after.queues).map((queue) => [queue, 0])));
  }, 60_000);
});
