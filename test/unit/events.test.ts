/**
 * Task events in the core (issue 27): which writes are events, how they are numbered, the
 * webhook filters and signature, and the configuration of webhooks.
 */
import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../runtime/core/config.ts';
import {
  matchesFilters,
  signatureOf,
  stateChangeEvent,
  type TaskEvent,
  taskEventId,
  verifySignature,
  webhookRetryDelayMs,
} from '../../runtime/core/events.ts';
import {
  cancel,
  createTask,
  creationEvent,
  dispatch,
  expireLease,
  fail,
  heartbeat,
  retry,
  start,
  succeed,
} from '../../runtime/core/lifecycle.ts';
import { checkWebhookFilterTypes, localWebhookTargets } from '../../runtime/events/webhooks.ts';
import { defaultRegistry } from '../../runtime/task-types/index.ts';
import { taskSpec } from '../helpers/factories.ts';

const at = (seconds: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, seconds));

describe('Module: core/events', () => {
  it('numbers state changes 1, 2, 3 ... across retries and lease expiries; lease renewals and cancel requests are no events', () => {
    // Prepare
    const events: TaskEvent[] = [];
    let task = createTask('tsk_1', taskSpec({ maxAttempts: 3 }), at(0));
    events.push(creationEvent(task));
    const step = (plan: { next: typeof task; event?: TaskEvent } | undefined) => {
      if (!plan) throw new Error('no plan');
      if (plan.event) events.push(plan.event);
      task = plan.next;
    };

    // Act
    step(dispatch(task, at(1), 120));
    step(start(task, task.fence, at(2), 60));
    step(heartbeat(task, task.fence, at(3), 60));
    step(fail(task, task.fence, at(4), { name: 'E', message: 'x', retryable: true }, 1000));
    step(dispatch(task, at(6), 120));
    step(start(task, task.fence, at(7), 60));
    step(cancel(task, at(8)));
    step(expireLease(task, at(200), 0));

    // Assess
    expect(events.map((e) => [e.sequence, e.previousState, e.state, e.attempt])).toEqual([
      [1, null, 'QUEUED', 0],
      [2, 'QUEUED', 'DISPATCHED', 0],
      [3, 'DISPATCHED', 'RUNNING', 1],
      [4, 'RUNNING', 'QUEUED', 1],
      [5, 'QUEUED', 'DISPATCHED', 1],
      [6, 'DISPATCHED', 'RUNNING', 2],
      [7, 'RUNNING', 'CANCELLED', 2],
    ]);
    expect(events.map((e) => e.time)).toEqual([0, 1, 2, 4, 6, 7, 200].map((s) => at(s).toISOString()));
    expect(task.eventSequence).toBe(7);
    expect(new Set(events.map((e) => e.id)).size).toBe(events.length);
    expect(events[0]).toEqual({
      id: taskEventId('tsk_1', at(0).toISOString(), 1),
      type: 'task.state_changed',
      time: at(0).toISOString(),
      taskId: 'tsk_1',
      tenantId: task.tenantId,
      taskType: task.type,
      state: 'QUEUED',
      previousState: null,
      attempt: 0,
      sequence: 1,
    });
  });

  it('gives the same change the same id from the item before and after (as the stream images give it)', () => {
    // Prepare
    const queued = createTask('tsk_2', taskSpec(), at(0));
    const plan = dispatch(queued, at(1), 120);

    // Act
    const fromImages = stateChangeEvent(queued, plan.next);

    // Assess
    expect(fromImages).toEqual(plan.event);
    expect(stateChangeEvent(plan.next, plan.next)).toBeUndefined();
    expect(taskEventId('tsk_2', at(0).toISOString(), 2)).not.toBe(taskEventId('tsk_2', at(9).toISOString(), 2));
  });

  it('keeps numbering an operator retry of a finished task', () => {
    // Prepare
    let task = createTask('tsk_3', taskSpec(), at(0));
    task = dispatch(task, at(1), 120).next;
    task = start(task, task.fence, at(2), 60).next;
    task = succeed(task, task.fence, at(3), null).next;

    // Act (a SUCCEEDED task cannot be retried: fail one instead)
    const failed = fail(
      start(dispatch(createTask('tsk_4', taskSpec({ maxAttempts: 1 }), at(0)), at(1), 120).next, 1, at(2), 60).next,
      1,
      at(3),
      { name: 'E', message: 'x', retryable: false },
      0,
    ).next;
    const retried = retry(failed, at(9));

    // Assess
    expect(task.eventSequence).toBe(4);
    expect(retried.event).toMatchObject({ sequence: 5, previousState: 'FAILED', state: 'QUEUED' });
  });

  it('filters by tenant, task type and state; no filters take everything', () => {
    const event = creationEvent(createTask('tsk_5', taskSpec({ tenantId: 'acme', type: 'demo.echo' }), at(0)));
    expect(matchesFilters(undefined, event)).toBe(true);
    expect(matchesFilters({ tenantId: ['acme'] }, event)).toBe(true);
    expect(matchesFilters({ tenantId: ['other'] }, event)).toBe(false);
    expect(matchesFilters({ taskType: ['demo.echo'], state: ['QUEUED'] }, event)).toBe(true);
    expect(matchesFilters({ taskType: ['demo.echo'], state: ['FAILED'] }, event)).toBe(false);
  });

  it('signs as sha256=<hex HMAC-SHA256 of the raw body> and verifies only the same secret and body', () => {
    const body = '{"id":"evt_1"}';
    const expected = `sha256=${createHmac('sha256', 'k'.repeat(16)).update(body).digest('hex')}`;
    expect(signatureOf('k'.repeat(16), body)).toBe(expected);
    expect(verifySignature('k'.repeat(16), body, expected)).toBe(true);
    expect(verifySignature('k'.repeat(16), `${body} `, expected)).toBe(false);
    expect(verifySignature('k'.repeat(16), body, undefined)).toBe(false);
  });

  it('backs off a failing webhook from about a second up to five minutes', () => {
    expect(webhookRetryDelayMs(1, () => 1)).toBe(2000);
    expect(webhookRetryDelayMs(1, () => 0)).toBe(1000);
    expect(webhookRetryDelayMs(30, () => 1)).toBe(300_000);
  });
});

