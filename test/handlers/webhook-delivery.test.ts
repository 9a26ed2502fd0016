/**
 * The AWS webhook delivery function (runtime/handlers/webhook-delivery.ts) against a receiver
 * that answers slowly. Lambda stops an invocation at its timeout and then takes the whole batch
 * as failed: every message of it comes back, the ones already POSTed too, and a batch of slow
 * deliveries timed out again and again never got past its first few (each time POSTed again).
 * So the function starts a POST only while one can still finish, and reports the rest as batch
 * item failures (partial batch response), which keeps what was delivered from coming back.
 *
 * One local HTTP server plays the receiver and Secrets Manager; the invocation's remaining time
 * is a fake that drops 5 s with each POST the receiver takes (no real waiting).
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Context, SQSEvent, SQSRecord } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WEBHOOK_TIMEOUT_MS } from '../../runtime/events/webhooks.ts';

const saved = { ...process.env };
let server: Server;
let posts: string[] = [];
let handler: typeof import('../../runtime/handlers/webhook-delivery.ts').handler;

beforeAll(async () => {
  server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      if (String(request.headers['x-amz-target'] ?? '').endsWith('GetSecretValue')) {
        response.writeHead(200, { 'content-type': 'application/x-amz-json-1.1' });
        response.end(JSON.stringify({ ARN: 'arn:secret', Name: 'secret', SecretString: 'shh' }));
        return;
      }
      posts.push((JSON.parse(Buffer.concat(chunks).toString('utf8')) as { id: string }).id);
      response.writeHead(204);
      response.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  Object.assign(process.env, {
    AWS_REGION: 'us-east-1',
    AWS_ACCESS_KEY_ID: 'local',
    AWS_SECRET_ACCESS_KEY: 'local',
    AWS_ENDPOINT_URL_SECRETS_MANAGER: url,
    POWERTOOLS_LOG_LEVEL: 'ERROR',
    POWERTOOLS_METRICS_DISABLED: 'true',
    WEBHOOKS: JSON.stringify([
      { index: 0, url: `${url}/hook`, secretArn: 'arn:aws:secretsmanager:us-east-1:1:secret:s' },
    ]),
  });
  delete process.env.WEBHOOK_QUEUE_URL;
  ({ handler } = await import('../../runtime/handlers/webhook-delivery.ts'));
});
afterAll(async () => {
  process.env = saved;
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

const record = (i: number, group: string): SQSRecord => ({
  messageId: `m${i}`,
  receiptHandle: `rh${i}`,
  body: JSON.stringify({
    webhook: 0,
    event: {
      id: `evt_${i}`,
      type: 'task.state_changed',
      time: '2026-12-03T12:00:00.000Z',
      taskId: group,
      tenantId: 'tenant-a',
      taskType: 'demo.echo',
      state: 'RUNNING',
      previousState: 'DISPATCHED',
      attempt: 1,
      sequence: i,
    },
  }),
  attributes: {
    ApproximateReceiveCount: '1',
    SentTimestamp: '0',
    SenderId: 'x',
    ApproximateFirstReceiveTimestamp: '0',
    MessageGroupId: `0:${group}`,
    SequenceNumber: String(i),
    MessageDeduplicationId: `d${i}`,
  },
  messageAttributes: {},
  md5OfBody: '',
  eventSource: 'aws:sqs',
  eventSourceARN: 'arn:aws:sqs:us-east-1:1:deliveries.fifo',
  awsRegion: 'us-east-1',
});

/** An invocation of 30 s (the function's timeout) in which each POST takes 5 s of it. */
const slowContext = (): Context =>
  ({
    functionName: 'delivery',
    awsRequestId: 'req',
    getRemainingTimeInMillis: () => 30_000 - 5_000 * posts.length,
  }) as unknown as Context;

describe('Handler: webhook-delivery', () => {
  it('starts no POST that could outlast the invocation, and reports the deliveries it left as failures', async () => {
    // Prepare: ten deliveries, two tasks' groups interleaved.
    posts = [];
    const records = Array.from({ length: 10 }, (_, i) => record(i, i % 2 === 0 ? 'tsk_a' : 'tsk_b'));
    const context = slowContext();

    // Act
    const response = await handler({ Records: records } as SQSEvent, context);

    // Assess: every POST started with a whole POST timeout (and a margin) left in the invocation...
    const failed = response.batchItemFailures.map((failure) => failure.itemIdentifier);
    expect(posts.length).toBeGreaterThan(0);
    posts.forEach((_, n) => {
      expect(30_000 - 5_000 * n).toBeGreaterThan(WEBHOOK_TIMEOUT_MS);
    });
    // ...what was POSTed is not reported (it is deleted), and everything else is, to come back.
    const delivered = records.filter((r) => posts.includes(JSON.parse(r.body).event.id)).map((r) => r.messageId);
    expect(delivered).toHaveLength(posts.length);
    expect(failed.filter((id) => delivered.includes(id))).toEqual([]);
    expect([...failed, ...delivered].sort()).toEqual(records.map((r) => r.messageId).sort());
  });

  it('delivers a whole batch to a receiver that answers in time', async () => {
    posts = [];
    const records = Array.from({ length: 10 }, (_, i) => record(100 + i, 'tsk_c'));
    const context = { functionName: 'delivery', awsRequestId: 'req', getRemainingTimeInMillis: () => 30_000 };

    const response = await handler({ Records: records } as SQSEvent, context as unknown as Context);

    expect(response.batchItemFailures).toEqual([]);
    expect(posts).toEqual(records.map((r) => JSON.parse(r.body).event.id));
  });
});
