import { Match } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, expect, it } from 'vitest';
import { DEAD_LETTER_VISIBILITY_SECONDS } from '../../lib/task-queues.ts';
import { EXAMPLE_TABLES } from '../../runtime/infra/example-resources.ts';
import { CONTROL_TABLE, QUEUES, TASKS_TABLE } from '../../runtime/infra/resources.ts';
import { defaultConfigInput, logicalId, type Synthesized, synthesize } from './helpers.ts';

let synth: Synthesized;
beforeAll(() => {
  synth = synthesize();
});

describe('Construct: TaskTables', () => {
  it('builds the task table from TASKS_TABLE: key, TTL, every index with its projection', () => {
    // Prepare
    const { template, stack } = synth;
    const expectedIndexes = TASKS_TABLE.indexes.map((index) => ({
      IndexName: index.indexName,
      KeySchema: [
        { AttributeName: index.partitionKey, KeyType: 'HASH' },
        ...(index.sortKey ? [{ AttributeName: index.sortKey, KeyType: 'RANGE' }] : []),
      ],
      Projection:
        index.nonKeyAttributes.length > 0
          ? { ProjectionType: 'INCLUDE', NonKeyAttributes: [...index.nonKeyAttributes] }
          : { ProjectionType: 'KEYS_ONLY' },
    }));

    // Act
    const table = template.toJSON().Resources[logicalId(stack, stack.tables.tasks)];

    // Assess
    expect(table.Properties.KeySchema).toEqual([{ AttributeName: TASKS_TABLE.partitionKey, KeyType: 'HASH' }]);
    expect(table.Properties.TimeToLiveSpecification).toEqual({
      AttributeName: TASKS_TABLE.ttlAttribute,
      Enabled: true,
    });
    expect(table.Properties.GlobalSecondaryIndexes).toEqual(expectedIndexes);
    expect(table.Properties.BillingMode).toBe('PAY_PER_REQUEST');
    expect(table.Properties.PointInTimeRecoverySpecification).toEqual({ PointInTimeRecoveryEnabled: true });
  });

  it('builds the control table from CONTROL_TABLE with no index and no TTL', () => {
    const { template, stack } = synth;
    const table = template.toJSON().Resources[logicalId(stack, stack.tables.control)];
    expect(table.Properties.KeySchema).toEqual([{ AttributeName: CONTROL_TABLE.partitionKey, KeyType: 'HASH' }]);
    expect(table.Properties.GlobalSecondaryIndexes).toBeUndefined();
    expect(table.Properties.TimeToLiveSpecification).toBeUndefined();
    expect(table.Properties.PointInTimeRecoverySpecification).toEqual({ PointInTimeRecoveryEnabled: true });
  });

  it('protects every table from deletion by default, and keeps it when the stack goes', () => {
    const tables = synth.template.findResources('AWS::DynamoDB::Table');
    // Tasks, control, the lease ledger, and the example task types' tables.
    expect(Object.keys(tables)).toHaveLength(3 + EXAMPLE_TABLES.length);
    for (const table of Object.values(tables)) {
      expect(table.Properties.DeletionProtectionEnabled).toBe(true);
      expect(table.DeletionPolicy).toBe('Retain');
    }
  });

  it('drops deletion protection when deploy.deletionProtection is false', () => {
    // Prepare
    const input = defaultConfigInput();

    // Act
    const { template } = synthesize({
      config: { ...input, deploy: { ...input.deploy, deletionProtection: false } },
    });

    // Assess
    for (const table of Object.values(template.findResources('AWS::DynamoDB::Table'))) {
      expect(table.Properties.DeletionProtectionEnabled).toBe(false);
      expect(table.DeletionPolicy).toBe('Delete');
    }
  });
});

describe('Construct: TaskQueues', () => {
  it('creates each queue of QUEUES with its visibility, retention and redrive policy', () => {
    const { template, stack } = synth;
    for (const definition of QUEUES) {
      const { queue, deadLetterQueue } = stack.queues.get(definition.id);
      const properties = template.toJSON().Resources[logicalId(stack, queue)].Properties;
      expect(properties.VisibilityTimeout, definition.id).toBe(definition.visibilityTimeoutSeconds);
      expect(properties.MessageRetentionPeriod, definition.id).toBe(definition.retentionSeconds);
      expect(properties.SqsManagedSseEnabled, definition.id).toBe(true);
      if (definition.deadLetter && deadLetterQueue) {
        expect(properties.RedrivePolicy, definition.id).toEqual({
          deadLetterTargetArn: { 'Fn::GetAtt': [logicalId(stack, deadLetterQueue), 'Arn'] },
          maxReceiveCount: definition.deadLetter.maxReceiveCount,
        });
        const dlq = template.toJSON().Resources[logicalId(stack, deadLetterQueue)].Properties;
        expect(dlq.MessageRetentionPeriod, definition.deadLetter.id).toBe(definition.deadLetter.retentionSeconds);
        // SQS ages a dead-lettered message from its first enqueue: a dead-letter queue that kept
        // messages no longer than its source could drop one the moment it arrived.
        expect(dlq.MessageRetentionPeriod, definition.deadLetter.id).toBeGreaterThan(definition.retentionSeconds);
        expect(dlq.VisibilityTimeout).toBe(DEAD_LETTER_VISIBILITY_SECONDS);
        expect(dlq.SqsManagedSseEnabled).toBe(true);
      } else {
        expect(properties.RedrivePolicy, definition.id).toBeUndefined();
      }
    }
  });

  it('refuses plain HTTP on every queue', () => {
    const queues = synth.template.findResources('AWS::SQS::Queue');
    const policies = synth.template.findResources('AWS::SQS::QueuePolicy', {
      Properties: {
        PolicyDocument: {
          Statement: Match.arrayWith([
            Match.objectLike({
              Effect: 'Deny',
              Action: 'sqs:*',
              Condition: { Bool: { 'aws:SecureTransport': 'false' } },
            }),
          ]),
        },
      },
    });
    const covered = new Set(
      Object.values(policies).flatMap((policy) =>
        (policy.Properties.Queues as { Ref: string }[]).map((queue) => queue.Ref),
      ),
    );
    expect([...covered].sort()).toEqual(Object.keys(queues).sort());
  });
});
