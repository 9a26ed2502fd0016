import { describe, expect, it } from 'vitest';
import { scheduledSubmitInput } from '../../runtime/app/scheduled.ts';
import { parseConfig } from '../../runtime/core/config.ts';
import { CronSyntaxError, parseAwsCron } from '../../runtime/core/cron.ts';

describe('Function: parseAwsCron', () => {
  it.each([
    ['cron(0 2 * * ? *)', 'UTC', '2026-11-29T12:00:00Z', '2026-11-30T02:00:00.000Z'],
    ['cron(0 2 * * ? *)', 'Europe/Paris', '2026-11-29T12:00:00Z', '2026-11-30T01:00:00.000Z'],
    ['cron(0 2 * * ? *)', 'Europe/Paris', '2026-07-01T12:00:00Z', '2026-07-02T00:00:00.000Z'],
    // AWS weekdays are 1 (SUN) … 7 (SAT): 2-6 is Monday to Friday. 2026-11-28 is a Saturday.
    ['cron(30 9 ? * 2-6 *)', 'UTC', '2026-11-28T00:00:00Z', '2026-11-30T09:30:00.000Z'],
    ['cron(30 9 ? * MON-FRI *)', 'UTC', '2026-11-28T00:00:00Z', '2026-11-30T09:30:00.000Z'],
    ['cron(0 0 ? * 1 *)', 'UTC', '2026-11-28T00:00:00Z', '2026-11-29T00:00:00.000Z'],
    ['cron(0/15 * * * ? *)', 'UTC', '2026-11-29T12:07:00Z', '2026-11-29T12:15:00.000Z'],
    ['cron(0 12 1 1 ? 2028)', 'UTC', '2026-11-29T12:00:00Z', '2028-01-01T12:00:00.000Z'],
  ])('%s in %s after %s fires at %s', (expression, timezone, after, expected) => {
    expect(parseAwsCron(expression, timezone).nextAfter(new Date(after))?.toISOString()).toBe(expected);
  });

  it('has no next firing once its years are over', () => {
    expect(parseAwsCron('cron(0 12 1 1 ? 2025)').nextAfter(new Date('2026-01-01T00:00:00Z'))).toBeUndefined();
  });

  it.each([
    ['0 2 * * ?', /expected cron\(/],
    ['cron(0 2 * * ?)', /expected 6 fields/],
    ['cron(0 2 * * 1 *)', /must be "\?"/],
    ['cron(0 2 ? * 9 *)', /outside 1-7/],
    ['cron(0 25 * * ? *)', /Invalid schedule expression/],
    ['cron(0 2 * * ? 20x6)', /year field/],
  ])('refuses %s', (expression, message) => {
    expect(() => parseAwsCron(expression)).toThrow(CronSyntaxError);
    expect(() => parseAwsCron(expression)).toThrow(message);
  });

  it('is checked when the configuration is parsed, with the schedule named', () => {
    const schedule = (cron: string, timezone = 'UTC') => ({
      name: 'nightly',
      cron,
      timezone,
      task: { tenantId: 'finance', type: 'demo.echo' },
    });
    expect(() => parseConfig({ schedules: [schedule('cron(0 25 * * ? *)')] })).toThrow(/schedules\.0\.cron: /);
    expect(() => parseConfig({ schedules: [schedule('cron(0 2 * * ? *)', 'Mars/Olympus')] })).toThrow(
      /unknown time zone/,
    );
    expect(() => parseConfig({ schedules: [schedule('cron(0 2 * * ? *)'), schedule('cron(0 3 * * ? *)')] })).toThrow(
      /used twice/,
    );
  });
});

describe('Function: scheduledSubmitInput', () => {
  it('derives one idempotency key per firing and fills in the scheduled date', () => {
    const firing = {
      scheduleName: 'nightly-reconciliation',
      scheduledTime: '2026-11-30T02:00:00Z',
      task: { tenantId: 'finance', type: 'examples.payments-reconciliation', payload: { night: '{{date}}' } },
    };
    const input = scheduledSubmitInput(firing);
    expect(input).toMatchObject({
      tenantId: 'finance',
      idempotencyKey: 'schedule:nightly-reconciliation:2026-11-30T02:00',
      payload: { night: '2026-11-30' },
    });
    // A redelivery of the same firing seconds later maps to the same key.
    expect(scheduledSubmitInput({ ...firing, scheduledTime: '2026-11-30T02:00:30Z' }).idempotencyKey).toBe(
      input.idempotencyKey,
    );
  });

  it("fills in the scheduled date in the schedule's time zone, where the firing's day may differ from UTC's", () => {
    // 00:30 on Friday 4 December in Paris is 23:30 UTC on Thursday 3 December. Before: {{date}}
    // was the UTC date, so a Paris nightly job at 00:30 with offsetDays -1 reconciled the night
    // before the one just ended, and a MON 00:30 Paris schedule's weekStart was a Sunday.
    const firing = {
      scheduleName: 'paris-nightly',
      scheduledTime: '2026-12-03T23:30:00.000Z',
      timezone: 'Europe/Paris',
      task: { tenantId: 'finance', type: 'examples.payments-reconciliation', payload: { night: '{{date}}' } },
    };
    expect(scheduledSubmitInput(firing)).toMatchObject({
      payload: { night: '2026-12-04' },
      // The key names the instant (UTC minute), as before.
      idempotencyKey: 'schedule:paris-nightly:2026-12-03T23:30',
    });
    // West of UTC: 20:00 on 3 December in New York is 01:00 UTC on 4 December.
    expect(
      scheduledSubmitInput({ ...firing, timezone: 'America/New_York', scheduledTime: '2026-12-04T01:00:00Z' }).payload,
    ).toEqual({ night: '2026-12-03' });
    // No time zone: UTC.
    expect(scheduledSubmitInput({ ...firing, timezone: undefined }).payload).toEqual({ night: '2026-12-03' });
  });
});
