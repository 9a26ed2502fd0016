/** SCHEDULER_FAULTS: nothing without it, the documented fields with it, a clear error otherwise. */
import { describe, expect, it } from 'vitest';
import { schedulerFaultsFromEnvironment } from '../../local/scheduler-faults.ts';
import { ConfigError } from '../../runtime/core/errors.ts';

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
});
