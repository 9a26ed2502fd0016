/**
 * End to end: the local runtime's Lambda pool runs each task in its memory class, as deployed
 * (the entry class runs what fits it and hands the rest to a bigger class).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { consoleLogger } from '../../local/console-logger.ts';
import type { WorkerPlacement } from '../../local/lambda-pool.ts';
import { type LocalServer, startLocalServer } from '../../local/server.ts';
import { parseConfig } from '../../runtime/core/config.ts';
import { LAMBDA_ENTRY_CLASS, LAMBDA_WORKER } from '../../runtime/infra/resources.ts';

let server: LocalServer;
const ranIn = new Map<string, WorkerPlacement>();
const waiters = new Map<string, () => void>();

beforeAll(async () => {
  server = await startLocalServer({
    config: parseConfig({ pools: { lambda: { concurrency: 4 }, fargate: { vcpu: 2, memoryMiB: 4096 } } }),
    port: 0,
    examples: false,
    summaryEverySeconds: 0,
    logger: consoleLogger({ quiet: true }),
    onOutcome: (outcome, where) => {
      if (outcome.kind !== 'finished') return;
      ranIn.set(outcome.task.taskId, where);
      waiters.get(outcome.task.taskId)?.();
    },
  });
});
afterAll(async () => {
  await server?.stop();
});

async function submit(body: unknown): Promise<string> {
  const response = await fetch(`${server.url}/v1/tasks`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  expect(response.status).toBe(202);
  return ((await response.json()) as { taskId: string }).taskId;
}

const finished = (taskId: string) =>
  ranIn.has(taskId) ? Promise.resolve() : new Promise<void>((resolve) => waiters.set(taskId, resolve));

describe('Local Lambda pool: memory classes', () => {
  it('runs a 512 MiB task in the 512 MiB class and a 2,048 MiB task in the 2,048 MiB class', async () => {
    // Act
    const small = await submit({ tenantId: 'm', type: 'demo.echo', payload: { n: 1 } });
    const big = await submit({
      tenantId: 'm',
      type: 'demo.echo',
      payload: { n: 2 },
      runtime: 'lambda',
      resources: { vcpu: 1, memoryMiB: 2048 },
    });
    const between = await submit({
      tenantId: 'm',
      type: 'demo.echo',
      payload: { n: 3 },
      resources: { vcpu: 0.25, memoryMiB: 1024 },
    });
    await Promise.all([finished(small), finished(big), finished(between)]);

    // Assess: each in the smallest class that fits it, all on the Lambda pool, each succeeded once.
    expect(ranIn.get(small)).toEqual({ pool: 'lambda', memoryMiB: LAMBDA_ENTRY_CLASS.memoryMiB });
    expect(ranIn.get(big)).toEqual({ pool: 'lambda', memoryMiB: LAMBDA_WORKER.memoryMiB });
    expect(ranIn.get(between)).toEqual({ pool: 'lambda', memoryMiB: 2048 });
    for (const [taskId, n] of [
      [small, 1],
      [big, 2],
      [between, 3],
    ] as const) {
      const task = (await (await fetch(`${server.url}/v1/tasks/${taskId}`)).json()) as Record<string, unknown>;
      expect(task).toMatchObject({ state: 'SUCCEEDED', attempts: 1, runtime: 'lambda', result: { echo: { n } } });
    }
  });
});
