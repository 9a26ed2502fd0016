/**
 * The idle-month model (bench/idle-cost.ts) reads the template: what a configuration adds to the
 * stack shows up in the idle cost, and the idle stack runs nothing that bills by the hour.
 */
import { describe, expect, it } from 'vitest';
import { IDLE_PRICES, idleCostOf } from '../../bench/idle-cost.ts';
import { defaultConfigInput, synthesize } from './helpers.ts';

type Template = Parameters<typeof idleCostOf>[0];
const costOf = (dashboard: boolean) => {
  const input = defaultConfigInput();
  const { template } = synthesize({ config: { ...input, deploy: { ...input.deploy, dashboard } } });
  return idleCostOf(template.toJSON() as Template);
};
const line = (cost: ReturnType<typeof idleCostOf>, prefix: string) =>
  cost.lines.find((l) => l.item.startsWith(prefix))!.usdPerMonth;

describe('Idle cost model', () => {
  it('counts a dashboard when the configuration asks for one, and no always-on compute either way', () => {
    const without = costOf(false);
    const withDashboard = costOf(true);
    expect(line(withDashboard, 'CloudWatch dashboards') - line(without, 'CloudWatch dashboards')).toBe(
      IDLE_PRICES.dashboardMonth,
    );
    for (const cost of [without, withDashboard]) {
      expect(line(cost, 'NAT gateways')).toBe(0);
      expect(line(cost, 'Fargate services running')).toBe(0);
      // Only the worker queue is long-polled while idle; the dead-letter queues are drained on a schedule.
      expect(cost.lines.map((l) => l.item)).toContain('SQS receives of idle Lambda event source mappings (1)');
      expect(cost.lines.map((l) => l.item)).toContain(
        'EventBridge Scheduler runs (43200 ticks, 8640 dead-letter drains)',
      );
    }
  }, 300_000); // two whole-stack synths
});
