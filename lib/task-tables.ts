import { RemovalPolicy } from 'aws-cdk-lib';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import { Construct } from 'constructs';
import { CONTROL_TABLE, LEASES_TABLE, TASKS_TABLE, type TableDefinition } from '../runtime/infra/resources.ts';

export interface TaskTablesProps {
  /**
   * Refuse table deletion (DynamoDB deletion protection) and keep the tables when the stack is
   * deleted. Turn off only for throwaway stacks.
   * @default true
   */
  readonly deletionProtection?: boolean;
}

/**
 * The task table, the control table (tenant settings, scheduler lease) and the lease ledger, built from the shared
 * definitions: keys, index names, projections and the TTL attribute come from resources.ts.
 */
export class TaskTables extends Construct {
  public readonly tasks: dynamodb.Table;
  public readonly control: dynamodb.Table;
  /** The lease ledger: which tasks are dispatched or running (runtime/adapters/lease-pages.ts). */
  public readonly leases: dynamodb.Table;

  constructor(scope: Construct, id: string, props: TaskTablesProps = {}) {
    super(scope, id);
    const deletionProtection = props.deletionProtection ?? true;
    this.tasks = tableFrom(this, 'Tasks', TASKS_TABLE, deletionProtection);
    this.control = tableFrom(this, 'Control', CONTROL_TABLE, deletionProtection);
    this.leases = tableFrom(this, 'Leases', LEASES_TABLE, deletionProtection);
  }
}

/** Every key attribute in the definitions is a string (see resources.ts and example-resources.ts). */
const stringKey = (name: string): dynamodb.Attribute => ({ name, type: dynamodb.AttributeType.STRING });

export function tableFrom(scope: Construct, id: string, definition: TableDefinition, deletionProtection: boolean) {
  const table = new dynamodb.Table(scope, id, {
    partitionKey: stringKey(definition.partitionKey),
    ...(definition.sortKey ? { sortKey: stringKey(definition.sortKey) } : {}),
    // Load follows submissions, which are bursty and often idle: pay per request.
    billingMode: dynamodb.BillingMode.PAY_PER_REQUEST,
    pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
    encryption: dynamodb.TableEncryption.AWS_MANAGED,
    deletionProtection,
    removalPolicy: deletionProtection ? RemovalPolicy.RETAIN : RemovalPolicy.DESTROY,
    timeToLiveAttribute: definition.ttlAttribute,
    ...(definition.stream ? { stream: dynamodb.StreamViewType[definition.stream] } : {}),
  });
  for (const index of definition.indexes) {
    table.addGlobalSecondaryIndex({
      indexName: index.indexName,
      partitionKey: stringKey(index.partitionKey),
      ...(index.sortKey ? { sortKey: stringKey(index.sortKey) } : {}),
      ...(index.nonKeyAttributes.length > 0
        ? { projectionType: dynamodb.ProjectionType.INCLUDE, nonKeyAttributes: [...index.nonKeyAttributes] }
        : { projectionType: dynamodb.ProjectionType.KEYS_ONLY }),
    });
  }
  return table;
}
