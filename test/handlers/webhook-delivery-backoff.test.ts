/**
 * The AWS webhook delivery function (runtime/handlers/webhook-delivery.ts) when a POST is
 * refused: its message is hidden for the backoff (1 s doubling), and the later deliveries of the
 * same webhook and task in the batch, not tried (Powertools' skipGroupOnError), are visible again
 * at once. SQS hands out no message of a FIFO group while one of its messages is in flight, so
 * left hidden for the queue's visibility timeout they held the group, and the first retry
 * came that much later whatever the backoff said.
 *
 * One local HTTP server plays the receiver, Secrets Manager and SQS (its visibility calls).
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Context, SQSEvent, SQSRecord } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const saved = { ...process.env };
let server: Server;
const visibility = new Map<string, number>();
let handler: typeof import('../../runtime/handlers/webhook-delivery.ts').handler;

beforeAll(async () => {
  server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const target = String(request.headers['x-amz-target'] ?? '');
      const body = Buffer.concat(chunks).toString('utf8');
      if (target.endsWith('GetSecretValue')) {
        response.writeHead(200, { 'content-type': 'application/x-amz-json-1.1' });
        response.end(JSON.stringify({ ARN: 'arn:secret', Name: 'secret', SecretString: 'shh' }));
        return;
      }
      if (target === 'AmazonSQS.ChangeMessageVisibility') {
        const input = JSON.parse(body) as { ReceiptHandle: string; VisibilityTimeout: number };
        visibility.set(input.ReceiptHandle, input.VisibilityTimeout);
        response.writeHead(200, { 'content-type': 'application/x-amz-json-1.0' });
        response.end('{}');
        return;
      }
      if (target === 'AmazonSQS.ChangeMessageVisibilityBatch') {
        const input = JSON.parse(body) as {
          Entries: { Id: string; ReceiptHandle: string; VisibilityTimeout: number }[];
        };
        for (const entry of input.Entries) visibility.set(entry.ReceiptHandle, entry.VisibilityTimeout);
        response.writeHead(200, { 'content-type': 'application/x-amz-json-1.0' });
        response.end(JSON.stringify({ Successful: input.Entries.map(({ Id }) => ({ Id })), Failed: [] }));
        return;
      }
      // The receiver: refuses evt_0, takes the rest.
      const { id } = JSON.parse(body) as { id: string };
      response.writeHead(id === 'evt_0' ? 500 : 204);
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
    AWS_ENDPOINT_URL_SQS: url,
    POWERTOOLS_LOG_LEVEL: 'CRITICAL',
    POWERTOOLS_METRICS_DISABLED: 'true',
    WEBHOOK_QUEUE_URL: `${url}/123456789012/deliveries.fifo`,
    WEBHOOKS: JSON.stringify([
      { index: 0, url: `${url}/hook`, secretArn: 'arn:aws:secretsmanager:us-east-1:1:secret:s' },
    ]),
  });
  ({ handler } = await import('../../runtime/handlers/webhook-delivery.ts'));
});
afterAll(async () => {
  process.env = saved;
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

const record = (i: number, taskId: string): SQSRecord =>
  ({
    messageId: `m${i}`,
    receiptHandle: `rh${i}`,
    body: JSON.stringify({
      webhook: 0,
      event: {
        id: `evt_${i}`,
        type: 'task.state_changed',
        time: '2026-12-03T12:00:00.000Z',
        taskId,
        tenantId: 'tenant-a',
        taskType: 'demo.echo',
        state: 'RUNNING',
        previousState: 'DISPATCHED',
        attempt: 1,
        sequence: i,
      },
    }),
    attributes: { ApproximateReceiveCount: '1', MessageGroupId: `0:${taskId}` },
    messageAttributes: {},
    eventSource: 'aws:sqs',
  }) as unknown as SQSRecord;

describe('Handler: webhook-delivery (a refused POST)', () => {
  it('hides the refused delivery for its backoff and makes its group’s later ones visible again at once', async () => {
    // Prepare: task a's two events (the first refused), task b's one.
    const records = [record(0, 'tsk_a'), record(1, 'tsk_a'), record(2, 'tsk_b')];
    const context = { functionName: 'delivery', awsRequestId: 'req', getRemainingTimeInMillis: () => 30_000 };

    // Act
    const response = await handler({ Records: records } as SQSEvent, context as unknown as Context);

    // Assess
    expect(response.batchItemFailures.map((failure) => failure.itemIdentifier)).toEqual(['m0', 'm1']);
    expect(visibility.get('rh0')).toBeGreaterThanOrEqual(1);
    expect(visibility.get('rh0')).toBeLessThanOrEqual(2);
    expect(visibility.get('rh1')).toBe(0);
    expect(visibility.has('rh2')).toBe(false);
  });
});
