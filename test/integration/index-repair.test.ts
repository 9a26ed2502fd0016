/**
 * dynalite tears a PutItem under kill -9 (index entries first, item last). These tests tear one
 * on purpose, exactly as dynalite would have left it, and check that the next start of the
 * emulators rebuilds the indexes from the items; and, as a control, that without the rebuild
 * the damage is real (a task never written in the queue index, a running one listed as ended).
 * A RUNNING task stays on the lease ledger (its own table, not torn by a task write) either way.
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Level } from 'level';
import { afterAll, describe, expect, it } from 'vitest';
import { markDynaliteStoreClean } from '../../local/index-repair.ts';
import type { LeasedTaskRef } from '../../runtime/adapters/task-store.ts';
import { runningTask } from '../helpers/factories.ts';
import { startTestServices, type TestServices } from '../helpers/services.ts';

type Raw = Record<string, Record<string, unknown>>;
interface DynaliteDb {
  getIndexActions(
    indexes: unknown[],
    existing: Raw | undefined,
    item: Raw | undefined,
    table: Record<string, unknown>,
  ): { puts: { index: string; key: string; item: Raw }[]; deletes: { index: string; key: string }[] };
}
const dynaliteDb = createRequire(import.meta.url)('dynalite/db/index.js') as DynaliteDb;

const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/**
 * What dynalite does for a PutItem of `next` over the stored item of `taskId`, minus the final
 * item write: the process died there. With `newTaskId`, a PutItem of a new item (a submit).
 */
async function tearPutItem(dynamoPath: string, taskId: string, change: (item: Raw) => Raw, newTask = false) {
  const db = new Level<string, unknown>(dynamoPath, { valueEncoding: 'json' });
  await db.open();
  try {
    const table = (await db.get('table~scheduler-tasks')) as Record<string, unknown>;
    let stored: Raw | undefined;
    for await (const item of db.values({ gte: 'item-scheduler-tasks~', lt: 'item-scheduler-tasks~\uffff' })) {
      if ((item as Raw).taskId?.S === taskId) stored = item as Raw;
    }
    if (!stored) throw new Error(`no stored item for ${taskId}`);
    const next = change(structuredClone(stored));
    const actions = dynaliteDb.getIndexActions(
      table.GlobalSecondaryIndexes as unknown[],
      newTask ? undefined : stored,
      next,
      table,
    );
    const key = (index: string, k: string) => `index-global~scheduler-tasks~${index}~${k}`;
    for (const del of actions.deletes) await db.del(key(del.index, del.key));
    for (const put of actions.puts) await db.put(key(put.index, put.key), put.item);
    return actions;
  } finally {
    await db.close();
  }
}

async function activeRefs(services: TestServices, _state: 'RUNNING'): Promise<LeasedTaskRef[]> {
  const refs: LeasedTaskRef[] = [];
  for await (const ref of services.store.listLeased()) refs.push(ref);
  return refs;
}

async function queuedIds(services: TestServices): Promise<string[]> {
  return (await services.store.scanQueued(100)).refs.map((ref) => ref.taskId);
}

/** A torn completion of a RUNNING task, and a torn submit of a task that was never written. */
async function tornStore(): Promise<{ dataDir: string; running: string; ghost: string }> {
  const dataDir = mkdtempSync(join(tmpdir(), 'index-repair-'));
  dirs.push(dataDir);
  const first = await startTestServices({ dataDir });
  const running = await runningTask(first, { tenantId: 'acme' });
  await first.stop();
  expect(existsSync(join(dataDir, 'dynamodb', 'clean-shutdown'))).toBe(true);

  const dynamoPath = join(dataDir, 'dynamodb');
  const completion = await tearPutItem(dynamoPath, running.taskId, (item) => ({
    ...item,
    state: { S: 'SUCCEEDED' },
    tenantState: { S: 'acme#SUCCEEDED' },
  }));
  // The completion added the task to byTenantState (which holds no RUNNING tasks); a leased
  // task is in no index, so it removed nothing.
  expect(completion.deletes).toEqual([]);
  expect(completion.puts.map((p) => p.index).sort()).toEqual(['byTenantState']);
  const ghost = 'ghost-never-written';
  await tearPutItem(
    dynamoPath,
    running.taskId,
    (item) => ({
      ...item,
      taskId: { S: ghost },
      state: { S: 'QUEUED' },
      tenantState: { S: 'acme#QUEUED' },
      queueKey: { S: 'acme#normal' },
      queueSort: { S: `2026-01-01T00:00:00.000Z#${ghost}` },
      listKey: { S: `2026-01-01T00:00:00.000Z#${ghost}` },
    }),
    true,
  );
  // A kill leaves no clean-shutdown marker behind.
  rmSync(join(dynamoPath, 'clean-shutdown'));
  return { dataDir, running: running.taskId, ghost };
}

