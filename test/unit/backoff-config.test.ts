import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { backoffMs } from '../../runtime/core/backoff.ts';
import { parseConfig } from '../../runtime/core/config.ts';
import { ConfigError } from '../../runtime/core/errors.ts';

describe('Function: backoffMs', () => {
  const options = { baseDelaySeconds: 2, maxDelaySeconds: 900 };

  it.each([
    [1, 2_000],
    [2, 4_000],
    [3, 8_000],
    [10, 900_000],
    [1000, 900_000],
  ])('attempt %i waits at most %i ms (full jitter)', (attempt, ceiling) => {
    expect(backoffMs(attempt, options, () => 0.999_999)).toBe(Math.floor(0.999_999 * ceiling));
    expect(backoffMs(attempt, options, () => 0)).toBe(0);
  });

  it('stays within [0, max] for any attempt and random draw', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 10_000 }), fc.double({ min: 0, max: 0.999_999, noNaN: true }), (a, r) => {
        const delay = backoffMs(a, options, () => r);
        return delay >= 0 && delay <= 900_000 && Number.isFinite(delay);
      }),
    );
  });
});

describe('Function: parseConfig', () => {
  it('fills every default from an empty file', () => {
    const config = parseConfig({});
    expect(config).toMatchObject({
      policy: 'fair-share',
      agingSeconds: 300,
      pools: { lambda: { concurrency: 50 }, fargate: { vcpu: 16, memoryMiB: 32_768 } },
      tenantDefaults: { weight: 1, maxConcurrency: 10 },
    });
  });

  it.each([
    [{ policy: 'round-robin' }, 'policy:'],
    [{ agingSeconds: 0 }, 'agingSeconds:'],
    [{ pools: { lambda: { concurrency: 0 }, fargate: { vcpu: 1, memoryMiB: 1024 } } }, 'pools.lambda.concurrency:'],
    [{ tenantDefaults: { weight: -1, maxConcurrency: 1 } }, 'tenantDefaults.weight:'],
    [{ tenants: { a: { weight: 0 } } }, 'tenants.a.weight:'],
    [{ surprise: true }, '(root):'],
    [{ schedules: [{ name: 'n', cron: '0 2 * * *', task: { tenantId: 'a', type: 't' } }] }, 'schedules.0.cron:'],
    [{ retry: { baseDelaySeconds: 10, maxDelaySeconds: 1 } }, 'retry.maxDelaySeconds'],
  ])('refuses %j naming the key', (raw, key) => {
    expect(() => parseConfig(raw, 'test.json')).toThrow(ConfigError);
    expect(() => parseConfig(raw, 'test.json')).toThrow(key);
  });
});
