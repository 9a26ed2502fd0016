/**
 * Local creation of the example data stores (the local runtime and the tests call it; it
 * imports the emulator module, so handlers never import this file). On AWS the CDK stack
 * creates the same bucket and tables from runtime/infra/example-resources.ts.
 */
import {
  CreateTableCommand,
  DescribeTableCommand,
  type DynamoDBClient,
  ResourceNotFoundException,
} from '@aws-sdk/client-dynamodb';
import { CreateBucketCommand, HeadBucketCommand, type S3Client } from '@aws-sdk/client-s3';
import { EXAMPLE_BUCKET, EXAMPLE_TABLES } from '../../infra/example-resources.ts';
import { createTableInput } from '../../infra/table-input.ts';
import type { ExampleResourceNames } from './stores.ts';

export type { ExampleResourceNames };

/**
 * Create the example bucket and tables if missing (idempotent: safe on every start) and return
 * their names. Names are `${prefix}-${id}`, lower-case so they are valid bucket names.
 */
export async function ensureExampleResources(
  clients: { readonly dynamodb: DynamoDBClient; readonly s3: S3Client },
  prefix: string,
): Promise<ExampleResourceNames> {
  const bucket = `${prefix}-${EXAMPLE_BUCKET.id}`.toLowerCase();
  if (!/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(bucket)) {
    throw new Error(`Prefix "${prefix}" gives an invalid bucket name "${bucket}"`);
  }
  await ensureBucket(clients.s3, bucket);
  const names: Record<string, string> = { [EXAMPLE_BUCKET.id]: bucket };
  for (const table of EXAMPLE_TABLES) {
    const tableName = `${prefix}-${table.id}`;
    try {
      await clients.dynamodb.send(new DescribeTableCommand({ TableName: tableName }));
    } catch (error) {
      if (!(error instanceof ResourceNotFoundException)) throw error;
      await clients.dynamodb.send(new CreateTableCommand(createTableInput(table, tableName)));
    }
    names[table.id] = tableName;
  }
  return names as ExampleResourceNames;
}

async function ensureBucket(s3: S3Client, bucket: string): Promise<void> {
  try {
    await s3.send(new HeadBucketCommand({ Bucket: bucket }));
    return;
  } catch (error) {
    // HeadBucket answers a bare 404 (no error code in the body), so check the status.
    const status = (error as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
    if (status !== 404 && (error as Error).name !== 'NotFound') throw error;
  }
  try {
    await s3.send(new CreateBucketCommand({ Bucket: bucket }));
  } catch (error) {
    // Another process created it between our check and our create.
    if ((error as Error).name !== 'BucketAlreadyOwnedByYou') throw error;
  }
}
