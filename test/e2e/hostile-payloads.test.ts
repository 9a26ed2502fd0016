/**
 * What the API accepts runs (issue 15, item 3): payloads with emoji, noncharacters, lone
 * surrogates, control characters and keys named after Object.prototype members, and tenants
 * whose ids are JavaScript object keys, go over HTTP through the whole local runtime (tier
 * queue, scheduler, worker queue, worker) and end SUCCEEDED with the payload echoed back
 * exactly. Nothing is left stuck.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { consoleLogger } from '../../local/console-logger.ts';
import { type LocalServer, startLocalServer } from '../../local/server.ts';
import { parseConfig } from '../../runtime/core/config.ts';

let server: LocalServer;

beforeAll(async () => {
  server = await startLocalServer({
    config: parseConfig({
      pools: { lambda: { concurrency: 16 }, fargate: { vcpu: 2, memoryMiB: 4096 } },
      tenantDefaults: { weight: 1, maxConcurrency: 16 },
    }),
    port: 0,
    examples: false,
    summaryEverySeconds: 0,
    logger: consoleLogger({ quiet: true }),
  });
});
afterAll(async () => {
  await server?.stop();
});

/** Payloads as JSON text, so `__proto__` arrives as a key and lone surrogates as escapes. */
const FIXED_PAYLOADS = [
  '"emoji \u{1F600}\u{1F469}\u200D\u{1F4BB} and flags \u{1F1EB}\u{1F1F7}"',
  '"noncharacters \uFFFE \uFFFF \uFDD0 \u{1FFFE} \u{10FFFF}"',
  '"lone surrogates \\ud800 \\udfff \\udc00\\ud800"',
  '"controls \\u0000 \\u0001 \\u001f \\u007f \\u0085 \\u2028"',
  '{"__proto__":{"constructor":"Acme Ltd"},"constructor":{"prototype":[1,{"toString":null}]}}',
  '{"meta":{"constructor":"Acme Ltd","hasOwnProperty":"\u{1F600}\uFFFE"}}',
];

async function submit(tenantId: string, payloadText: string): Promise<string> {
  const response = await fetch(`${server.url}/v1/tasks`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: `{"tenantId":${JSON.stringify(tenantId)},"type":"demo.echo","payload":${payloadText}}`,
  });
  const body = (await response.json()) as { taskId?: string };
  expect(response.status, JSON.stringify(body)).toBe(202);
  return body.taskId!;
}

async function settled(taskId: string): Promise<{ state: string; payload: unknown; result: unknown }> {
  for (;;) {
    const response = await fetch(`${server.url}/v1/tasks/${taskId}`);
    const task = (await response.json()) as { state: string; payload: unknown; result: unknown };
    if (['SUCCEEDED', 'FAILED', 'CANCELLED'].includes(task.state)) return task;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

describe('Hostile payloads through the whole local runtime', () => {
  it('runs every accepted payload to SUCCEEDED and echoes it exactly', async () => {
    // Prepare: the fixed shapes plus strings drawn over the whole Unicode range.
    const drawn = fc
      .sample(fc.string({ unit: 'binary', minLength: 1, maxLength: 30 }), { numRuns: 12, seed: 15 })
      .map((text) => JSON.stringify(text));
    const payloads = [...FIXED_PAYLOADS, ...drawn];
    const tenants = ['constructor', '__proto__', 'toString', 'acme'];

    // Act
    const taskIds = await Promise.all(payloads.map((payload, i) => submit(tenants[i % tenants.length]!, payload)));
    const tasks = await Promise.all(taskIds.map(settled));

    // Assess
    for (const [i, task] of tasks.entries()) {
      const sent = JSON.stringify(JSON.parse(payloads[i]!));
      expect(task.state, payloads[i]).toBe('SUCCEEDED');
      expect(JSON.stringify(task.payload)).toBe(sent);
      expect(JSON.stringify((task.result as { echo: unknown }).echo)).toBe(sent);
    }
  }, 120_000);
});
