/**
 * The AWS change feed's dependencies step (runtime/handlers/task-events.ts): the stream function,
 * from the environment the stack sets, registers a held task when it sees its creation and settles
 * a marked dependency's dependents when it sees its end, against the emulators.
 */
import { marshall } from '@aws-sdk/util-dynamodb';
import type { Context, DynamoDBRecord, DynamoDBStreamEvent } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Emulators, startEmulators } from '../../local/emulators.ts';
import { buildServices, type Services } from '../../runtime/app/wiring.ts';
import { parseConfig } from '../../runtime/core/config.ts';
import { succeed } from '../../runtime/core/lifecycle.ts';
import type { Task } from '../../runtime/core/task.ts';
import { runningTask } from '../helpers/factories.ts';
import { lambdaEnvironment } from '../helpers/services.ts';

const config = { pools: { lambda: { concurrency: 5 }, fargate: { vcpu: 1, memoryMiB: 2048 } } };
const saved = { ...process.env };
let emulators: Emulators;
let services: Services;
let streamHandler: typeof import('../../runtime/handlers/task-events.ts').handler;

beforeAll(async () => {
  emulators = await startEmulators({ prefix: 'task-events-deps' });
  services = buildServices({
    config: parseConfig(config),
    clients: emulators.clients,
    resources: { tables: emulators.tables, queueUrls: emulators.queueUrls },
  });
  Object.assign(process.env, lambdaEnvironment(emulators, config));
  streamHandler = (await import('../../runtime/handlers/task-events.ts')).handler;
});
afterAll(async () => {
  process.env = saved;
  await emulators?.stop();
});

let sequence = 0;
const image = (task: Task) =>
  marshall(task, { removeUndefinedValues: true }) as NonNullable<DynamoDBRecord['dynamodb']>['NewImage'];
const record = (before: Task | undefined, after: Task): DynamoDBRecord => ({
  eventName: before ? 'MODIFY' : 'INSERT',
  dynamodb: {
    SequenceNumber: String(++sequence),
    NewImage: image(after),
    ...(before ? { OldImage: image(before) } : {}),
  },
});
const stream = (...records: DynamoDBRecord[]): DynamoDBStreamEvent => ({ Records: records });

describe('Handler: task-events (dependencies)', () => {
  it('registers a held task from its creation and releases it from its dependency’s end', async () => {
    // Prepare
    const dependency = await runningTask(services, { tenantId: 'stream-a' });
    const { task: dependent } = await services.tasks.submit({
      tenantId: 'stream-a',
      type: 'demo.echo',
      payload: {},
      dependsOn: [dependency.taskId],
    });

    // Act: the stream shows the dependent's creation, then the dependency's end.
    const registered = await streamHandler(stream(record(undefined, dependent)));
    const marked = (await services.store.get(dependency.taskId))!;
    const ended = await services.store.transition(dependency.taskId, (t) =>
      succeed(t, dependency.fence, new Date(), { ok: true }),
    );
    const settled = await streamHandler(stream(record(marked, ended)));

    // Assess
    expect(registered.batchItemFailures).toEqual([]);
    expect(marked.hasDependents).toBe(true);
    expect(settled.batchItemFailures).toEqual([]);
    const released = (await services.store.get(dependent.taskId))!;
    expect(released.state).toBe('QUEUED');
    expect(released.waitingOn).toBeUndefined();
  });

  it('leaves the changes it has no time for to the next invocation, from the first one not done', async () => {
    // Prepare: two held tasks' creations; the invocation has time for the first one's step only
    // (Lambda stops it at its timeout, and would retry the whole batch from its start).
    const dependency = await runningTask(services, { tenantId: 'stream-b' });
    const submit = async () =>
      (
        await services.tasks.submit({
          tenantId: 'stream-b',
          type: 'demo.echo',
          payload: {},
          dependsOn: [dependency.taskId],
        })
      ).task;
    const [first, second] = [await submit(), await submit()];
    const records = [record(undefined, first!), record(undefined, second!)];
    let asked = 0;
    const context = {
      functionName: 'stream',
      awsRequestId: 'req',
      // Plenty at the start and for the first change; then less than one more step may take.
      getRemainingTimeInMillis: () => (++asked <= 2 ? 60_000 : 1_000),
    } as unknown as Context;

    // Act
    const response = await streamHandler(stream(...records), context);

    // Assess: the first is registered; the second is retried from its own record.
    expect(response.batchItemFailures).toEqual([{ itemIdentifier: records[1]!.dynamodb!.SequenceNumber }]);
    expect(await services.dependencies.dependentsOf(dependency.taskId)).toEqual([first!.taskId]);
  });
});
