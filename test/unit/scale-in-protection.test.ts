import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ScaleInProtection } from '../../runtime/worker/scale-in-protection.ts';

/** A stand-in for the ECS agent's task-protection endpoint that records what it was told. */
let agent: Server;
let agentUri: string;
const calls: { method: string; path: string; body: unknown }[] = [];

beforeAll(async () => {
  agent = createServer((request, response) => {
    let body = '';
    request.on('data', (chunk) => {
      body += chunk;
    });
    request.on('end', () => {
      calls.push({ method: request.method ?? '', path: request.url ?? '', body: JSON.parse(body || 'null') });
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end('{"protection":{}}');
    });
  });
  await new Promise<void>((resolve) => agent.listen(0, '127.0.0.1', () => resolve()));
  agentUri = `http://127.0.0.1:${(agent.address() as AddressInfo).port}/v1`;
});
afterAll(async () => {
  await new Promise<void>((resolve) => agent.close(() => resolve()));
});

describe('Class: ScaleInProtection', () => {
  it('protects the task while busy and releases it when idle, telling the agent only changes', async () => {
    // Prepare
    calls.length = 0;
    const protection = new ScaleInProtection({ agentUri, expiresInMinutes: 45 });

    // Act
    await protection.setBusy(true);
    await protection.setBusy(true); // still busy: nothing new to say
    await protection.setBusy(false);

    // Assess
    expect(calls).toEqual([
      { method: 'PUT', path: '/v1/task-protection/v1/state', body: { ProtectionEnabled: true, ExpiresInMinutes: 45 } },
      { method: 'PUT', path: '/v1/task-protection/v1/state', body: { ProtectionEnabled: false } },
    ]);
  });

  it('keeps working (and says so) when the agent cannot be reached', async () => {
    const warnings: string[] = [];
    const protection = new ScaleInProtection({
      agentUri: 'http://127.0.0.1:1',
      logger: { info() {}, warn: (message) => warnings.push(message), error() {} },
    });
    await expect(protection.setBusy(true)).resolves.toBeUndefined();
    expect(warnings).toEqual(['scale-in protection unreachable']);
  });
});
