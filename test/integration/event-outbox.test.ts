/**
 * Task events through the local outbox (issue 27): each state change recorded in the same write,
 * delivered in order to each webhook, retried until taken, acknowledged, and found again by a
 * relay that starts after a crash.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startTaskExpiry } from '../../local/task-expiry.ts';
import { type TaskEvent, verifySignature } from '../../runtime/core/events.ts';
import { heartbeat } from '../../runtime/core/lifecycle.ts';
import type { Task } from '../../runtime/core/task.ts';
import { OutboxRelay } from '../../runtime/events/outbox-relay.ts';
import { postWebhook, type WebhookTarget } from '../../runtime/events/webhooks.ts';
import { runningTask, submitTask, succeededTask } from '../helpers/factories.ts';
import { startTestServices, type TestServices } from '../helpers/services.ts';

let services: TestServices;
const hinted: string[] = [];

beforeAll(async () => {
  services = await startTestServices({ events: { outbox: true, onOutboxEvent: (taskId) => hinted.push(taskId) } });
});
afterAll(async () => {
  await services.stop();
});

const hook = (index: number, filters?: WebhookTarget['filters']): WebhookTarget => ({
  index,
  url: `http://127.0.0.1/hook-${index}`,
  secret: 'a-secret-of-sixteen+',
  ...(filters ? { filters } : {}),
});

/** A relay whose deliveries are recorded per webhook; `refuse` says which to fail. */
function recordingRelay(webhooks: WebhookTarget[], refuse: (target: WebhookTarget, event: TaskEvent) => boolean) {
  const received = new Map<number, TaskEvent[]>();
  const relay = new OutboxRelay({
    store: services.store,
    webhooks,
    random: () => 0,
    deliver: async (target, event) => {
      if (refuse(target, event)) throw new Error('503');
      received.set(target.index, [...(received.get(target.index) ?? []), event]);
    },
  });
  return { relay, received };
}

describe('Class: TaskStore (outbox on)', () => {
  it('records each state change in the write that makes it, numbered 1, 2, 3 ..., and no event for a lease renewal', async () => {
    // Prepare
    const running = await runningTask(services);

    // Act
    const renewed = await services.store.transition(running.taskId, (t) => heartbeat(t, running.fence, new Date(), 60));

    // Assess
    const outbox = renewed.outbox ?? [];
    expect(outbox.map((e) => [e.state, e.previousState, e.sequence])).toEqual([
      ['QUEUED', null, 1],
      ['DISPATCHED', 'QUEUED', 2],
      ['RUNNING', 'DISPATCHED', 3],
    ]);
    expect(renewed.version).toBeGreaterThan(running.version);
    expect(renewed.eventSequence).toBe(3);
    expect(new Set(outbox.map((e) => e.id)).size).toBe(3);
    expect(outbox[2]).toMatchObject({ type: 'task.state_changed', taskId: running.taskId, attempt: 1 });
    expect(hinted.filter((id) => id === running.taskId)).toHaveLength(3);
    expect((await services.store.get(running.taskId))?.outbox).toEqual(outbox);
  });
});

