import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Sha256 } from '@aws-crypto/sha256-js';
import { SignatureV4 } from '@smithy/signature-v4';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isLocalEndpoint, regionOfEndpoint } from '../../client/sdk/signing.ts';
import { SchedulerClient } from '../../index.ts';

const credentials = {
  accessKeyId: 'AKIDEXAMPLE',
  secretAccessKey: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY',
  sessionToken: 'session-token-example',
};

interface Received {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
}

let echo: Server;
let base: string;
let received: Received[] = [];

beforeAll(async () => {
  // Answers every request like the API would, and keeps what it received.
  echo = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      received.push({
        method: request.method ?? '',
        url: request.url ?? '',
        headers: request.headers,
        body: Buffer.concat(chunks).toString('utf8'),
      });
      response.writeHead(request.method === 'POST' ? 202 : 200, { 'content-type': 'application/json' });
      response.end(
        JSON.stringify(request.url?.includes('/v1/tasks?') ? { items: [] } : { taskId: 'tsk_1', state: 'QUEUED' }),
      );
    });
  });
  await new Promise<void>((resolve) => echo.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(echo.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await new Promise((resolve) => echo.close(resolve));
});

/** Recompute the signature of a received request from its signed headers alone. */
async function expectedSignature(request: Received, region: string): Promise<string> {
  const authorization = String(request.headers.authorization);
  const signedHeaders = /SignedHeaders=([^,]+)/.exec(authorization)![1]!.split(';');
  const headers: Record<string, string> = {};
  // The payload hash is recomputed from the body received, as the server does, not trusted from the header.
  for (const name of signedHeaders) if (name !== 'x-amz-content-sha256') headers[name] = String(request.headers[name]);
  const url = new URL(request.url, base);
  const query: Record<string, string> = {};
  for (const [key, value] of url.searchParams) query[key] = value;
  const amzDate = String(request.headers['x-amz-date']);
  const signingDate = new Date(
    `${amzDate.slice(0, 4)}-${amzDate.slice(4, 6)}-${amzDate.slice(6, 8)}T${amzDate.slice(9, 11)}:${amzDate.slice(11, 13)}:${amzDate.slice(13, 15)}Z`,
  );
  const signer = new SignatureV4({ service: 'execute-api', region, sha256: Sha256, credentials });
  const signed = await signer.sign(
    {
      method: request.method,
      protocol: 'http:',
      hostname: url.hostname,
      port: Number(url.port),
      path: url.pathname,
      query,
      headers,
      ...(request.body ? { body: request.body } : {}),
    },
    { signingDate },
  );
  return /Signature=([0-9a-f]+)/.exec(String(signed.headers.authorization))![1]!;
}

describe('SigV4 signing', () => {
  it('signs every request for service execute-api with a signature the server can recompute', async () => {
    // Prepare
    received = [];
    const client = new SchedulerClient({ endpoint: `${base}/prod`, sign: true, region: 'eu-west-1', credentials });

    // Act
    await client.submit({ tenantId: 'acme', type: 'demo.echo', payload: { a: 1 } });
    await client.listPage({ tenantId: 'acme', state: 'QUEUED', limit: 5 });

    // Assess
    expect(received.map((request) => `${request.method} ${request.url}`)).toEqual([
      'POST /prod/v1/tasks',
      'GET /prod/v1/tasks?tenantId=acme&state=QUEUED&limit=5',
    ]);
    for (const request of received) {
      expect(request.headers.authorization).toMatch(
        /^AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE\/\d{8}\/eu-west-1\/execute-api\/aws4_request, SignedHeaders=[a-z0-9;-]*host[a-z0-9;-]*, Signature=[0-9a-f]{64}$/,
      );
      expect(request.headers.authorization).toContain('x-amz-date');
      expect(request.headers['x-amz-security-token']).toBe(credentials.sessionToken);
      const signature = /Signature=([0-9a-f]+)/.exec(String(request.headers.authorization))![1];
      expect(signature).toBe(await expectedSignature(request, 'eu-west-1'));
    }
  });

  it('produces a different signature when the body is tampered with', async () => {
    // Prepare
    received = [];
    const client = new SchedulerClient({ endpoint: base, sign: true, region: 'eu-west-1', credentials });
    await client.submit({ tenantId: 'acme', type: 'demo.echo' });
    const [request] = received;
    const signature = /Signature=([0-9a-f]+)/.exec(String(request!.headers.authorization))![1];

    // Act
    const tampered = await expectedSignature({ ...request!, body: request!.body.replace('acme', 'evil') }, 'eu-west-1');

    // Assess
    expect(tampered).not.toBe(signature);
  });

  it('sends plain HTTP to the local runtime', async () => {
    // Prepare
    received = [];
    const client = new SchedulerClient({ endpoint: base });

    // Act
    await client.get('tsk_1');

    // Assess
    expect(received[0]?.headers.authorization).toBeUndefined();
    expect(received[0]?.headers['x-amz-date']).toBeUndefined();
  });

  it('knows local endpoints and the region of an execute-api endpoint', () => {
    expect(isLocalEndpoint(new URL('http://localhost:3000'))).toBe(true);
    expect(isLocalEndpoint(new URL('http://127.0.0.1:3000'))).toBe(true);
    expect(isLocalEndpoint(new URL('https://abc123.execute-api.eu-west-1.amazonaws.com'))).toBe(false);
    expect(regionOfEndpoint(new URL('https://abc123.execute-api.eu-west-1.amazonaws.com/prod'))).toBe('eu-west-1');
    expect(regionOfEndpoint(new URL('https://api.example.com'))).toBeUndefined();
  });

  it('refuses a deployed endpoint without a region it can sign for', () => {
    const saved = { region: process.env.AWS_REGION, fallback: process.env.AWS_DEFAULT_REGION };
    delete process.env.AWS_REGION;
    delete process.env.AWS_DEFAULT_REGION;
    try {
      expect(() => new SchedulerClient({ endpoint: 'https://api.example.com', credentials })).toThrow(
        /No signing region for https:\/\/api\.example\.com/,
      );
    } finally {
      if (saved.region !== undefined) process.env.AWS_REGION = saved.region;
      if (saved.fallback !== undefined) process.env.AWS_DEFAULT_REGION = saved.fallback;
    }
  });
});
