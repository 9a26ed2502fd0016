/**
 * Issue 27, done when: spans for a submitted task are received by a test OTLP endpoint,
 * parent-linked to the caller's traceparent. The whole local runtime runs in this process with
 * OTEL_EXPORTER_OTLP_ENDPOINT pointing at an OTLP/HTTP receiver here; the SDK client submits with
 * a traceparent; the submit, wait and run spans arrive in the caller's trace, the submit span a
 * child of the caller's span and the others children of the submit span, and the handler got the
 * run span's traceparent.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { SchedulerClient } from '../../client/sdk/client.ts';
import { type LocalServer, startLocalServer } from '../../local/server.ts';
import { parseConfig } from '../../runtime/core/config.ts';
import { defineTaskType, TaskTypeRegistry } from '../../runtime/task-types/define.ts';
import { defaultRegistry } from '../../runtime/task-types/index.ts';
import { flushTraces, shutdownTracing } from '../../runtime/telemetry/tracing.ts';

interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
}

const CALLER_TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const CALLER_SPAN = '00f067aa0ba902b7';
const spans: OtlpSpan[] = [];
const handed: (string | undefined)[] = [];
let receiver: Server;
let server: LocalServer;

beforeAll(async () => {
  receiver = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      if (request.url === '/v1/traces') {
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
          resourceSpans: { scopeSpans: { spans: OtlpSpan[] }[] }[];
        };
        for (const resource of body.resourceSpans) for (const scope of resource.scopeSpans) spans.push(...scope.spans);
      }
      response.setHeader('content-type', 'application/json');
      response.end('{}');
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  process.env.OTEL_EXPORTER_OTLP_ENDPOINT = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
  const registry = new TaskTypeRegistry([
    ...defaultRegistry()
      .names()
      .map((name) => defaultRegistry().get(name)),
    defineTaskType({
      type: 'test.traced',
      description: 'records the traceparent it is handed',
      payload: z.object({}),
      async handler(_payload, ctx) {
        handed.push(ctx.traceparent);
        return null;
      },
    }),
  ]);
  server = await startLocalServer({
    config: parseConfig({}, 'test configuration'),
    port: 0,
    examples: false,
    summaryEverySeconds: 0,
    logger: { info() {}, warn() {}, error() {} },
    registry,
  });
});

afterAll(async () => {
  await server?.stop();
  await shutdownTracing();
  delete process.env.OTEL_EXPORTER_OTLP_ENDPOINT;
  receiver.close();
});

describe('Trace context', () => {
  it("exports submit, wait and run spans in the caller's trace, parent-linked to its traceparent", async () => {
    // Prepare
    const client = new SchedulerClient({ endpoint: server.url });

    // Act
    const task = await client.submit(
      { tenantId: 'traced', type: 'test.traced', payload: {} },
      { traceparent: `00-${CALLER_TRACE}-${CALLER_SPAN}-01` },
    );
    const done = await client.waitFor(task.taskId, { timeoutMs: 60_000 });
    await flushTraces();

    // Assess
    expect(done.state).toBe('SUCCEEDED');
    const byName = (name: string) => spans.filter((span) => span.name === name);
    const [submit] = byName('task.submit');
    const [wait] = byName('task.wait');
    const [run] = byName('task.run');
    expect(submit).toMatchObject({ traceId: CALLER_TRACE, parentSpanId: CALLER_SPAN });
    expect(wait).toMatchObject({ traceId: CALLER_TRACE, parentSpanId: submit!.spanId });
    expect(run).toMatchObject({ traceId: CALLER_TRACE, parentSpanId: submit!.spanId });
    expect(handed).toEqual([`00-${CALLER_TRACE}-${run!.spanId}-01`]);
  }, 90_000);

  it('records no span for a task submitted without a traceparent', async () => {
    // Prepare
    const client = new SchedulerClient({ endpoint: server.url });
    const before = spans.length;

    // Act
    const task = await client.submit({ tenantId: 'traced', type: 'test.traced', payload: {} });
    await client.waitFor(task.taskId, { timeoutMs: 60_000 });
    await flushTraces();

    // Assess
    expect(spans.length).toBe(before);
    expect(handed.at(-1)).toBeUndefined();
  }, 90_000);
});
