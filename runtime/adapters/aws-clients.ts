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
  /**
   * Call timeouts: by default AWS_CALL_TIMEOUTS for a service reached on AWS (no endpoint given
   * for it here), none for one given here (the emulators, in this process).
   */
  readonly timeouts?: CallTimeouts | undefined;
}

export interface CallTimeouts {
  /** To open a connection. */
  readonly connectionMs: number;
  /** A whole DynamoDB call. */
  readonly dynamodbMs: number;
  /** A whole SQS call: more than a long poll's 20 s. */
  readonly sqsMs: number;
}

/**
 * Timeouts of calls to AWS. The SDK alone has none for a request and 300 s (DynamoDB) or 900 s
 * (SQS) of socket inactivity, so one half-open connection could stall a scheduler tick past its
 * lease, and a worker's end write past its invocation. A timed-out call is retried by the SDK (a
 * TimeoutError is transient), as is one whose answer was lost: every write is conditional or
 * idempotent for that reason. Not for the emulators: in this process on a loaded laptop, a slow
 * answer is load, not a lost connection.
 */
export const AWS_CALL_TIMEOUTS: CallTimeouts = { connectionMs: 3_000, dynamodbMs: 10_000, sqsMs: 30_000 };

/**
 * A whole call of the other services the deployed functions reach (Lambda's asynchronous invoke,
 * EventBridge's PutEvents, Secrets Manager's GetSecretValue): each answers in well under a second.
 * The waker invokes the scheduler from the submit path, so a half-open socket there held a
 * submit's answer until API Gateway's 30 s.
 */
export const OTHER_CALL_TIMEOUT_MS = 10_000;

/**
 * Client options for a service reached on AWS, with AWS_CALL_TIMEOUTS' connection timeout and
 * `requestMs` a call (OTHER_CALL_TIMEOUT_MS by default): `new LambdaClient(onAws())`. Every client
 * a deployed function creates outside createAwsClients is made with it (test/integration/aws-clients.test.ts).
 */
export function onAws(requestMs = OTHER_CALL_TIMEOUT_MS) {
  return { requestHandler: handlerOptions(AWS_CALL_TIMEOUTS.connectionMs, requestMs) };
}

/** The default HTTP handler's options: a timeout to connect and one for the whole call. */
function handlerOptions(connectionMs: number, requestMs: number) {
  return { connectionTimeout: connectionMs, requestTimeout: requestMs, throwOnRequestTimeout: true };
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
  const timeoutsFor = (endpoint: string | undefined) =>
    endpoints.timeouts ?? (endpoint ? undefined : AWS_CALL_TIMEOUTS);
  const transportFor = (endpoint: string | undefined, requestMs: (t: CallTimeouts) => number) => {
    if (endpoints.requestHandler) return { requestHandler: endpoints.requestHandler };
    const timeouts = timeoutsFor(endpoint);
    return timeouts ? { requestHandler: handlerOptions(timeouts.connectionMs, requestMs(timeouts)) } : {};
  };
  const dynamodb = new DynamoDBClient({
    ...common,
    ...transportFor(endpoints.dynamodb, (t) => t.dynamodbMs),
    ...(endpoints.dynamodb ? { endpoint: endpoints.dynamodb } : {}),
  });
  const documents = DynamoDBDocumentClient.from(dynamodb, {
    marshallOptions: { removeUndefinedValues: true, convertEmptyValues: false },
  });
  const sqs = new SQSClient({
    ...common,
    ...transportFor(endpoints.sqs, (t) => t.sqsMs),
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
