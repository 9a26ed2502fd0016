import { RemovalPolicy, Stack, Validations } from 'aws-cdk-lib';
import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as s3 from 'aws-cdk-lib/aws-s3';
import { Construct } from 'constructs';
import { EXAMPLE_BUCKET, EXAMPLE_TABLES, type ExampleResourceId } from '../runtime/infra/example-resources.ts';
import { tableFrom } from './task-tables.ts';

export interface ExampleStoresProps {
  /** @default true (as for the task tables: keep data unless the operator opts out) */
  readonly deletionProtection?: boolean;
}

/**
 * The data the example task types work on (photos, sales, orders, payments ledger, mismatches),
 * built from runtime/infra/example-resources.ts. Workers find the physical names in the
 * EXAMPLE_RESOURCES environment variable ({@link ExampleStores.names}).
 */
export class ExampleStores extends Construct {
  public readonly bucket: s3.Bucket;
  public readonly accessLogs: s3.Bucket;
  /** Example table id → table. */
  public readonly tables: ReadonlyMap<ExampleResourceId, dynamodb.Table>;

  constructor(scope: Construct, id: string, props: ExampleStoresProps = {}) {
    super(scope, id);
    const deletionProtection = props.deletionProtection ?? true;
    // An emptied bucket is deleted with the stack only when deletion protection is off.
    const removalPolicy = deletionProtection ? RemovalPolicy.RETAIN : RemovalPolicy.DESTROY;

    this.accessLogs = new s3.Bucket(this, 'AccessLogs', {
      blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
      encryption: s3.BucketEncryption.S3_MANAGED,
      enforceSSL: true,
      objectOwnership: s3.ObjectOwnership.BUCKET_OWNER_PREFERRED,
      removalPolicy,
    });
    this.bucket = new s3.Bucket(this, 'Data', {
      blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
      encryption: s3.BucketEncryption.S3_MANAGED,
      enforceSSL: true,
      serverAccessLogsBucket: this.accessLogs,
      serverAccessLogsPrefix: 'example-data/',
      removalPolicy,
    });

    const tables = new Map<ExampleResourceId, dynamodb.Table>();
    for (const definition of EXAMPLE_TABLES) {
      tables.set(definition.id, tableFrom(this, definition.id, definition, deletionProtection));
    }
    this.tables = tables;
  }

  /** Resource id → physical name: the value of EXAMPLE_RESOURCES. */
  public names(): Record<ExampleResourceId, string> {
    const names = { [EXAMPLE_BUCKET.id]: this.bucket.bucketName } as Record<ExampleResourceId, string>;
    for (const [id, table] of this.tables) names[id] = table.tableName;
    return names;
  }

  /** What the example handlers do: read and write the example tables, get and put objects. */
  public grantUse(grantee: iam.IGrantable): void {
    for (const table of this.tables.values()) table.grantReadWriteData(grantee);
    grantee.grantPrincipal.addToPrincipalPolicy(
      new iam.PolicyStatement({
        actions: ['s3:GetObject', 's3:PutObject'],
        resources: [this.bucket.arnForObjects('*')],
      }),
    );
    // Without ListBucket a missing object answers 403 instead of 404 (HeadObject existence checks).
    grantee.grantPrincipal.addToPrincipalPolicy(
      new iam.PolicyStatement({ actions: ['s3:ListBucket'], resources: [this.bucket.bucketArn] }),
    );
  }

  /** Acknowledgements for the wildcards {@link grantUse} necessarily creates, with their reasons. */
  public acknowledgeGrants(scope: Construct): void {
    const stack = Stack.of(this);
    const bucketId = stack.resolve(stack.getLogicalId(this.bucket.node.defaultChild as s3.CfnBucket)) as string;
    Validations.of(scope).acknowledge({
      id: `AwsSolutions-IAM5[Resource::<${bucketId}.Arn>/*]`,
      reason: 'Example handlers read photos and write thumbnails and reports under keys chosen per task.',
    });
    for (const definition of EXAMPLE_TABLES) {
      if (definition.indexes.length === 0) continue;
      const table = this.tables.get(definition.id)!;
      const tableId = stack.resolve(stack.getLogicalId(table.node.defaultChild as dynamodb.CfnTable)) as string;
      Validations.of(scope).acknowledge({
        id: `AwsSolutions-IAM5[Resource::<${tableId}.Arn>/index/*]`,
        reason: "Example handlers query the table's own byBusinessDate index (example-resources.ts).",
      });
    }
  }
}
