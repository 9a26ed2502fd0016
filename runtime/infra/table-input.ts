/**
 * A table definition (resources.ts) as DynamoDB's CreateTable input: on-demand billing, string
 * keys, each index projecting its key attributes plus the listed ones. A pure mapping; the
 * emulators and the examples' resource setup create their tables with it, the CDK stack builds
 * the same shape in lib/task-tables.ts.
 */
import type { CreateTableCommandInput } from '@aws-sdk/client-dynamodb';
import type { TableDefinition } from './resources.ts';

export function createTableInput(table: TableDefinition, tableName: string): CreateTableCommandInput {
  const keyAttributes = new Set<string>([table.partitionKey, ...(table.sortKey ? [table.sortKey] : [])]);
  for (const index of table.indexes) {
    keyAttributes.add(index.partitionKey);
    if (index.sortKey) keyAttributes.add(index.sortKey);
  }
  const keySchema = (partitionKey: string, sortKey?: string) => [
    { AttributeName: partitionKey, KeyType: 'HASH' as const },
    ...(sortKey ? [{ AttributeName: sortKey, KeyType: 'RANGE' as const }] : []),
  ];
  return {
    TableName: tableName,
    BillingMode: 'PAY_PER_REQUEST',
    AttributeDefinitions: [...keyAttributes].map((name) => ({ AttributeName: name, AttributeType: 'S' })),
    KeySchema: keySchema(table.partitionKey, table.sortKey),
    ...(table.indexes.length > 0
      ? {
          GlobalSecondaryIndexes: table.indexes.map((index) => ({
            IndexName: index.indexName,
            KeySchema: keySchema(index.partitionKey, index.sortKey),
            Projection:
              index.nonKeyAttributes.length > 0
                ? { ProjectionType: 'INCLUDE' as const, NonKeyAttributes: [...index.nonKeyAttributes] }
                : { ProjectionType: 'KEYS_ONLY' as const },
          })),
        }
      : {}),
  };
}