describe('Class: OutboxRelay', () => {
  it("delivers a task's events in order to every webhook that takes them, then empties the outbox", async () => {
    // Prepare
    const done = await succeededTask(services, { tenantId: 'relay-order' });
    const { relay, received } = recordingRelay([hook(0), hook(1, { state: ['SUCCEEDED', 'FAILED'] })], () => false);

    // Act
    relay.notify(done.taskId);
    await relay.drain();

    // Assess
    expect(received.get(0)?.map((e) => e.state)).toEqual(['QUEUED', 'DISPATCHED', 'RUNNING', 'SUCCEEDED']);
    expect(received.get(1)?.map((e) => e.state)).toEqual(['SUCCEEDED']);
    expect((await services.store.get(done.taskId))?.outbox).toBeUndefined();
  });

  it('retries a failing webhook until it takes the event, holding back only its own later events', async () => {
    // Prepare
    const done = await succeededTask(services, { tenantId: 'relay-retry' });
    let refusals = 3;
    let clock = 0;
    const received = new Map<number, number[]>();
    const relay = new OutboxRelay({
      store: services.store,
      webhooks: [hook(0), hook(1)],
      now: () => clock,
      random: () => 0,
      deliver: async (target, event) => {
        if (target.index === 0 && event.sequence === 2 && refusals-- > 0) throw new Error('503');
        received.set(target.index, [...(received.get(target.index) ?? []), event.sequence]);
      },
    });

    // Act: each round, the clock passes the backoff
    relay.notify(done.taskId);
    for (let round = 0; round < 6; round++) {
      await relay.drain();
      clock += 600_000;
      relay.notify(done.taskId);
    }

    // Assess
    expect(received.get(1)).toEqual([1, 2, 3, 4]);
    expect(received.get(0)).toEqual([1, 2, 3, 4]);
    expect(refusals).toBe(-1);
    expect((await services.store.get(done.taskId))?.outbox).toBeUndefined();
  });

  it('a writer that read the item before an ack does not put the acknowledged events back (a relay started afresh sends only the new one)', async () => {
    // Prepare: the worker read the item while QUEUED's and DISPATCHED's events were in the outbox
    const queued = await submitTask(services, { tenantId: 'relay-stale-fresh' });
    const { dispatch, start } = await import('../../runtime/core/lifecycle.ts');
    const dispatched = await services.store.transition(queued.taskId, (t) => dispatch(t, new Date(), 120));
    const first = recordingRelay([hook(0)], () => false);
    first.relay.notify(queued.taskId);
    await first.relay.drain();

    // Act: the worker starts from its stale copy; then a relay that remembers nothing (a restart)
    const started = await services.store.transition(queued.taskId, (t) => start(t, dispatched.fence, new Date(), 60), {
      known: dispatched,
    });
    const restarted = recordingRelay([hook(0)], () => false);
    await restarted.relay.scan();
    await restarted.relay.drain();

    // Assess: events 1 and 2 were delivered once, before 3; nothing repeats after 3
    expect(first.received.get(0)?.map((e) => e.sequence)).toEqual([1, 2]);
    expect(started.outbox?.map((e) => e.sequence)).toEqual([3]);
    expect(
      restarted.received
        .get(0)
        ?.filter((e) => e.taskId === queued.taskId)
        .map((e) => e.sequence),
    ).toEqual([3]);
    expect(started.version).toBe(dispatched.version + 1);
  });

  it('a relay started afresh (after a crash) finds every outbox by its scan and delivers it', async () => {
    // Prepare: three tasks written while no relay listened
    const tasks: Task[] = [];
    for (let i = 0; i < 3; i++) tasks.push(await succeededTask(services, { tenantId: 'relay-crash' }));
    const { relay, received } = recordingRelay([hook(0)], () => false);

    // Act
    await relay.scan();
    await relay.drain();

    // Assess
    for (const task of tasks) {
      const states = received
        .get(0)
        ?.filter((e) => e.taskId === task.taskId)
        .map((e) => e.state);
      expect(states).toEqual(['QUEUED', 'DISPATCHED', 'RUNNING', 'SUCCEEDED']);
      expect((await services.store.get(task.taskId))?.outbox).toBeUndefined();
    }
  });

  it('acknowledges each event before sending the next, so a crash repeats at most the one in flight', async () => {
    // Prepare: a finished task with four undelivered events
    const done = await succeededTask(services, { tenantId: 'relay-ack-each' });
    const headAtSend: number[] = [];
    const relay = new OutboxRelay({
      store: services.store,
      webhooks: [hook(0)],
      deliver: async (_target, event) => {
        headAtSend.push((await services.store.get(event.taskId))?.outbox?.[0]?.sequence ?? 0);
      },
    });

    // Act
    relay.notify(done.taskId);
    await relay.drain();

    // Assess: when event n was sent, events before it had left the outbox already
    expect(headAtSend).toEqual([1, 2, 3, 4]);
    expect((await services.store.get(done.taskId))?.outbox).toBeUndefined();
  });

  it('with no webhook left, empties the outbox without sending', async () => {
    // Prepare
    const done = await succeededTask(services, { tenantId: 'relay-none' });
    const { relay, received } = recordingRelay([], () => false);

    // Act
    relay.notify(done.taskId);
    await relay.drain();

    // Assess
    expect(received.size).toBe(0);
    expect((await services.store.get(done.taskId))?.outbox).toBeUndefined();
  });
});

