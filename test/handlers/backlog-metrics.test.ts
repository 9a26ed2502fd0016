/**
 * The backlog metrics the scheduler Lambda publishes (issue 27): QueuedTasks per tier, and per
 * tenant and tier (with OldestWaitingSeconds) for the largest tenant-tiers only.
 *
 * Published through the real Powertools Metrics and read back from the EMF lines it writes, as
 * CloudWatch reads them: Powertools publishes a single metric at each addMetric and clears its
 * dimensions then, which a hand-made sink does not (a second metric on one singleMetric lost
 * its tenant and tier).
 */
import { Metrics } from '@aws-lambda-powertools/metrics';
import { describe, expect, it, vi } from 'vitest';
import { publishBacklog } from '../../runtime/handlers/scheduler-report.ts';

interface EmfLine {
  readonly _aws: { CloudWatchMetrics: { Dimensions: string[][]; Metrics: { Name: string }[] }[] };
  readonly [key: string]: unknown;
}

/** Each metric as CloudWatch files it: its name, value and the dimensions (besides `service`) it carries. */
function published(
  lines: readonly EmfLine[],
): { metric: string; value: unknown; dimensions: Record<string, unknown> }[] {
  return lines.flatMap((line) =>
    line._aws.CloudWatchMetrics.flatMap(({ Dimensions, Metrics: metrics }) =>
      metrics.map(({ Name }) => ({
        metric: Name,
        value: line[Name],
        dimensions: Object.fromEntries(
          (Dimensions[0] ?? []).filter((name) => name !== 'service').map((name) => [name, line[name]]),
        ),
      })),
    ),
  );
}

describe('Function: publishBacklog', () => {
  it('publishes the backlog per tier, and per tenant-tier for the largest N, each metric with its dimensions', () => {
    // Prepare
    const metrics = new Metrics({ namespace: 'test', serviceName: 'scheduler' });
    const lines: EmfLine[] = [];
    const write = vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
      const text = String(chunk).trim();
      if (text.startsWith('{"_aws"')) lines.push(JSON.parse(text) as EmfLine);
      return true;
    });
    const log = vi.spyOn(console, 'log').mockImplementation((text: unknown) => {
      if (typeof text === 'string' && text.startsWith('{"_aws"')) lines.push(JSON.parse(text) as EmfLine);
    });

    // Act
    try {
      publishBacklog(
        {
          flood: { normal: { queued: 3000, oldestWaitSeconds: 120.4 } },
          quiet: { normal: { queued: 2, oldestWaitSeconds: 1 }, high: { queued: 1, oldestWaitSeconds: 0.5 } },
          idle: { low: { queued: 0, oldestWaitSeconds: 0 } },
        },
        1,
        metrics,
      );
    } finally {
      write.mockRestore();
      log.mockRestore();
    }

    // Assess
    expect(published(lines)).toEqual([
      { metric: 'QueuedTasks', value: 3002, dimensions: { tier: 'normal' } },
      { metric: 'QueuedTasks', value: 1, dimensions: { tier: 'high' } },
      { metric: 'QueuedTasks', value: 3000, dimensions: { tenant: 'flood', tier: 'normal' } },
      { metric: 'OldestWaitingSeconds', value: 120, dimensions: { tenant: 'flood', tier: 'normal' } },
    ]);
  });
});
