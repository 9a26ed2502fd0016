/**
 * A stack deployed before is updated in place (`cdk deploy` over it) while it holds tasks, so the
 * stateful resources must survive the update as they are (docs/deploy.md, "Upgrading a deployed
 * stack"):
 * - a table whose logical id or key schema changes is replaced: CloudFormation creates a new,
 *   empty table (the old one is retained, unread) and every task in it is gone for the scheduler;
 * - one update may create or delete only one global secondary index (DynamoDB UpdateTable), and
 *   an index's keys or projection cannot change in place;
 * - a queue whose logical id, name or type changes is replaced, with the messages in it.
 *
 * DEPLOYED is what the release before this one deployed (the same as this one's until a release
 * changes them). A change that fails here needs a plan before DEPLOYED is moved: an index added
 * in one release and the old one deleted in the next, and the upgrade documented.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { defaultConfigInput, type Synthesized, synthesize } from './helpers.ts';

type Index = string;
interface TableRecord {
  readonly keys: string;
  readonly indexes: readonly Index[];
}

/** `name pk/sk PROJECTION[attributes]`, the parts of an index that cannot change in place. */
const TASK_INDEXES: readonly Index[] = [
  'byTenantState tenantState/listKey KEYS_ONLY',
  'byLeased leasedShard/leasedAt INCLUDE[tenantId,priority,runtime,resources,fence,runAt,agingFrom,submittedAt]',
  'byActive activeShard/dueAt INCLUDE[tenantId,state,priority,runtime,resources,fence,runAt,agingFrom,submittedAt,leaseExpiresAt]',
  'byTenantQueue queueKey/queueSort INCLUDE[tenantId,priority,runtime,resources,agingFrom,runAt,fence]',
];

const DEPLOYED: {
  readonly tables: Readonly<Record<string, TableRecord>>;
  readonly queues: Readonly<Record<string, string>>;
} = {
  tables: {
    TablesTasksB0FA0D86: { keys: 'taskId', indexes: TASK_INDEXES },
    TablesControlDF2E6BDD: { keys: 'pk', indexes: [] },
  },
  // Logical id → name (the default configuration's stack name; `.fifo` is a FIFO queue).
  queues: Object.fromEntries(
    [
      ['QueuesTierCritical', 'E832DA1A', 'tier-critical'],
      ['QueuesTierCriticalDlq', '8A1EB92D', 'tier-critical-dlq'],
      ['QueuesTierHigh', '7C8F99C2', 'tier-high'],
      ['QueuesTierHighDlq', '3A4DD91A', 'tier-high-dlq'],
      ['QueuesTierNormal', '1EB255FB', 'tier-normal'],
      ['QueuesTierNormalDlq', 'A3D68A99', 'tier-normal-dlq'],
      ['QueuesTierLow', '0E13DF59', 'tier-low'],
      ['QueuesTierLowDlq', '475A0F55', 'tier-low-dlq'],
      ['QueuesWorkerLambda', '239AAD2F', 'worker-lambda'],
      ['QueuesWorkerLambdaDlq', '13FB4157', 'worker-lambda-dlq'],
      ['QueuesWorkerFargate', 'BC779DE2', 'worker-fargate'],
      ['QueuesWorkerFargateDlq', '50CC5C2A', 'worker-fargate-dlq'],
      ['QueuesCompletions', 'D806882B', 'completions'],
      ['EventsFailedRecords', '95EADA4C', 'task-events-failed'],
    ].map(([id, hash, name]) => [`${id}${hash}`, `TaskScheduler-${name}`]),
  ),
};

/** The queues a configuration with webhooks and two scheduler shards adds (see `withOptions`). */
const DEPLOYED_WITH_OPTIONS: Readonly<Record<string, string>> = Object.fromEntries(
  [
    ['QueuesTierCriticalS1', 'EC35D07E', 'tier-critical-s1'],
    ['QueuesTierCriticalS1Dlq', 'F36DBD53', 'tier-critical-s1-dlq'],
    ['QueuesTierHighS1', '100C33CE', 'tier-high-s1'],
    ['QueuesTierHighS1Dlq', 'CDC0D494', 'tier-high-s1-dlq'],
    ['QueuesTierNormalS1', '8375D35C', 'tier-normal-s1'],
    ['QueuesTierNormalS1Dlq', '39A4C93F', 'tier-normal-s1-dlq'],
    ['QueuesTierLowS1', 'AE944869', 'tier-low-s1'],
    ['QueuesTierLowS1Dlq', 'E581433A', 'tier-low-s1-dlq'],
    ['QueuesCompletionsS1', '1ABA19B2', 'completions-s1'],
    ['EventsDeliveryQueue', 'A5466E76', 'webhook-deliveries.fifo'],
    ['EventsDeliveryDeadLetters', '18B38B08', 'webhook-deliveries-dlq.fifo'],
  ].map(([id, hash, name]) => [`${id}${hash}`, `TaskScheduler-${name}`]),
);

