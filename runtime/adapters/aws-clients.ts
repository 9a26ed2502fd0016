/**
 * AWS SDK clients, created once per process. On AWS the SDK's default chain finds region and
 * credentials; locally the runtime passes the emulators' endpoints (and LocalStack works through
 * the SDK's standard `AWS_ENDPOINT_URL[_SERVICE]` variables).
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
    ...(endpoints.s3 ? { endpoint: endpoints.s3, forcePathStyle: true } : {}),
  });
  return { dynamodb, documents, sqs, s3 };
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
