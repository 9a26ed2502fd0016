/**
 * S3 addressing against AWS-compatible endpoints set in the environment (issue 23): with
 * AWS_ENDPOINT_URL(_S3) naming localhost or an IP address, a bucket cannot be a subdomain
 * (`bucket.localhost` does not resolve), so requests must use path style. The deployed workers
 * build their clients from the environment alone (createAwsClients() in wiring.ts), so this is
 * what the examples' S3 reads and writes do against moto or LocalStack.
 */

import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { GetObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { afterEach, describe, expect, it } from 'vitest';
import { AWS_CALL_TIMEOUTS, createAwsClients, onAws, s3NeedsPathStyle } from '../../runtime/adapters/aws-clients.ts';

const VARIABLES = ['AWS_ENDPOINT_URL', 'AWS_ENDPOINT_URL_S3', 'AWS_IGNORE_CONFIGURED_ENDPOINT_URLS'] as const;
const saved = Object.fromEntries(VARIABLES.map((name) => [name, process.env[name]]));

afterEach(() => {
  for (const name of VARIABLES) {
    if (saved[name] === undefined) delete process.env[name];
    else process.env[name] = saved[name];
  }
});

/** The URL the client would send a GetObject to (the request is stopped before it leaves). */
async function requestUrl(s3: S3Client): Promise<string> {
  let url = '';
  s3.middlewareStack.add(
    () => async (args) => {
      const request = args.request as { protocol: string; hostname: string; port?: number; path: string };
      url = `${request.protocol}//${request.hostname}${request.port ? `:${request.port}` : ''}${request.path}`;
      throw new Error('stopped before sending');
    },
    { step: 'finalizeRequest', priority: 'low' },
  );
  await expect(s3.send(new GetObjectCommand({ Bucket: 'my-bucket', Key: 'a/b.json' }))).rejects.toThrow(
    'stopped before sending',
  );
  return url;
}

describe('createAwsClients: S3 addressing', () => {
  it.each([
    ['AWS_ENDPOINT_URL_S3', 'http://localhost:4566', 'http://localhost:4566/my-bucket/a/b.json'],
    ['AWS_ENDPOINT_URL', 'http://127.0.0.1:5000', 'http://127.0.0.1:5000/my-bucket/a/b.json'],
    ['AWS_ENDPOINT_URL', 'http://moto:5000', 'http://moto:5000/my-bucket/a/b.json'],
  ])('%s=%s: path style (%s)', async (variable, endpoint, expected) => {
    // Prepare
    process.env[variable] = endpoint;
    const { s3 } = createAwsClients({ region: 'eu-west-1', credentials: { accessKeyId: 'a', secretAccessKey: 'b' } });

    // Act
    const url = await requestUrl(s3);

    // Assess
    expect(url).toBe(expected);
  });

  it('keeps virtual hosts where every subdomain resolves (LocalStack’s s3.localhost.localstack.cloud) and on AWS', async () => {
    process.env.AWS_ENDPOINT_URL_S3 = 'http://s3.localhost.localstack.cloud:4566';
    const local = createAwsClients({ region: 'eu-west-1', credentials: { accessKeyId: 'a', secretAccessKey: 'b' } });
    expect(await requestUrl(local.s3)).toBe('http://my-bucket.s3.localhost.localstack.cloud:4566/a/b.json');

    delete process.env.AWS_ENDPOINT_URL_S3;
    const aws = createAwsClients({ region: 'eu-west-1', credentials: { accessKeyId: 'a', secretAccessKey: 'b' } });
    expect(await requestUrl(aws.s3)).toBe('https://my-bucket.s3.eu-west-1.amazonaws.com/a/b.json');
  });

  it('decides from the variable the SDK itself reads: the S3 one over the general one, none when told to ignore them', () => {
    expect(s3NeedsPathStyle(undefined, { AWS_ENDPOINT_URL: 'http://localhost:1' })).toBe(true);
    expect(
      s3NeedsPathStyle(undefined, {
        AWS_ENDPOINT_URL: 'http://localhost:1',
        AWS_ENDPOINT_URL_S3: 'https://s3.example.com',
      }),
    ).toBe(false);
    expect(s3NeedsPathStyle(undefined, { AWS_ENDPOINT_URL: 'http://[::1]:4566' })).toBe(true);
    expect(
      s3NeedsPathStyle(undefined, {
        AWS_ENDPOINT_URL: 'http://localhost:1',
        AWS_IGNORE_CONFIGURED_ENDPOINT_URLS: 'true',
      }),
    ).toBe(false);
    expect(s3NeedsPathStyle('http://127.0.0.1:9', {})).toBe(true);
    expect(s3NeedsPathStyle(undefined, {})).toBe(false);
  });
});

/** A server that accepts connections and never answers (a half-open socket, as the SDK meets it). */
async function silentServer() {
  const { createServer } = await import('node:net');
  const sockets: import('node:net').Socket[] = [];
  const server = createServer((socket) => {
    sockets.push(socket);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as import('node:net').AddressInfo;
  const close = async () => {
    for (const socket of sockets) socket.destroy();
    await new Promise((resolve) => server.close(resolve));
  };
  return { sockets, port, close };
}

describe('createAwsClients: call timeouts', () => {
  it('gives up on a connection that answers nothing (a half-open socket), where the SDK alone waits 300 s, and retries', async () => {
    // Prepare: a server that accepts and never answers
    const { sockets, port, close } = await silentServer();
    const { DescribeTableCommand } = await import('@aws-sdk/client-dynamodb');
    const { dynamodb } = createAwsClients({
      region: 'eu-west-1',
      credentials: { accessKeyId: 'a', secretAccessKey: 'b' },
      dynamodb: `http://127.0.0.1:${port}`,
      timeouts: { connectionMs: 500, dynamodbMs: 300, sqsMs: 300 },
    });

    try {
      // Act and assess: each attempt timed out, and the SDK tried again
      await expect(dynamodb.send(new DescribeTableCommand({ TableName: 't' }))).rejects.toMatchObject({
        name: 'TimeoutError',
        $metadata: { attempts: expect.any(Number) },
      });
      expect(sockets.length).toBeGreaterThan(1);
      expect(sockets.length).toBeGreaterThanOrEqual(1);
    } finally {
      await close();
    }
  });

  it('sets them on AWS (no endpoint given), not against the in-process emulators', async () => {
    /** The default handler's options, as it resolves them (its own `httpHandlerConfigs()` is empty until a first call). */
    const configOf = (client: { config: { requestHandler: unknown } }) =>
      (client.config.requestHandler as { configProvider: Promise<Record<string, unknown>> }).configProvider;
    const aws = createAwsClients({ region: 'eu-west-1', credentials: { accessKeyId: 'a', secretAccessKey: 'b' } });
    expect(await configOf(aws.dynamodb)).toMatchObject({
      requestTimeout: AWS_CALL_TIMEOUTS.dynamodbMs,
      connectionTimeout: AWS_CALL_TIMEOUTS.connectionMs,
      throwOnRequestTimeout: true,
    });
    expect(await configOf(aws.sqs)).toMatchObject({
      requestTimeout: AWS_CALL_TIMEOUTS.sqsMs,
      throwOnRequestTimeout: true,
    });
    // SQS long polls wait up to 20 s for messages: its timeout must outlast one.
    expect(AWS_CALL_TIMEOUTS.sqsMs).toBeGreaterThan(20_000);
    const local = createAwsClients({
      region: 'eu-west-1',
      credentials: { accessKeyId: 'a', secretAccessKey: 'b' },
      dynamodb: 'http://127.0.0.1:1',
      sqs: 'http://127.0.0.1:2',
    });
    expect((await configOf(local.dynamodb)).requestTimeout).toBeUndefined();
  });

  it("onAws: a client made outside createAwsClients (the waker's Lambda invoke, the stream's PutEvents) gives up on a silent connection too", async () => {
    // Prepare: a server that accepts and never answers
    const { sockets, port, close } = await silentServer();
    const { InvokeCommand, LambdaClient } = await import('@aws-sdk/client-lambda');
    const lambda = new LambdaClient({
      ...onAws(300),
      region: 'eu-west-1',
      credentials: { accessKeyId: 'a', secretAccessKey: 'b' },
      endpoint: `http://127.0.0.1:${port}`,
      maxAttempts: 2,
    });

    try {
      // Act and assess: it timed out (twice: the SDK retried) instead of waiting on the socket
      await expect(
        lambda.send(new InvokeCommand({ FunctionName: 'scheduler', InvocationType: 'Event' })),
      ).rejects.toMatchObject({ name: 'TimeoutError' });
      expect(sockets.length).toBe(2);
    } finally {
      await close();
    }
  });

  it('every AWS client the deployed code creates has the call timeouts: made by createAwsClients or with onAws()', () => {
    // Code that is not deployed (the local runtime, the example task types' own S3 calls, which carry the attempt's signal) is not looked at.
    const files = readdirSync('runtime', { recursive: true, encoding: 'utf8' })
      .filter((file) => file.endsWith('.ts'))
      .filter((file) => !file.startsWith('local') && !file.startsWith(join('task-types', 'examples')))
      .filter((file) => file !== join('adapters', 'aws-clients.ts'));
    const bare = files.flatMap((file) =>
      [...readFileSync(join('runtime', file), 'utf8').matchAll(/new (\w+Client)\(([^)]*)\)/g)]
        .filter(([, name, args]) => !['QueueClient'].includes(name!) && !args!.includes('onAws('))
        .map(([call]) => `${file}: ${call}`),
    );
    expect(files.length).toBeGreaterThan(50);
    expect(bare).toEqual([]);
  });
});
