import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../runtime/core/config.ts';
import { ConfigError } from '../../runtime/core/errors.ts';
import { ownsTenant, schedulerLeaseName, shardIndexes, shardOfTenant } from '../../runtime/core/shards.ts';
import {
  COMPLETIONS_QUEUE,
  completionsQueue,
  QUEUES,
  queuesFor,
  TIER_QUEUES,
  tierQueue,
} from '../../runtime/infra/resources.ts';

describe('Function: shardOfTenant', () => {
  it('is 0 for every tenant with one shard', () => {
    for (const tenantId of ['a', 'acme', '__proto__', 'ü']) expect(shardOfTenant(tenantId, 1)).toBe(0);
  });

  it('is a stable hash: the same tenant lands on the same shard in every process (pinned values)', () => {
    // FNV-1a 32-bit of the UTF-16 units, mod the shard count: changing it would move tenants.
    expect([shardOfTenant('acme', 4), shardOfTenant('globex', 4), shardOfTenant('initech', 8)]).toEqual([3, 2, 1]);
    expect(shardOfTenant('a', 2 ** 31)).toBe(0xe40c292c % 2 ** 31);
    expect(shardOfTenant('', 7)).toBe(0x811c9dc5 % 7);
  });

  it('spreads many tenants evenly over the shards', () => {
    for (const shards of [2, 4, 8, 16]) {
      const counts = new Array<number>(shards).fill(0);
      for (let i = 0; i < 16_000; i++) counts[shardOfTenant(`tenant-${i}`, shards)]!++;
      const mean = 16_000 / shards;
      for (const count of counts) expect(Math.abs(count - mean) / mean).toBeLessThan(0.1);
    }
  });

  it('gives each tenant exactly one owner', () => {
    for (let i = 0; i < 200; i++) {
      const owners = shardIndexes(5).filter((shard) => ownsTenant({ shard, shards: 5 }, `t${i}`));
      expect(owners).toHaveLength(1);
    }
  });
});

describe('Per-shard resources', () => {
  it('keeps the names a single scheduler had for shard 0', () => {
    expect(schedulerLeaseName(0)).toBe('scheduler');
    expect(tierQueue('high', 0).id).toBe('tier-high');
    expect(tierQueue('high', 0).deadLetter?.id).toBe('tier-high-dlq');
    expect(completionsQueue(0).id).toBe(COMPLETIONS_QUEUE.id);
    expect(queuesFor(1).map((queue) => queue.id)).toEqual(QUEUES.map((queue) => queue.id));
    expect(TIER_QUEUES.map((queue) => queue.id)).toEqual(['tier-critical', 'tier-high', 'tier-normal', 'tier-low']);
  });

  it('names every further shard its own lease, tier and completions queues', () => {
    expect(schedulerLeaseName(2)).toBe('scheduler-s2');
    expect(tierQueue('low', 3).id).toBe('tier-low-s3');
    expect(tierQueue('low', 3).deadLetter?.id).toBe('tier-low-s3-dlq');
    expect(completionsQueue(3).id).toBe('completions-s3');
    const ids = queuesFor(4).map((queue) => queue.id);
    expect(new Set(ids).size).toBe(ids.length);
    // 4 tiers and a completions queue per shard, the 2 worker pools once.
    expect(ids).toHaveLength(4 * 5 + 2);
  });
});

describe('Configuration: scheduler.shards', () => {
  it('is 1 by default and refuses 0, 17, or more shards than Lambda slots', () => {
    expect(parseConfig({}).scheduler.shards).toBe(1);
    expect(parseConfig({ scheduler: { shards: 16 } }).scheduler.shards).toBe(16);
    expect(() => parseConfig({ scheduler: { shards: 0 } })).toThrow(ConfigError);
    expect(() => parseConfig({ scheduler: { shards: 17 } })).toThrow(/scheduler\.shards/);
    expect(() =>
      parseConfig({
        pools: { lambda: { concurrency: 2 }, fargate: { vcpu: 1, memoryMiB: 2048 } },
        scheduler: { shards: 3 },
      }),
    ).toThrow(/3 shards need at least as many Lambda slots/);
  });
});
