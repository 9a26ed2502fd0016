import type * as iam from 'aws-cdk-lib/aws-iam';
import { beforeAll, describe, expect, it } from 'vitest';
import { grantsOf, logicalId, resourcesFor, type Synthesized, synthesize } from './helpers.ts';

let synth: Synthesized;
let ids: {
  tasks: string;
  control: string;
  leases: string;
  tiers: string[];
  workerLambda: string;
  workerFargate: string;
  completions: string;
  workerDlqs: string[];
  tierDlqs: string[];
  exampleTables: string[];
  exampleBucket: string;
};
beforeAll(() => {
  synth = synthesize();
  const { stack } = synth;
  ids = {
    tasks: logicalId(stack, stack.tables.tasks),
    control: logicalId(stack, stack.tables.control),
    leases: logicalId(stack, stack.tables.leases),
    tiers: stack.queues.tiers.map((tier) => logicalId(stack, tier.queue)).sort(),
    workerLambda: logicalId(stack, stack.queues.get('worker-lambda').queue),
    workerFargate: logicalId(stack, stack.queues.get('worker-fargate').queue),
    completions: logicalId(stack, stack.queues.completions.queue),
    workerDlqs: stack.queues.workers.map((worker) => logicalId(stack, worker.deadLetterQueue!)).sort(),
    tierDlqs: stack.queues.tiers.map((tier) => logicalId(stack, tier.deadLetterQueue!)).sort(),
    exampleTables: [...stack.exampleStores.tables.values()].map((table) => logicalId(stack, table)),
    exampleBucket: logicalId(stack, stack.exampleStores.bucket),
  };
});

const grantsFor = (role: iam.IRole) => grantsOf(synth.template, logicalId(synth.stack, role));
/** Logical ids of the tables a role may write items to. */
const writableTables = (grants: Set<string>) =>
  resourcesFor(grants, 'dynamodb:PutItem').filter((resource) => !resource.includes('/index/'));
/** Logical ids of the tables a role may read items from (Query). */
const readableTables = (grants: Set<string>) =>
  resourcesFor(grants, 'dynamodb:Query').filter((resource) => !resource.includes('/index/'));
const sorted = (...lists: (string | string[])[]) => lists.flat().sort();

