/**
 * The backlog metrics the scheduler Lambda publishes (issue 27): QueuedTasks per tier, and per
 * tenant and tier (with OldestWaitingSeconds) for the largest tenant-tiers only.
 */
import { describe, expect, it, vi } from 'vitest';
import { metrics } from '../../runtime/handlers/observability.ts';
import { publishBacklog } from '../../runtime/handlers/scheduler-report.ts';

describe('Function: publishBacklog', () => {
  it('publishes the backlog per tier, and per tenant-tier for the largest N', () => {
    // Prepare
    const published: { dimensions: Record<string, string>; metrics: [string, number][] }[] = [];
    const spy = vi.spyOn(metrics, 'singleMetric').mockImplementation(() => {
      const entry = { dimensions: {} as Record<string, string>, metrics: [] as [string, number][] };
      published.push(entry);
      return {
        addDimension: (name: string, value: string) => {
          entry.dimensions[name] = value;
        },
        addDimensions: (dimensions: Record<string, string>) => Object.assign(entry.dimensions, dimensions),
        addMetric: (name: string, _unit: string, value: number) => entry.metrics.push([name, value]),
      } as unknown as ReturnType<typeof metrics.singleMetric>;
    });

    // Act
    publishBacklog(
      {
        flood: { normal: { queued: 3000, oldestWaitSeconds: 120.4 } },
        quiet: { normal: { queued: 2, oldestWaitSeconds: 1 }, high: { queued: 1, oldestWaitSeconds: 0.5 } },
        idle: { low: { queued: 0, oldestWaitSeconds: 0 } },
      },
      1,
      metrics,
    );
    spy.mockRestore();

    // Assess
    expect(published).toEqual([
      { dimensions: { tier: 'normal' }, metrics: [['QueuedTasks', 3002]] },
      { dimensions: { tier: 'high' }, metrics: [['QueuedTasks', 1]] },
      {
        dimensions: { tenant: 'flood', tier: 'normal' },
        metrics: [
          ['QueuedTasks', 3000],
          ['OldestWaitingSeconds', 120],
        ],
      },
    ]);
  });
});
