/** SCHEDULER_FAULTS: nothing without it, the documented fields with it, a clear error otherwise. */

import { GetQueueAttributesCommand } from '@aws-sdk/client-sqs';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it } from 'vitest';
import { schedulerFaultsFromEnvironment } from '../../local/scheduler-faults.ts';
import { ConfigError } from '../../runtime/core/errors.ts';
import { NO_TRANSPORT_FAULTS, uniformLatency } from '../../sim/aws/faults.ts';
import { installVirtualClock } from '../../sim/aws/virtual-clock.ts';
import { SimulatedAws } from '../../sim/aws/world.ts';

describe('SCHEDULER_FAULTS', () => {
  it('injects nothing when unset or empty', () => {
    expect(schedulerFaultsFromEnvironment({})).toBeUndefined();
    expect(schedulerFaultsFromEnvironment({ SCHEDULER_FAULTS: ' ' })).toBeUndefined();
  });

  it('reads the documented example, defaulting what it leaves out', () => {
    const env = {
      SCHEDULER_FAULTS:
        '{"seed":7,"lostResponseRate":0.05,"duplicateDeliveryRate":0.1,"schedulerRestartSeconds":20,"indexLagMs":500}',
    };
    expect(schedulerFaultsFromEnvironment(env)).toEqual({
      seed: 7,
      lostResponseRate: 0.05,
      throttleRate: 0,
      duplicateDeliveryRate: 0.1,
      schedulerRestartSeconds: 20,
      indexLagMs: 500,
    });
  });

  it('refuses unknown fields, rates outside 0..1 and text that is not JSON', () => {
    for (const value of ['{"lostResponseRate":2}', '{"lossRate":0.1}', 'lost=0.1']) {
      expect(() => schedulerFaultsFromEnvironment({ SCHEDULER_FAULTS: value })).toThrow(ConfigError);
    }
  });

  it('names each problem by its key: an unknown top-level field without a dangling dot', () => {
    expect(() => schedulerFaultsFromEnvironment({ SCHEDULER_FAULTS: '{"seed":1,"lossRate":0.1}' })).toThrow(
      'Invalid SCHEDULER_FAULTS:\n  SCHEDULER_FAULTS: Unrecognized key: "lossRate"',
    );
    expect(() => schedulerFaultsFromEnvironment({ SCHEDULER_FAULTS: '{"lostResponseRate":2}' })).toThrow(
      'SCHEDULER_FAULTS.lostResponseRate: Too big',
    );
  });

  it('reads latencyMs per service, and refuses other services, reversed or negative ranges', () => {
    const env = { SCHEDULER_FAULTS: '{"latencyMs":{"dynamodb":[5,15],"sqs":[10,30]}}' };
    expect(schedulerFaultsFromEnvironment(env)?.latencyMs).toEqual({ dynamodb: [5, 15], sqs: [10, 30] });
    expect(schedulerFaultsFromEnvironment({ SCHEDULER_FAULTS: '{"latencyMs":{"sqs":[0,0]}}' })?.latencyMs).toEqual({
      sqs: [0, 0],
    });
    for (const value of [
      '{"latencyMs":{"s3":[1,2]}}',
      '{"latencyMs":{"dynamodb":[15,5]}}',
      '{"latencyMs":{"dynamodb":[-1,5]}}',
      '{"latencyMs":{"dynamodb":[5]}}',
      '{"latencyMs":{"dynamodb":[5,15,20]}}',
      '{"latencyMs":[5,15]}',
      '{"latency":{"dynamodb":[5,15]}}',
    ]) {
      expect(() => schedulerFaultsFromEnvironment({ SCHEDULER_FAULTS: value }), value).toThrow(ConfigError);
    }
  });
});

describe('latencyMs: a uniform latency on every call of a service', () => {
  it('draws each call from its service range and adds none to other services', () => {
    const model = uniformLatency({ dynamodb: [5, 15], sqs: [10, 30] });
    expect(model('dynamodb', 'GetItem', () => 0)).toBe(5);
    expect(model('dynamodb', 'GetItem', () => 0.5)).toBe(10);
    expect(model('sqs', 'ReceiveMessage', () => 0.999)).toBeCloseTo(29.98);
    expect(model('other', 'x', () => 0.5)).toBe(0);
    expect(uniformLatency({ sqs: [10, 30] })('dynamodb', 'PutItem', () => 0.5)).toBe(0);
  });

  it('makes every call through the fault transport take that long (virtual time)', async () => {
    // Prepare: the SDK loads parts of itself on its first calls; let it on real time first.
    const world = new SimulatedAws({
      seed: 3,
      now: () => Date.now(),
      indexLagMs: 0,
      eventualLagMs: 0,
      unprocessedRate: 0,
      sqs: { duplicateDeliveryRate: 0, earlyRedeliveryRate: 0, shortPollMissRate: 0, batchEntryFailureRate: 0 },
    });
    const { clients } = world.component('test', NO_TRANSPORT_FAULTS, {
      latency: uniformLatency({ dynamodb: [5, 15], sqs: [10, 30] }),
    });
    const get = () =>
      clients.documents.send(new GetCommand({ TableName: world.resources.tables.tasks!, Key: { taskId: 'x' } }));
    const attributes = () =>
      clients.sqs.send(new GetQueueAttributesCommand({ QueueUrl: Object.values(world.resources.queueUrls)[0]! }));
    await get();
    await attributes();
    const startMs = Date.parse('2026-01-05T00:00:00.000Z');
    const clock = installVirtualClock({ startMs, seed: 3 });
    const durations: Record<'dynamodb' | 'sqs', number[]> = { dynamodb: [], sqs: [] };
    try {
      // Act
      let done = false;
      const work = (async () => {
        for (let i = 0; i < 20; i++) {
          let at = Date.now();
          await get();
          durations.dynamodb.push(Date.now() - at);
          at = Date.now();
          await attributes();
          durations.sqs.push(Date.now() - at);
        }
      })().finally(() => {
        done = true;
      });
      await clock.runUntil(startMs + 60_000, () => done);
      await work;
    } finally {
      clock.uninstall();
    }

    // Assess: whole virtual milliseconds (each half of a latency is a timer), within the ranges.
    expect(durations.dynamodb).toHaveLength(20);
    for (const ms of durations.dynamodb) expect(ms).toBeGreaterThanOrEqual(5 - 1);
    for (const ms of durations.dynamodb) expect(ms).toBeLessThanOrEqual(15 + 1);
    for (const ms of durations.sqs) expect(ms).toBeGreaterThanOrEqual(10 - 1);
    for (const ms of durations.sqs) expect(ms).toBeLessThanOrEqual(30 + 1);
    expect(new Set(durations.dynamodb).size).toBeGreaterThan(3);
  });
});
