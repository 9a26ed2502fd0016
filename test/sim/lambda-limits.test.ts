/**
 * Lambda's limits in the simulation (sim/aws/lambda.ts): the account's concurrency shared by every
 * function, and an SQS event source mapping's scaling (5 batches at first, up to 300 more a
 * minute while messages wait, at most MaximumConcurrency, back to 5 when the queue is empty).
 */
import { describe, expect, it } from 'vitest';
import { LambdaAccount, nextMappingConcurrency, SqsEventSourceMapping } from '../../sim/aws/lambda.ts';

describe('Class: LambdaAccount', () => {
  it('runs at most its limit at once and counts what it refused', () => {
    const account = new LambdaAccount(10);
    for (let i = 0; i < 10; i++) expect(account.tryAcquire()).toBe(true);
    expect(account.tryAcquire()).toBe(false);
    account.release();
    expect(account.tryAcquire()).toBe(true);
    expect(account.peak).toBe(10);
    expect(account.throttles).toBe(1);
    for (let i = 0; i < 10; i++) account.release();
    expect(() => account.release()).toThrow(/released more/);
  });
});

describe('nextMappingConcurrency', () => {
  it('grows 300 a minute while messages wait, from 5, up to the maximum, and falls back to 5', () => {
    // A minute of one-second steps with messages waiting: 5 + 60 × 5 = 305.
    let current = 5;
    for (let second = 0; second < 60; second++) {
      current = nextMappingConcurrency({ current, waiting: 1, maximum: 1000, stepMs: 1000 });
    }
    expect(current).toBe(305);
    // Three more minutes would add 900: capped at the maximum, 1,000.
    for (let second = 0; second < 180; second++) {
      current = nextMappingConcurrency({ current, waiting: 1, maximum: 1000, stepMs: 1000 });
    }
    expect(current).toBe(1000);
    expect(nextMappingConcurrency({ current, waiting: 1, maximum: 1000, stepMs: 1000 })).toBe(1000);
    // Empty: back to 5 (or the maximum, when it is below 5).
    expect(nextMappingConcurrency({ current, waiting: 0, maximum: 1000, stepMs: 1000 })).toBe(5);
    expect(nextMappingConcurrency({ current: 2, waiting: 0, maximum: 2, stepMs: 1000 })).toBe(2);
    expect(nextMappingConcurrency({ current: 2, waiting: 9, maximum: 2, stepMs: 1000 })).toBe(2);
  });
});

describe('Class: SqsEventSourceMapping', () => {
  /** A mapping over a fake queue; environments end when retired or "killed". */
  function mapping(options: { maximum: number; account: LambdaAccount; waiting: () => number }) {
    const environments: { stopped: boolean; end: () => void }[] = [];
    const esm = new SqsEventSourceMapping({
      account: options.account,
      maximumConcurrency: options.maximum,
      waiting: options.waiting,
      start: () => {
        let end = () => {};
        const ended = new Promise<void>((resolve) => {
          end = resolve;
        });
        const environment = { stopped: false, end };
        environments.push(environment);
        return {
          stop: () => {
            environment.stopped = true;
            end();
          },
          ended,
        };
      },
    });
    return { esm, environments };
  }
  const settle = () => new Promise((resolve) => setImmediate(resolve));

  it('starts 5 environments, adds 5 a second while messages wait, within the account and its maximum', async () => {
    // Prepare: an account of 20, 3 of them taken by other functions; MaximumConcurrency 100.
    const account = new LambdaAccount(20);
    for (let i = 0; i < 3; i++) account.tryAcquire();
    let waiting = 50;
    const { esm } = mapping({ maximum: 100, account, waiting: () => waiting });

    // Act / Assess
    esm.step(0);
    expect(esm.running).toBe(5);
    esm.step(1000);
    expect(esm.running).toBe(10);
    esm.step(1000);
    esm.step(1000);
    // 20 wanted, 17 free in the account
    expect(esm.running).toBe(17);
    expect(account.throttles).toBeGreaterThan(0);
    // The queue empties: back to 5, the retired environments' units freed once they ended
    waiting = 0;
    esm.step(1000);
    expect(esm.running).toBe(5);
    await settle();
    expect(account.inUse).toBe(3 + 5);
  });

  it('replaces an environment that died at its next step', async () => {
    const account = new LambdaAccount(1000);
    const { esm, environments } = mapping({ maximum: 6, account, waiting: () => 1 });
    esm.step(0);
    esm.step(1000);
    expect(esm.running).toBe(6);
    environments[0]!.end();
    await settle();
    expect(esm.running).toBe(5);
    esm.step(1000);
    expect(esm.running).toBe(6);
    expect(esm.peak).toBe(6);
    expect(account.inUse).toBe(6);
  });
});