describe('Class: OutboxRelay (started)', () => {
  it('with no webhook, scans once at start, empties what a run with webhooks left, and ends', async () => {
    // Prepare: a finished task whose outbox a previous run with a webhook never delivered
    const left = await succeededTask(services, { tenantId: 'relay-leftover' });
    let now = 0;
    const relay = new OutboxRelay({ store: services.store, webhooks: [], now: () => now, scanEveryMs: 1 });

    // Act: started; time runs far past many scan intervals while it works
    relay.start();
    now = 3_600_000;
    await relay.finished;

    // Assess
    expect(relay.scans).toBe(1);
    expect((await services.store.get(left.taskId))?.outbox).toBeUndefined();
  });

  it('with a webhook, goes on scanning every scanEveryMs until stopped', async () => {
    // Prepare
    let now = 0;
    const relay = new OutboxRelay({
      store: services.store,
      webhooks: [hook(0)],
      deliver: async () => undefined,
      now: () => now,
      scanEveryMs: 1_000,
    });

    // Act
    relay.start();
    for (let i = 1; i <= 3; i++) {
      now = i * 1_000;
      await vi.waitFor(() => expect(relay.scans).toBe(i + 1), { timeout: 30_000 });
    }
    await relay.stop();

    // Assess
    expect(relay.scans).toBe(4);
  });
});

describe('Function: startTaskExpiry (outbox on)', () => {
  it('keeps a finished task whose events are not delivered yet', async () => {
    // Prepare
    const done = await succeededTask(services, { tenantId: 'expiry-outbox' });
    const expiry = startTaskExpiry({
      documents: services.clients.documents,
      tableName: services.store.tableName,
      retentionSeconds: 1,
      now: () => new Date(Date.now() + 3600_000),
    });

    // Act
    await expiry.sweep();
    await expiry.stop();

    // Assess
    expect((await services.store.get(done.taskId))?.outbox).toHaveLength(4);
  });
});

describe('Function: postWebhook', () => {
  it('POSTs the event as JSON with x-signature, the HMAC-SHA256 of the raw body, and fails on a non-2xx', async () => {
    // Prepare
    const bodies: { body: string; signature: string | undefined }[] = [];
    let status = 204;
    const server = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        bodies.push({
          body: Buffer.concat(chunks).toString('utf8'),
          signature: request.headers['x-signature'] as string,
        });
        response.statusCode = status;
        response.end();
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/events`;
    const done = await succeededTask(services, { tenantId: 'post' });
    const event = done.outbox!.at(-1)!;

    try {
      // Act
      await postWebhook({ url, secret: 'a-secret-of-sixteen+' }, event);
      status = 500;
      const refused = postWebhook({ url, secret: 'a-secret-of-sixteen+' }, event);

      // Assess
      await expect(refused).rejects.toMatchObject({ name: 'WebhookDeliveryError', status: 500 });
      expect(JSON.parse(bodies[0]!.body)).toEqual(event);
      expect(bodies[0]!.signature).toMatch(/^sha256=[0-9a-f]{64}$/);
      expect(verifySignature('a-secret-of-sixteen+', bodies[0]!.body, bodies[0]!.signature)).toBe(true);
      expect(verifySignature('another-secret-16chars', bodies[0]!.body, bodies[0]!.signature)).toBe(false);
    } finally {
      server.close();
    }
  });
});
