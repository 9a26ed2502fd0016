/**
 * SigV4 signing for a deployed endpoint: API Gateway checks the signature (IAM authorization,
 * service `execute-api`) and hands the caller's identity to the API. Credentials come from the
 * options or from the standard AWS chain (environment, SSO/profile files, container, instance).
 */
import { Sha256 } from '@aws-crypto/sha256-js';
import { SignatureV4 } from '@smithy/signature-v4';

export interface AwsCredentials {
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
  readonly sessionToken?: string;
  readonly expiration?: Date;
}

/** Fixed credentials, or a function the signer calls (and the chain caches) before each request. */
export type CredentialsOption = AwsCredentials | (() => Promise<AwsCredentials>);

export const SIGNING_SERVICE = 'execute-api';

export interface RequestToSign {
  readonly method: string;
  readonly url: URL;
  readonly headers: Readonly<Record<string, string>>;
  readonly body?: string | undefined;
}

/** Whether an endpoint is the local runtime (plain HTTP, no signature). */
export function isLocalEndpoint(url: URL): boolean {
  const host = url.hostname.replace(/^\[|\]$/g, '');
  return host === 'localhost' || host === '::1' || host.startsWith('127.');
}

/** Region of an `https://{api}.execute-api.{region}.amazonaws.com` endpoint, if it is one. */
export function regionOfEndpoint(url: URL): string | undefined {
  return /\.execute-api\.([a-z0-9-]+)\.amazonaws\.com(\.cn)?$/.exec(url.hostname)?.[1];
}

export class RequestSigner {
  readonly #signer: SignatureV4;

  constructor(options: { region: string; credentials?: CredentialsOption | undefined }) {
    this.#signer = new SignatureV4({
      service: SIGNING_SERVICE,
      region: options.region,
      sha256: Sha256,
      credentials: options.credentials ?? defaultCredentialChain(),
    });
  }

  /** The headers to send: the given ones plus `x-amz-date`, `authorization` (and the session token). */
  async sign(request: RequestToSign): Promise<Record<string, string>> {
    const query: Record<string, string | string[]> = {};
    for (const [key, value] of request.url.searchParams) {
      const existing = query[key];
      query[key] = existing === undefined ? value : [...(Array.isArray(existing) ? existing : [existing]), value];
    }
    const signed = await this.#signer.sign({
      method: request.method,
      protocol: request.url.protocol,
      hostname: request.url.hostname,
      ...(request.url.port ? { port: Number(request.url.port) } : {}),
      path: request.url.pathname,
      query,
      // `host` is signed; fetch sends the same value itself (it may not be set by hand).
      headers: { ...request.headers, host: request.url.host },
      body: request.body,
    });
    const { host: _host, ...headers } = signed.headers;
    return headers;
  }
}

/** The SDK's default chain, loaded only when a request is actually signed (local use never needs it). */
function defaultCredentialChain(): () => Promise<AwsCredentials> {
  let provider: (() => Promise<AwsCredentials>) | undefined;
  return async () => {
    if (!provider) {
      const { fromNodeProviderChain } = await import('@aws-sdk/credential-providers');
      provider = fromNodeProviderChain();
    }
    return provider();
  };
}