describe('Least privilege per function', () => {
  it('API: tasks and tenant settings, reads the lease ledger, and enqueueing to the tiers only', () => {
    const grants = grantsFor(synth.stack.api.handler.role);
    expect(writableTables(grants)).toEqual(sorted(ids.tasks, ids.control));
    expect(readableTables(grants)).toEqual(sorted(ids.tasks, ids.control, ids.leases));
    // A batch's creates: PartiQL INSERTs into the task table only.
    expect(resourcesFor(grants, 'dynamodb:PartiQLInsert').filter((resource) => !resource.includes('/index/'))).toEqual([
      ids.tasks,
    ]);
    expect(resourcesFor(grants, 'sqs:SendMessage')).toEqual(ids.tiers);
    expect(resourcesFor(grants, 'sqs:ReceiveMessage')).toEqual([]);
    expect(resourcesFor(grants, 's3:GetObject')).toEqual([]);
  });

  it('scheduler: reads tiers and completions, dispatches to the worker queues, keeps the lease ledger', () => {
    const grants = grantsFor(synth.stack.scheduler.handler.role);
    expect(writableTables(grants)).toEqual(sorted(ids.tasks, ids.control, ids.leases));
    expect(resourcesFor(grants, 'sqs:ReceiveMessage')).toEqual(sorted(ids.tiers, ids.completions));
    expect(resourcesFor(grants, 'sqs:ChangeMessageVisibility')).toEqual(sorted(ids.tiers, ids.completions));
    expect(resourcesFor(grants, 'sqs:SendMessage')).toEqual(sorted(ids.tiers, ids.workerLambda, ids.workerFargate));
  });

  it('Lambda worker: its own queue, completions, retries to tiers, the example data; no tenant settings', () => {
    const grants = grantsFor(synth.stack.lambdaWorkers.handler.role);
    expect(resourcesFor(grants, 'sqs:ReceiveMessage')).toEqual([ids.workerLambda]);
    expect(resourcesFor(grants, 'sqs:SendMessage')).toEqual(sorted(ids.tiers, ids.completions));
    expect(writableTables(grants)).toEqual(sorted(ids.tasks, ids.exampleTables));
    expect(resourcesFor(grants, 's3:GetObject')).toEqual([`${ids.exampleBucket}/*`]);
    expect(resourcesFor(grants, 's3:PutObject')).toEqual([`${ids.exampleBucket}/*`]);
  });

  it('Lambda worker of a bigger memory class: what the entry may do but consume the queue', () => {
    for (const { handler } of synth.stack.lambdaWorkers.classes.slice(1)) {
      const grants = grantsFor(handler.role);
      expect(resourcesFor(grants, 'sqs:ReceiveMessage'), handler.node.path).toEqual([]);
      expect(resourcesFor(grants, 'sqs:SendMessage'), handler.node.path).toEqual(sorted(ids.tiers, ids.completions));
      expect(writableTables(grants), handler.node.path).toEqual(sorted(ids.tasks, ids.exampleTables));
      expect(resourcesFor(grants, 's3:GetObject'), handler.node.path).toEqual([`${ids.exampleBucket}/*`]);
    }
  });

  it('Fargate worker task role: the same as the Lambda worker, on its own queue', () => {
    const grants = grantsFor(synth.stack.fargateWorkers.taskDefinition.taskRole);
    expect(resourcesFor(grants, 'sqs:ReceiveMessage')).toEqual([ids.workerFargate]);
    expect(resourcesFor(grants, 'sqs:ChangeMessageVisibility')).toEqual([ids.workerFargate]);
    expect(resourcesFor(grants, 'sqs:SendMessage')).toEqual(sorted(ids.tiers, ids.completions));
    expect(writableTables(grants)).toEqual(sorted(ids.tasks, ids.exampleTables));
    // Scale-in protection of its own tasks, in its own cluster only.
    const cluster = logicalId(synth.stack, synth.stack.fargateWorkers.cluster);
    for (const action of ['ecs:UpdateTaskProtection', 'ecs:GetTaskProtection']) {
      const resources = resourcesFor(grants, action);
      expect(resources, action).toHaveLength(1);
      expect(resources[0], action).toContain(cluster);
      expect(resources[0], action).toMatch(/:task\/.*\/\*/);
    }
  });

  it('redrive: the worker and tier dead-letter queues in, tiers and completions out, the task table only', () => {
    const grants = grantsFor(synth.stack.redrive.handler.role);
    // And the task events' failed stream batches (no webhooks in the default configuration).
    expect(resourcesFor(grants, 'sqs:ReceiveMessage')).toEqual(
      sorted(ids.workerDlqs, ids.tierDlqs, [logicalId(synth.stack, synth.stack.events.failedRecords)]),
    );
    expect(resourcesFor(grants, 'sqs:SendMessage')).toEqual(sorted(ids.tiers, ids.completions));
    expect(writableTables(grants)).toEqual([ids.tasks]);
  });

  it('scheduled submit: creates tasks, reads (never writes) tenant settings, enqueues to tiers', () => {
    const grants = grantsFor(synth.stack.schedules!.handler.role);
    expect(writableTables(grants)).toEqual([ids.tasks]);
    const readable = resourcesFor(grants, 'dynamodb:GetItem').filter((resource) => !resource.includes('/index/'));
    expect(readable).toEqual(sorted(ids.tasks, ids.control));
    expect(resourcesFor(grants, 'sqs:SendMessage')).toEqual(ids.tiers);
    expect(resourcesFor(grants, 'sqs:ReceiveMessage')).toEqual([]);
  });

  it('each function writes logs to its own log group only', () => {
    const { stack } = synth;
    const wrappers = [
      stack.api.handler,
      stack.scheduler.handler,
      ...stack.lambdaWorkers.functions,
      stack.redrive.handler,
      stack.schedules!.handler,
    ];
    for (const wrapper of wrappers) {
      expect(resourcesFor(grantsFor(wrapper.role), 'logs:PutLogEvents'), wrapper.node.path).toEqual([
        logicalId(stack, wrapper.logGroup),
      ]);
    }
  });

  it('EventBridge Scheduler may invoke only its target function, and write the schedules dead-letter queue', () => {
    const { stack } = synth;
    expect(resourcesFor(grantsFor(stack.scheduler.invokeRole), 'lambda:InvokeFunction')).toEqual([
      logicalId(stack, stack.scheduler.handler.function),
    ]);
    const schedulesGrants = grantsFor(stack.schedules!.invokeRole);
    expect(resourcesFor(schedulesGrants, 'lambda:InvokeFunction')).toEqual([
      logicalId(stack, stack.schedules!.handler.function),
    ]);
    expect(resourcesFor(schedulesGrants, 'sqs:SendMessage')).toEqual([
      logicalId(stack, stack.schedules!.deadLetterQueue),
    ]);
  });
});
