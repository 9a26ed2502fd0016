/**
 * `npm start` against an AWS-compatible endpoint (moto's server, LocalStack) instead of its
 * embedded emulators: with `AWS_ENDPOINT_URL`, or the per-service `AWS_ENDPOINT_URL_DYNAMODB`,
 * `AWS_ENDPOINT_URL_SQS` and `AWS_ENDPOINT_URL_S3` (the SDK's standard settings), the whole local
 * system keeps its tables, queues and the examples' bucket there, creating them from the one
 * definition (runtime/infra/resources.ts) where they are missing.
 */

import type { AwsEndpoints } from '../runtime/adapters/aws-clients.ts';
import { ConfigError } from '../runtime/core/errors.ts';

export interface ExternalAws {
  readonly dynamodb: string;
  readonly sqs: string;
  readonly s3: string;
  readonly region: string;
  /** Dummy credentials when none are set (the endpoint is not AWS; moto and LocalStack accept any). */
  readonly credentials?: { readonly accessKeyId: string; readonly secretAccessKey: string };
  /** The variables the endpoints came from, for the start line. */
  readonly variables: readonly string[];
}

const SERVICES = ['DYNAMODB', 'SQS', 'S3'] as const;

/**
 * The external endpoints the environment names, or undefined when it names none. Each service's
 * own variable wins over AWS_ENDPOINT_URL, as in the SDK. All three services are needed (the
 * examples keep their data in S3): a partial set is refused, naming what is missing, rather than
 * splitting the system between an endpoint and the emulators.
 */
export function externalAwsFromEnvironment(env: NodeJS.ProcessEnv): ExternalAws | undefined {
  if (env.AWS_IGNORE_CONFIGURED_ENDPOINT_URLS === 'true') return undefined;
  const general = env.AWS_ENDPOINT_URL || undefined;
  const own = Object.fromEntries(SERVICES.map((service) => [service, env[`AWS_ENDPOINT_URL_${service}`] || undefined]));
  if (!general && SERVICES.every((service) => !own[service])) return undefined;
  const missing = SERVICES.filter((service) => !own[service] && !general);
  if (missing.length > 0) {
    throw new ConfigError(
      `npm start runs DynamoDB, SQS and S3 at one place: ${SERVICES.filter((s) => own[s])
        .map((s) => `AWS_ENDPOINT_URL_${s}`)
        .join(
          ', ',
        )} is set but not ${missing.map((s) => `AWS_ENDPOINT_URL_${s}`).join(', ')} (set AWS_ENDPOINT_URL for all of them)`,
      { problems: missing.map((service) => `AWS_ENDPOINT_URL_${service}: missing`) },
    );
  }
  const endpoint = (service: (typeof SERVICES)[number]) => {
    const url = (own[service] ?? general)!;
    try {
      const parsed = new URL(url);
      if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw new Error('not http(s)');
    } catch {
      const name = own[service] ? `AWS_ENDPOINT_URL_${service}` : 'AWS_ENDPOINT_URL';
      throw new ConfigError(`${name} must be an http(s) URL, got "${url}"`, { problems: [`${name}: not a URL`] });
    }
    return url;
  };
  const hasCredentials = Boolean(env.AWS_ACCESS_KEY_ID || env.AWS_PROFILE);
  return {
    dynamodb: endpoint('DYNAMODB'),
    sqs: endpoint('SQS'),
    s3: endpoint('S3'),
    region: env.AWS_REGION || env.AWS_DEFAULT_REGION || 'us-east-1',
    ...(hasCredentials ? {} : { credentials: { accessKeyId: 'local', secretAccessKey: 'local' } }),
    variables: [
      ...(general ? ['AWS_ENDPOINT_URL'] : []),
      ...SERVICES.filter((service) => own[service]).map((service) => `AWS_ENDPOINT_URL_${service}`),
    ],
  };
}

/** The SDK settings for an external endpoint (credentials from the default chain unless dummy). */
export function externalEndpoints(external: ExternalAws): AwsEndpoints {
  return {
    region: external.region,
    dynamodb: external.dynamodb,
    sqs: external.sqs,
    s3: external.s3,
    ...(external.credentials ? { credentials: external.credentials } : {}),
  };
}

/** The one line `npm start` says about it. */
export function describeExternalAws(external: ExternalAws): string {
  const same = external.dynamodb === external.sqs && external.sqs === external.s3;
  const where = same ? external.dynamodb : `DynamoDB ${external.dynamodb}, SQS ${external.sqs}, S3 ${external.s3}`;
  return (
    `AWS endpoint ${where} (${external.variables.join(', ')}), region ${external.region}` +
    `${external.credentials ? ', dummy credentials (none set)' : ''}: tables, queues and the examples' bucket live there, ` +
    'created where missing; the embedded emulators are not started'
  );
}
