/**
 * A webhook receiver verifies deliveries with what the published SDK exports (docs/events.md): the
 * check and the event's type came only from the runtime's sources, which a receiver cannot import.
 */
import { describe, expect, it } from 'vitest';
import { signatureOf, type TaskEvent, verifySignature } from '../../client/sdk/index.ts';
import { webhookBody } from '../../runtime/events/webhooks.ts';

describe('Package entry: serverless-task-scheduler/client (webhook receivers)', () => {
  const event: TaskEvent = {
    id: 'evt_1',
    type: 'task.state_changed',
    time: '2026-12-03T10:00:00.000Z',
    taskId: 'tsk_1',
    tenantId: 'acme',
    taskType: 'demo.echo',
    state: 'SUCCEEDED',
    previousState: 'RUNNING',
    attempt: 1,
    sequence: 4,
  };

  it('verifies the x-signature of a delivered body over its raw bytes, and refuses a changed body or another secret', () => {
    // Prepare: the body and header as the delivery sends them
    const secret = 'at-least-16-characters';
    const raw = webhookBody(event);
    const header = signatureOf(secret, raw);
    // Act & Assess
    expect(verifySignature(secret, Buffer.from(raw), header)).toBe(true);
    expect(verifySignature(secret, raw.replace('SUCCEEDED', 'FAILED'), header)).toBe(false);
    expect(verifySignature('another-secret-of-16', raw, header)).toBe(false);
    expect(verifySignature(secret, raw, undefined)).toBe(false);
  });
});
