/** `scheduler.shards` in the stack: every shard's queues, found by the functions, granted as needed. */
import { beforeAll, describe, expect, it } from 'vitest';
import { resourcesFromEnvironment } from '../../runtime/app/wiring.ts';
import { ENV, queuesFor } from '../../runtime/infra/resources.ts';
import { defaultConfigInput, grantsOf, logicalId, type Synthesized, synthesize } from './helpers.ts';

const SHARDS = 4;
let synth: Synthesized;
let single: Synthesized;
beforeAll(() => {
  const config = defaultConfigInput();
  synth = synthesize({ config: { ...config, scheduler: { ...config.scheduler, shards: SHARDS } } });
  single = synthesize();
});

const queueNames = (s: Synthesized) =>
  Object.values(s.template.findResources('AWS::SQS::Queue')).map(
    (queue) => (queue.Properties as { QueueName: string }).QueueName,
  );

describe('Stack: scheduler.shards', () => {
  it("creates every shard's tier, tier dead-letter and completions queues", () => {
    const names = new Set(queueNames(synth));
    const prefix = synth.stack.stackName;
    for (const queue of queuesFor(SHARDS)) {
      expect(names.has(`${prefix}-${queue.id}`), queue.id).toBe(true);
      if (queue.deadLetter) expect(names.has(`${prefix}-${queue.deadLetter.id}`), queue.deadLetter.id).toBe(true);
    }
    // 3 more shards: 4 tier queues, 4 tier DLQs and a completions queue each.
    expect(queueNames(synth).length - queueNames(single).length).toBe(3 * 9);
  });

  it("tells the functions where further shards' queues are without listing them (4 KB of environment)", () => {
    const scheduler = synth.template.toJSON().Resources[logicalId(synth.stack, synth.stack.scheduler.handler.function)];
    const variables = scheduler.Properties.Environment.Variables as Record<string, unknown>;
    expect(variables[ENV.queueUrlPrefix]).toBeDefined();
    const singleScheduler =
      single.template.toJSON().Resources[logicalId(single.stack, single.stack.scheduler.handler.function)];
    expect(singleScheduler.Properties.Environment.Variables[ENV.queueUrlPrefix]).toBeUndefined();
    // QUEUE_URLS lists shard 0's queues only, as with one shard.
    expect(JSON.stringify(variables[ENV.queueUrls])).toBe(
      JSON.stringify(singleScheduler.Properties.Environment.Variables[ENV.queueUrls]),
    );
  });

  it("lets the scheduler consume, and the workers report to, every shard's completions queue", () => {
    const { stack, template } = synth;
    const completions = synth.stack.queues.completionQueues;
    expect(completions).toHaveLength(SHARDS);
    const scheduler = grantsOf(template, logicalId(stack, stack.scheduler.handler.role));
    const worker = grantsOf(template, logicalId(stack, stack.lambdaWorkers.handler.role));
    for (const queue of completions) {
      const id = logicalId(stack, queue.queue);
      expect(scheduler.has(`sqs:ReceiveMessage ${id}`), id).toBe(true);
      expect(worker.has(`sqs:SendMessage ${id}`), id).toBe(true);
    }
    const api = grantsOf(template, logicalId(stack, stack.api.handler.role));
    for (const queue of synth.stack.queues.tiers) {
      expect(api.has(`sqs:SendMessage ${logicalId(stack, queue.queue)}`)).toBe(true);
    }
    expect(synth.stack.queues.tiers).toHaveLength(4 * SHARDS);
  });
});

describe('Function: resourcesFromEnvironment with QUEUE_URL_PREFIX', () => {
  it("adds every shard's queue URL from the prefix, keeping those QUEUE_URLS lists", () => {
    const resources = resourcesFromEnvironment({
      [ENV.tasksTable]: 't',
      [ENV.controlTable]: 'c',
      [ENV.leasesTable]: 'l',
      [ENV.queueUrls]: JSON.stringify({ 'tier-high': 'https://listed/tier-high' }),
      [ENV.queueUrlPrefix]: 'https://sqs.eu-west-1.amazonaws.com/123456789012/Stack-',
      [ENV.configJson]: JSON.stringify({ scheduler: { shards: 2 } }),
    });
    expect(resources.queueUrls['tier-high']).toBe('https://listed/tier-high');
    expect(resources.queueUrls['tier-high-s1']).toBe(
      'https://sqs.eu-west-1.amazonaws.com/123456789012/Stack-tier-high-s1',
    );
    expect(resources.queueUrls['tier-high-s1-dlq']).toBe(
      'https://sqs.eu-west-1.amazonaws.com/123456789012/Stack-tier-high-s1-dlq',
    );
    expect(resources.queueUrls['completions-s1']).toBe(
      'https://sqs.eu-west-1.amazonaws.com/123456789012/Stack-completions-s1',
    );
    expect(resources.queueUrls['completions-s2']).toBeUndefined();
  });
});
