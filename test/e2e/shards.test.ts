/**
 * Scheduler shards live on the local runtime over HTTP (`scheduler.shards`: 3): every task of 9
 * tenants runs exactly once, no tenant ever runs more than its quota and the pool never more
 * than its slots, though three schedulers dispatch side by side, each for its own tenants.
 * Assertions are on what the tasks recorded and DynamoDB holds, never on timing.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { consoleLogger } from '../../local/console-logger.ts';
import { type LocalServer, startLocalServer } from '../../local/server.ts';
import { parseConfig } from '../../runtime/core/config.ts';
import { schedulerLeaseName, shardIndexes, shardOfTenant } from '../../runtime/core/shards.ts';
import { defineTaskType, TaskTypeRegistry } from '../../runtime/task-types/define.ts';
import { apiOf } from '../helpers/live-server.ts';

const SHARDS = 3;
const SLOTS = 6;
const QUOTA = 2;
const runs = new Map<string, number>();
const runningOf = new Map<string, number>();
let running = 0;
let mostRunning = 0;
let mostOfOneTenant = 0;
const counted = defineTaskType({
  type: 'test.counted',
  description: 'Counts how many run at once, in all and per tenant.',
  payload: z.strictObject({ ms: z.number().int().min(0).max(1000) }),
  async handler({ ms }, ctx) {
    running++;
    const ofTenant = (runningOf.get(ctx.tenantId) ?? 0) + 1;
    runningOf.set(ctx.tenantId, ofTenant);
    mostRunning = Math.max(mostRunning, running);
    mostOfOneTenant = Math.max(mostOfOneTenant, ofTenant);
    await sleep(ms);
    running--;
    runningOf.set(ctx.tenantId, (runningOf.get(ctx.tenantId) ?? 1) - 1);
    runs.set(ctx.taskId, (runs.get(ctx.taskId) ?? 0) + 1);
    return {};
  },
});

let server: LocalServer;
const api = apiOf(() => server.url);

beforeAll(async () => {
  server = await startLocalServer({
    config: parseConfig({
      pools: { lambda: { concurrency: SLOTS }, fargate: { vcpu: 1, memoryMiB: 2048 } },
      tenantDefaults: { weight: 1, maxConcurrency: QUOTA },
      scheduler: { shards: SHARDS },
    }),
    port: 0,
    examples: false,
    summaryEverySeconds: 0,
    logger: consoleLogger({ quiet: true }),
    registry: new TaskTypeRegistry([counted]),
  });
});
afterAll(async () => {
  await server?.stop();
});

describe('Scheduler shards (local runtime, live)', () => {
  it('runs every task once within each quota and the pool, three schedulers dispatching', async () => {
    const tenants = Array.from({ length: 9 }, (_, i) => `shard-tenant-${i}`);
    // The tenants spread over every shard.
    expect(new Set(tenants.map((tenantId) => shardOfTenant(tenantId, SHARDS))).size).toBe(SHARDS);
    let seenNow: string[] = [];
    const ids: string[] = [];
    for (const tenantId of tenants) {
      for (let i = 0; i < 4; i++) {
        const { status, body } = await api<{ taskId: string }>('POST', '/v1/tasks', {
          tenantId,
          type: 'test.counted',
          payload: { ms: 150 },
          runtime: 'lambda',
        });
        expect(status).toBe(202);
        ids.push(body.taskId);
      }
    }
    const ended = async () => {
      const states = await Promise.all(
        ids.map(async (taskId) => (await api<{ state: string }>('GET', `/v1/tasks/${taskId}`)).body.state),
      );
      return states.every((state) => state === 'SUCCEEDED');
    };
    for (let polls = 0; !(await ended()); polls++) {
      if (polls > 600) throw new Error('tasks did not all succeed within 5 minutes');
      await sleep(500);
    }
    expect(ids.map((taskId) => runs.get(taskId))).toEqual(ids.map(() => 1));
    expect(mostOfOneTenant).toBeLessThanOrEqual(QUOTA);
    expect(mostRunning).toBeLessThanOrEqual(SLOTS);
    // Every shard's scheduler took its own lease.
    const leases = await Promise.all(
      shardIndexes(SHARDS).map((shard) => server.runtime.services.control.getLease(schedulerLeaseName(shard))),
    );
    expect(leases.every((lease) => lease !== undefined)).toBe(true);
    // The status page merges every shard's snapshot: the tenants whose work just ended, of all shards.
    const seen = async () =>
      (await api<{ tenants: { tenantId: string }[] }>('GET', '/v1/status')).body.tenants.map((t) => t.tenantId);
    for (let polls = 0; tenants.some((tenantId) => !seenNow.includes(tenantId)); polls++) {
      if (polls > 60) throw new Error(`status shows ${seenNow.join(', ')}, not every tenant`);
      await sleep(500);
      seenNow = await seen();
    }
  });
});
