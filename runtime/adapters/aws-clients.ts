/**
 * AWS SDK clients, created once per process. On AWS the SDK's default chain finds region and
 * credentials; locally the runtime passes the emulators' endpoints, and any AWS-compatible
 * endpoint (moto's server, LocalStack) works through the SDK's standard `AWS_ENDPOINT_URL` /
 * `AWS_ENDPOINT_URL_<SERVICE>` variables.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { S3Client } from '@aws-sdk/client-s3';
import { SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { HttpHandler } from '@smithy/core/protocols';

/** Each field left out, `undefined` or empty: the SDK's default (environment, config files, AWS). */
export interface AwsEndpoints {
  readonly region?: string | undefined;
  readonly dynamodb?: string | undefined;
  readonly sqs?: string | undefined;
  readonly s3?: string | undefined;
  /** Static credentials for emulators, which accept anything. */
  readonly credentials?: { accessKeyId: string; secretAccessKey: string } | undefined;
  /**
   * Transport for DynamoDB and SQS instead of the SDK's default HTTP handler: the simulation's
   * in-memory AWS, or a fault-injecting wrapper (both sit below the SDK's retries).
   */
  readonly requestHandler?: HttpHandler | undefined;
}

export interface AwsClients {
  readonly dynamodb: DynamoDBClient;
  readonly documents: DynamoDBDocumentClient;
  readonly sqs: SQSClient;
  readonly s3: S3Client;
}

export function createAwsClients(endpoints: AwsEndpoints = {}): AwsClients {
  const common = {
    ...(endpoints.region ? { region: endpoints.region } : {}),
    ...(endpoints.credentials ? { credentials: endpoints.credentials } : {}),
  };
  const transport = endpoints.requestHandler ? { requestHandler: endpoints.requestHandler } : {};
  const dynamodb = new DynamoDBClient({
    ...common,
    ...transport,
    ...(endpoints.dynamodb ? { endpoint: endpoints.dynamodb } : {}),
  });
  const documents = DynamoDBDocumentClient.from(dynamodb, {
    marshallOptions: { removeUndefinedValues: true, convertEmptyValues: false },
  });
  const sqs = new SQSClient({
    ...common,
    ...transport,
    ...(endpoints.sqs ? { endpoint: endpoints.sqs } : {}),
    // Always send to the configured endpoint. On AWS the queue URL's host is that endpoint; the
    // emulators' queue URLs carry hosts the SDK cannot parse (and an AWS_ENDPOINT_URL_SQS
    // override must win over them).
    useQueueUrlAsEndpoint: false,
  });
  const s3 = new S3Client({
    ...common,
    ...(endpoints.s3 ? { endpoint: endpoints.s3 } : {}),
    ...(s3NeedsPathStyle(endpoints.s3) ? { forcePathStyle: true } : {}),
  });
  return { dynamodb, documents, sqs, s3 };
}

/**
 * Whether S3 must be addressed by path (`http://localhost:4566/bucket/key`) rather than by virtual
 * host (`http://bucket.localhost:4566/key`, the SDK's default): always for an endpoint passed in
 * code (the emulators), and for one set by `AWS_ENDPOINT_URL_S3` or `AWS_ENDPOINT_URL` whose host
 * cannot carry a bucket name as a subdomain (an IP address, or a one-label name such as
 * `localhost` or a compose service `moto`: `bucket.localhost` does not resolve). A host such as
 * `s3.localhost.localstack.cloud`, which resolves every subdomain, keeps virtual hosts.
 */
export function s3NeedsPathStyle(codeEndpoint: string | undefined, env: NodeJS.ProcessEnv = process.env): boolean {
  if (codeEndpoint) return true;
  if (env.AWS_IGNORE_CONFIGURED_ENDPOINT_URLS === 'true') return false;
  const configured = env.AWS_ENDPOINT_URL_S3 || env.AWS_ENDPOINT_URL;
  if (!configured) return false;
  let host: string;
  try {
    host = new URL(configured).hostname;
  } catch {
    return false; // the SDK refuses a malformed endpoint itself, with its own message
  }
  const isIp = /^\d{1,3}(\.\d{1,3}){3}$/.test(host) || host.startsWith('[');
  return isIp || !host.includes('.');
}

/** Endpoints of the local emulators, with the dummy credentials they accept. */
export function localEndpoints(dynamodbUrl: string, sqsUrl: string): AwsEndpoints {
  return {
    region: 'us-east-1',
    dynamodb: dynamodbUrl,
    sqs: sqsUrl,
    s3: sqsUrl,
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  };
}