interface CfnResource {
  readonly Type: string;
  readonly Properties?: Record<string, unknown>;
}

function tablesOf(synth: Synthesized): Record<string, TableRecord> {
  const resources = synth.template.toJSON().Resources as Record<string, CfnResource>;
  return Object.fromEntries(
    Object.entries(resources)
      .filter(([id, resource]) => resource.Type === 'AWS::DynamoDB::Table' && id in DEPLOYED.tables)
      .map(([id, resource]) => {
        const props = resource.Properties as {
          KeySchema: { AttributeName: string }[];
          GlobalSecondaryIndexes?: {
            IndexName: string;
            KeySchema: { AttributeName: string }[];
            Projection: { ProjectionType: string; NonKeyAttributes?: string[] };
          }[];
        };
        const keys = (schema: { AttributeName: string }[]) => schema.map((key) => key.AttributeName).join('/');
        const indexes = (props.GlobalSecondaryIndexes ?? []).map(
          (index) =>
            `${index.IndexName} ${keys(index.KeySchema)} ${index.Projection.ProjectionType}${
              index.Projection.NonKeyAttributes ? `[${index.Projection.NonKeyAttributes.join(',')}]` : ''
            }`,
        );
        return [id, { keys: keys(props.KeySchema), indexes }];
      }),
  );
}

function queuesOf(synth: Synthesized): Record<string, string> {
  const resources = synth.template.toJSON().Resources as Record<string, CfnResource>;
  return Object.fromEntries(
    Object.entries(resources)
      .filter(
        ([, resource]) => resource.Type === 'AWS::SQS::Queue' && typeof resource.Properties?.QueueName === 'string',
      )
      .map(([id, resource]) => [id, resource.Properties!.QueueName as string]),
  );
}

let synth: Synthesized;
let withOptions: Synthesized;
beforeAll(() => {
  synth = synthesize();
  const config = defaultConfigInput() as Record<string, unknown>;
  withOptions = synthesize({
    config: {
      ...config,
      scheduler: { ...(config.scheduler as object | undefined), shards: 2 },
      events: {
        webhooks: [
          {
            url: 'https://example.com/hook',
            secret: { secretArn: 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:hook-AbCdEf' },
          },
        ],
      },
    },
  });
});

describe('Upgrading a deployed stack in place', () => {
  it('keeps every table the release before deployed, under its logical id and with its key', () => {
    const tables = tablesOf(synth);
    for (const [id, deployed] of Object.entries(DEPLOYED.tables)) {
      expect(tables[id], `table ${id} would be deleted (replaced by an empty one)`).toBeDefined();
      expect(tables[id]!.keys, `table ${id}: a key change replaces the table`).toBe(deployed.keys);
    }
  });

  it('changes the indexes of a table by at most one index created or deleted, none changed in place', () => {
    const tables = tablesOf(synth);
    for (const [id, deployed] of Object.entries(DEPLOYED.tables)) {
      const now = tables[id]!.indexes;
      const name = (index: Index) => index.split(' ')[0];
      const changedInPlace = now.filter((index) =>
        deployed.indexes.some((old) => name(old) === name(index) && old !== index),
      );
      expect(changedInPlace, `table ${id}: an index's keys or projection cannot change in place`).toEqual([]);
      const created = now.filter((index) => !deployed.indexes.some((old) => name(old) === name(index)));
      const deleted = deployed.indexes.filter((old) => !now.some((index) => name(index) === name(old)));
      expect(
        created.length + deleted.length,
        `table ${id}: one update creates or deletes one index at most (created ${created.join(', ') || 'none'}; deleted ${deleted.join(', ') || 'none'})`,
      ).toBeLessThanOrEqual(1);
    }
  });

  it('keeps every queue the release before deployed, under its logical id and name', () => {
    const queues = queuesOf(synth);
    for (const [id, name] of Object.entries(DEPLOYED.queues)) {
      expect(queues[id], `queue ${name} (${id}) would be replaced, and the messages in it lost`).toBe(name);
    }
  });

  it('keeps the queues of webhooks and of a second scheduler shard as well', () => {
    const queues = queuesOf(withOptions);
    for (const [id, name] of Object.entries({ ...DEPLOYED.queues, ...DEPLOYED_WITH_OPTIONS })) {
      expect(queues[id], `queue ${name} (${id}) would be replaced, and the messages in it lost`).toBe(name);
    }
  });
});