describe('Function: prepareDynaliteStore (via startEmulators)', () => {
  it('control: a torn write leaves a never-written task in the queue index when nothing repairs it', async () => {
    const { dataDir, running, ghost } = await tornStore();
    markDynaliteStoreClean(join(dataDir, 'dynamodb')); // pretend the last stop was clean

    const services = await startTestServices({ dataDir });
    try {
      expect(services.emulators.indexRepair).toBeUndefined();
      expect((await services.store.get(running))?.state).toBe('RUNNING');
      // Still found by lease recovery: the ledger is not torn by a task write.
      expect((await activeRefs(services, 'RUNNING')).map((r) => r.taskId)).toContain(running);
      expect(await queuedIds(services)).toContain(ghost);
    } finally {
      await services.stop();
    }
  });

  it('after an unclean stop, rebuilds the indexes from the items: the task is found, the ghost gone', async () => {
    const { dataDir, running } = await tornStore();

    const services = await startTestServices({ dataDir });
    try {
      // The completion: byTenantState#SUCCEEDED dropped. The ghost: its byTenantState and
      // byTenantQueue entries dropped. Items read: the task and its ledger page (tables: tasks,
      // control, leases).
      expect(services.emulators.indexRepair).toEqual({ tables: 3, items: 2, entriesFixed: 3 });
      expect(existsSync(join(dataDir, 'dynamodb', 'clean-shutdown'))).toBe(false);
      const runningRefs = await activeRefs(services, 'RUNNING');
      expect(runningRefs.map((r) => r.taskId)).toEqual([running]);
      expect(runningRefs[0]).toMatchObject({ tenantId: 'acme' });
      expect(await queuedIds(services)).toEqual([]);
      // The ghost is in no listing: only the one real item is.
      const all = await services.tasks.list({ tenantId: 'acme', limit: 10 });
      expect(all.items.map((t) => t.taskId)).toEqual([running]);
      const byState = await services.tasks.list({ tenantId: 'acme', state: 'RUNNING', limit: 10 });
      expect(byState.items.map((t) => t.taskId)).toEqual([running]);
      expect((await services.tasks.list({ tenantId: 'acme', state: 'SUCCEEDED', limit: 10 })).items).toEqual([]);
    } finally {
      await services.stop();
    }

    // A clean stop is trusted: the next start does not rebuild.
    const again = await startTestServices({ dataDir });
    try {
      expect(again.emulators.indexRepair).toBeUndefined();
      expect((await activeRefs(again, 'RUNNING')).map((r) => r.taskId)).toEqual([running]);
    } finally {
      await again.stop();
    }
  });

  it('adds an index the code defines to a store written before it existed, built from the items', async () => {
    // Prepare: a store with a QUEUED task, then made to look as an older version wrote it
    // (no byTenantQueue in the table's description, no entries of it).
    const dataDir = mkdtempSync(join(tmpdir(), 'index-add-'));
    dirs.push(dataDir);
    const first = await startTestServices({ dataDir });
    const { task } = await first.tasks.submit({ tenantId: 'old-store', type: 'demo.echo', payload: {} });
    await first.stop();
    const db = new Level<string, unknown>(join(dataDir, 'dynamodb'), { valueEncoding: 'json' });
    await db.open();
    const table = (await db.get('table~scheduler-tasks')) as { GlobalSecondaryIndexes: { IndexName: string }[] };
    table.GlobalSecondaryIndexes = table.GlobalSecondaryIndexes.filter((i) => i.IndexName !== 'byTenantQueue');
    await db.put('table~scheduler-tasks', table);
    const prefix = 'index-global~scheduler-tasks~byTenantQueue~';
    for await (const key of db.keys({ gte: prefix, lt: `${prefix}\uffff` })) await db.del(key);
    await db.close();

    // Act
    const services = await startTestServices({ dataDir });
    try {
      // Assess: the index exists again, with the queued task in it.
      const due = await services.store.listDue('old-store', task.priority, Date.now(), 10);
      expect(due.refs.map((ref) => ref.taskId)).toEqual([task.taskId]);
      expect(services.emulators.indexRepair?.entriesFixed).toBeGreaterThanOrEqual(1);
    } finally {
      await services.stop();
    }
  });
});
