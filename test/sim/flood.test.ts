/** The flood scenario, scaled down: it completes and its figures are the run's own. */
import { describe, expect, it } from 'vitest';
import { tierQueue } from '../../runtime/infra/resources.ts';
import type { SimulatedAws } from '../../sim/aws/world.ts';
import { DEFAULT_FLOOD, runFlood } from '../../sim/flood/run.ts';

describe('Flood scenario on the production front end', () => {
  it('prints the JSON figures, computed from what the simulated account recorded', async () => {
    // Prepare
    let world: SimulatedAws | undefined;

    // Act
    const result = await runFlood({
      ...DEFAULT_FLOOD,
      seed: 3,
      tasks: 60,
      quietTenants: 5,
      quietSeconds: 30,
      drainSeconds: 900,
      inspect: (simulated) => {
        world = simulated;
      },
    });

    // Assess: the shape the issue asks for.
    expect(Object.keys(result)).toEqual(
      expect.arrayContaining([
        'tasks',
        'quietWaitSeconds',
        'engineOnlyQuietWaitSeconds',
        'maxReceivesPerMessage',
        'deadLettered',
      ]),
    );
    for (const stats of [result.quietWaitSeconds, result.engineOnlyQuietWaitSeconds]) {
      expect(Object.keys(stats).sort()).toEqual(['max', 'p50', 'p99']);
      expect(stats.p50).toBeLessThanOrEqual(stats.p99);
      expect(stats.p99).toBeLessThanOrEqual(stats.max);
    }
    expect(result.tasks).toBe(60);
    expect(result.quietTasks).toBe(5 * DEFAULT_FLOOD.tasksPerQuietTenant);
    expect(result.quietUndispatched).toBe(0);
    expect(result.quietWaitSeconds.max).toBeLessThanOrEqual(result.simulatedSeconds);

    // The figures are the simulated SQS's own records.
    const tiers = new Set(['critical', 'high', 'normal', 'low'].map((tier) => tierQueue(tier as 'normal').id));
    const tierReceives = world!.sqs.receives.filter((receive) => tiers.has(receive.queueId));
    expect(tierReceives.length).toBeGreaterThan(0);
    expect(result.maxReceivesPerMessage).toBe(Math.max(...tierReceives.map((receive) => receive.receiveCount)));
    expect(result.deadLettered).toBe(world!.sqs.deadLettered.filter((letter) => tiers.has(letter.queueId)).length);
    expect(result.announcementsReceived).toBe(tierReceives.length);
    expect(result.announcementsSent).toBe(world!.sqs.sends.filter((send) => tiers.has(send.queueId)).length);
  });
});
