/**
 * Webhook delivery: one POST of one event, its raw body signed with the webhook's secret
 * (`x-signature: sha256=<hex HMAC-SHA256>`). The local relay and the AWS delivery function both
 * send through here, so a receiver sees the same request from either.
 */
import type { WebhookConfig } from '../core/config.ts';
import { ConfigError, WebhookDeliveryError } from '../core/errors.ts';
import { matchesFilters, SIGNATURE_HEADER, signatureOf, type TaskEvent, type WebhookFilters } from '../core/events.ts';

/** A webhook ready to send to: its secret resolved. */
export interface WebhookTarget {
  /** Its position in `events.webhooks` (how the relay keeps each webhook's progress apart). */
  readonly index: number;
  readonly url: string;
  readonly secret: string;
  readonly filters?: WebhookFilters | undefined;
}

/**
 * A webhook whose `filters.taskType` names a type the deployment does not have (a typo) would
 * silently pass no event of it: refused where the types are known (`npm start`, `cdk synth`),
 * naming the key, as a schedule of an unknown type is. Throws ConfigError.
 */
export function checkWebhookFilterTypes(
  webhooks: readonly WebhookConfig[],
  types: { has(type: string): boolean; names(): string[] },
): void {
  const problems = webhooks.flatMap((hook, index) =>
    (hook.filters?.taskType ?? [])
      .filter((type) => !types.has(type))
      .map(
        (type) =>
          `events.webhooks.${index}.filters.taskType: unknown task type "${type}", so no event would pass (known: ${types.names().join(', ')})`,
      ),
  );
  if (problems.length > 0) throw new ConfigError(`Invalid configuration:\n  ${problems.join('\n  ')}`, { problems });
}

/** A request that takes longer than this counts as failed (and is retried). */
export const WEBHOOK_TIMEOUT_MS = 10_000;

/**
 * The configured webhooks with their secrets as given. A `secretArn` is read on AWS only (the
 * delivery function reads it from Secrets Manager): refused here, where there is nothing to read.
 */
export function localWebhookTargets(webhooks: readonly WebhookConfig[]): WebhookTarget[] {
  const arns = webhooks.flatMap((hook, index) => (typeof hook.secret === 'string' ? [] : [index]));
  if (arns.length > 0) {
    const problems = arns.map(
      (index) =>
        `events.webhooks.${index}.secret: a Secrets Manager ARN is read on AWS only; locally give the secret itself`,
    );
    throw new ConfigError(`Invalid configuration:\n  ${problems.join('\n  ')}`, { problems });
  }
  return webhooks.map((hook, index) => ({
    index,
    url: hook.url,
    secret: hook.secret as string,
    filters: hook.filters,
  }));
}

export const webhookTakes = (target: { readonly filters?: WebhookFilters | undefined }, event: TaskEvent): boolean =>
  matchesFilters(target.filters, event);

/** The body of an event's POST: the event as JSON, exactly the bytes signed. */
export const webhookBody = (event: TaskEvent): string => JSON.stringify(event);

/** POST one event; resolves on a 2xx, throws WebhookDeliveryError otherwise. */
export async function postWebhook(
  target: Pick<WebhookTarget, 'url' | 'secret'>,
  event: TaskEvent,
  options: { timeoutMs?: number; fetch?: typeof fetch } = {},
): Promise<void> {
  const body = webhookBody(event);
  const send = options.fetch ?? fetch;
  let response: Response;
  try {
    response = await send(target.url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        [SIGNATURE_HEADER]: signatureOf(target.secret, body),
        'user-agent': 'task-scheduler-webhooks',
      },
      body,
      signal: AbortSignal.timeout(options.timeoutMs ?? WEBHOOK_TIMEOUT_MS),
    });
  } catch (error) {
    throw new WebhookDeliveryError(target.url, event.id, undefined, error);
  }
  // The body is not needed; reading it frees the connection for reuse.
  await response.arrayBuffer().catch(() => undefined);
  if (response.status < 200 || response.status >= 300) {
    throw new WebhookDeliveryError(target.url, event.id, response.status);
  }
}

/** A webhook as the stack hands it to the AWS functions: its secret stays in Secrets Manager. */
export interface DeployedWebhook {
  readonly index: number;
  readonly url: string;
  readonly secretArn: string;
  readonly filters?: WebhookFilters | undefined;
}

/** The webhooks the stack set in WEBHOOKS (none when unset). */
export function deployedWebhooksFromEnvironment(env: NodeJS.ProcessEnv = process.env): DeployedWebhook[] {
  const raw = env.WEBHOOKS;
  return raw ? (JSON.parse(raw) as DeployedWebhook[]) : [];
}