describe('Function: parseConfig (events)', () => {
  it('takes webhooks with a secret, a Secrets Manager ARN and filters', () => {
    const config = parseConfig({
      events: {
        webhooks: [
          {
            url: 'https://example.com/hook',
            secret: 's'.repeat(16),
            filters: { state: ['FAILED'], tenantId: ['acme'] },
          },
          {
            url: 'http://127.0.0.1:9000/x',
            secret: { secretArn: 'arn:aws:secretsmanager:us-east-1:123456789012:secret:hook-AbCdEf' },
          },
        ],
      },
    });
    expect(config.events.webhooks).toHaveLength(2);
    expect(parseConfig({}).events).toEqual({ webhooks: [] });
  });

  it.each([
    [{ url: 'ftp://example.com', secret: 's'.repeat(16) }, 'events.webhooks.0.url: must be an http(s) URL'],
    [{ url: 'https://example.com', secret: 'short' }, 'events.webhooks.0.secret'],
    [
      { url: 'https://example.com', secret: 's'.repeat(16), filters: { state: ['DONE'] } },
      'events.webhooks.0.filters.state.0',
    ],
    [{ url: 'https://example.com', secret: 's'.repeat(16), extra: 1 }, 'events.webhooks.0'],
  ])('refuses %j naming the key', (webhook, key) => {
    expect(() => parseConfig({ events: { webhooks: [webhook] } })).toThrow(key);
  });

  it('refuses a Secrets Manager ARN locally, naming the webhook', () => {
    const config = parseConfig({
      events: {
        webhooks: [
          {
            url: 'https://example.com/hook',
            secret: { secretArn: 'arn:aws:secretsmanager:us-east-1:123456789012:secret:hook-AbCdEf' },
          },
        ],
      },
    });
    expect(() => localWebhookTargets(config.events.webhooks)).toThrow(
      'events.webhooks.0.secret: a Secrets Manager ARN is read on AWS only; locally give the secret itself',
    );
  });

  it('refuses a filters.taskType no task type has (a typo would pass no event at all), naming the key', () => {
    const config = parseConfig({
      events: {
        webhooks: [
          { url: 'https://example.com/a', secret: 's'.repeat(16), filters: { taskType: ['demo.echo'] } },
          { url: 'https://example.com/b', secret: 's'.repeat(16), filters: { taskType: ['demo.echo', 'demo.ech0'] } },
        ],
      },
    });
    const registry = defaultRegistry();
    expect(() => checkWebhookFilterTypes(config.events.webhooks, registry)).toThrow(
      /events\.webhooks\.1\.filters\.taskType: unknown task type "demo\.ech0", so no event would pass \(known: demo\.echo, /,
    );
    expect(() => checkWebhookFilterTypes(config.events.webhooks.slice(0, 1), registry)).not.toThrow();
  });
});
