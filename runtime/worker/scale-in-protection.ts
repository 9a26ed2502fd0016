/**
 * ECS task scale-in protection for the Fargate worker service. While a container runs attempts
 * it asks the ECS agent not to be stopped by scale-in or deployments, so a long task is not cut
 * short (and its attempt burned) because the backlog shrank; when it is idle again it lets go,
 * so the service can scale in. The protection expires on its own (and is renewed while busy), so
 * a wedged container cannot pin the service forever.
 *
 *   idle ──first attempt starts──▶ PUT {ProtectionEnabled: true, ExpiresInMinutes}
 *   busy ──every renewEvery──────▶ PUT again (extends the expiry)
 *   busy ──last attempt settles──▶ PUT {ProtectionEnabled: false}
 */
import type { TaskLogger } from '../core/logger.ts';

export interface ScaleInProtectionOptions {
  /** The `ECS_AGENT_URI` the ECS agent injects into every container of a task. */
  readonly agentUri: string;
  /** @default 30 */
  readonly expiresInMinutes?: number;
  readonly logger?: TaskLogger;
  readonly fetch?: typeof fetch;
}

export class ScaleInProtection {
  readonly #url: string;
  readonly #expiresInMinutes: number;
  readonly #logger: TaskLogger | undefined;
  readonly #fetch: typeof fetch;
  /** Calls are chained so the agent sees them in the order the worker's state changed. */
  #queue: Promise<void> = Promise.resolve();
  #renewal: NodeJS.Timeout | undefined;
  #busy = false;

  constructor(options: ScaleInProtectionOptions) {
    this.#url = `${options.agentUri.replace(/\/$/, '')}/task-protection/v1/state`;
    this.#expiresInMinutes = options.expiresInMinutes ?? 30;
    this.#logger = options.logger;
    this.#fetch = options.fetch ?? fetch;
  }

  /** Tell it whether the worker has attempts in flight; only changes reach the agent. */
  setBusy(busy: boolean): Promise<void> {
    if (busy === this.#busy) return this.#queue;
    this.#busy = busy;
    clearInterval(this.#renewal);
    this.#renewal = undefined;
    if (busy) {
      // Renew well before expiry: a third of the way, so one failed call does not lapse it.
      this.#renewal = setInterval(() => void this.#send(true), (this.#expiresInMinutes * 60_000) / 3);
      this.#renewal.unref();
    }
    return this.#send(busy);
  }

  #send(enabled: boolean): Promise<void> {
    this.#queue = this.#queue.then(async () => {
      try {
        const response = await this.#fetch(this.#url, {
          method: 'PUT',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(
            enabled
              ? { ProtectionEnabled: true, ExpiresInMinutes: this.#expiresInMinutes }
              : { ProtectionEnabled: false },
          ),
        });
        if (!response.ok) {
          this.#logger?.warn('scale-in protection refused', {
            enabled,
            status: response.status,
            body: await response.text(),
          });
        }
      } catch (error) {
        // Protection is an optimisation: without it a stopped attempt is recovered by its lease.
        this.#logger?.warn('scale-in protection unreachable', { enabled, error: String(error) });
      }
    });
    return this.#queue;
  }
}
