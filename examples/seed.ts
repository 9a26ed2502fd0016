/**
 * Seed the example data stores with sample data: a week of restaurant sales, a night of
 * orders and payments with deliberate mismatches, and a few photos under uploads/.
 *
 *   node examples/seed.ts --dynamodb http://127.0.0.1:PORT --s3 http://127.0.0.1:PORT
 *
 * Endpoints also come from AWS_ENDPOINT_URL_DYNAMODB / AWS_ENDPOINT_URL_S3 (or AWS_ENDPOINT_URL,
 * e.g. LocalStack). With endpoints, the bucket and tables are created if missing (names
 * `${prefix}-example-...`). Against a deployed stack, pass its names instead as JSON in
 * EXAMPLE_RESOURCES and no endpoint: then nothing is created, only written.
 * Seeding is idempotent: the same keys get the same values on every run.
 */
import { parseArgs } from 'node:util';
import { createAwsClients } from '../runtime/adapters/aws-clients.ts';
import { EXAMPLE_RESOURCES_ENV } from '../runtime/infra/example-resources.ts';
import { ensureExampleResources } from '../runtime/task-types/examples/resources.ts';
import { SAMPLE, seedExampleData } from '../runtime/task-types/examples/seed-data.ts';
import { exampleResourcesFromEnvironment } from '../runtime/task-types/examples/stores.ts';

const USAGE = `Usage: node examples/seed.ts [--dynamodb URL] [--s3 URL] [--prefix NAME] [--region REGION]

  --dynamodb URL   DynamoDB endpoint (default: $AWS_ENDPOINT_URL_DYNAMODB or $AWS_ENDPOINT_URL)
  --s3 URL         S3 endpoint (default: $AWS_ENDPOINT_URL_S3 or $AWS_ENDPOINT_URL)
  --prefix NAME    prefix of the bucket and table names to create (default: scheduler)
  --region REGION  (default: $AWS_REGION or us-east-1)

Against a deployed stack: no endpoints, and ${EXAMPLE_RESOURCES_ENV}='{"example-data":"bucket",...}'.`;

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      dynamodb: { type: 'string' },
      s3: { type: 'string' },
      prefix: { type: 'string', default: 'scheduler' },
      region: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) {
    console.log(USAGE);
    return;
  }
  const env = process.env;
  const dynamodb = values.dynamodb ?? env.AWS_ENDPOINT_URL_DYNAMODB ?? env.AWS_ENDPOINT_URL;
  const s3 = values.s3 ?? env.AWS_ENDPOINT_URL_S3 ?? env.AWS_ENDPOINT_URL;
  const deployedNames = env[EXAMPLE_RESOURCES_ENV];
  if ((!dynamodb || !s3) && !deployedNames) {
    // Refuse rather than create tables in whatever account the default credentials reach.
    throw new UsageError(`Give both endpoints (or ${EXAMPLE_RESOURCES_ENV} for a deployed stack).`);
  }
  const emulated = Boolean(dynamodb && s3);
  const clients = createAwsClients({
    region: values.region ?? env.AWS_REGION ?? 'us-east-1',
    dynamodb,
    s3,
    // Emulators accept any credentials; real ones still win when the environment has them.
    credentials: emulated && !env.AWS_ACCESS_KEY_ID ? { accessKeyId: 'local', secretAccessKey: 'local' } : undefined,
  });
  try {
    const names = exampleResourcesFromEnvironment(env) ?? (await ensureExampleResources(clients, values.prefix));
    const summary = await seedExampleData(clients, names);
    console.log(
      `Seeded ${summary.sales} sales, ${summary.orders} orders, ${summary.ledgerEntries} ledger entries and ` +
        `${summary.objects.length} objects in ${names['example-data']}.\n` +
        `Try: weekly report { "restaurantId": "${SAMPLE.restaurantIds[0]}", "weekStart": "${SAMPLE.weekStart}" }, ` +
        `photo resize { "prefix": "${SAMPLE.photoPrefix}", "sizes": [320, 1024] }, ` +
        `reconciliation { "night": "${SAMPLE.night}" } (see examples/README.md).`,
    );
  } finally {
    clients.dynamodb.destroy();
    clients.s3.destroy();
    clients.sqs.destroy();
  }
}

class UsageError extends Error {}

main().catch((error: unknown) => {
  if (error instanceof UsageError) console.error(`${error.message}\n\n${USAGE}`);
  else console.error(error);
  process.exitCode = 1;
});
