/**
 * Faults at the transport, below the AWS SDK's retries: a decorator around any HttpHandler (the
 * in-memory one, or the real NodeHttpHandler to the local emulators). Per call, drawn from its
 * own seeded stream:
 * - throttling: refused before it is applied (ProvisionedThroughputExceeded / RequestThrottled);
 * - a lost response: the request IS applied, then the connection resets, so the SDK retries a
 *   write that already happened (and a receive whose messages are now in flight);
 * - latency from a model (virtual under the simulation's clock);
 * - death: after `kill()` (a process crash, a Lambda timeout) no call of this component is
 *   ever answered, including those in flight, wherever the code was awaiting;
 * - a stall: after `stall(ms)` every call of this component is held that long before it reaches
 *   the service (a paused process, a congested link), and then lands, even if the component
 *   died meanwhile: a request already on its way still applies, late.
 */
import type { HttpRequest, HttpResponse } from '@smithy/core/transport';
import type { HttpHandlerOptions } from '@smithy/types';
import { z } from 'zod';
import { bodyText, errorResponse, operationOf, type RequestHandler, type Service } from './http.ts';

export interface TransportFaults {
  /** Chance per call that the request is applied and its response lost. */
  readonly lostResponseRate: number;
  /** Chance per call that it is throttled (not applied). */
  readonly throttleRate: number;
}

export const NO_TRANSPORT_FAULTS: TransportFaults = { lostResponseRate: 0, throttleRate: 0 };

/** Milliseconds a call takes, by service and operation (a long poll's wait is extra). */
export type LatencyModel = (service: Service, operation: string, random: () => number) => number;

/** Published orders of magnitude: DynamoDB single-digit ms, SQS about 10 ms. */
export const AWS_LATENCY: LatencyModel = (service, _operation, random) => {
  if (service === 'dynamodb') return 3 + random() * 6;
  if (service === 'sqs') return 6 + random() * 10;
  return 10;
};

/** [min, max] ms, at most a minute (a call slower than that is an outage, not a latency). */
const latencyRange = z
  .tuple([z.number().min(0).max(60_000), z.number().min(0).max(60_000)])
  .refine(([min, max]) => min <= max, 'must be [min, max] with min <= max');

/**
 * Per-service latency ranges in ms, each call uniform in [min, max]: SCHEDULER_FAULTS `latencyMs`
 * and `npm run sim -- throughput --latency-ms`. Other keys are refused.
 */
export const latencyRangesSchema = z.strictObject({
  dynamodb: latencyRange.optional(),
  sqs: latencyRange.optional(),
});
export type LatencyRanges = z.infer<typeof latencyRangesSchema>;

/** A latency model drawing each call's latency uniformly from its service's range (none for others). */
export function uniformLatency(ranges: LatencyRanges): LatencyModel {
  return (service, _operation, random) => {
    const range = service === 'dynamodb' ? ranges.dynamodb : service === 'sqs' ? ranges.sqs : undefined;
    if (!range) return 0;
    const [min, max] = range;
    return min + random() * (max - min);
  };
}

export interface CallRecord {
  readonly service: Service;
  readonly operation: string;
  readonly outcome: 'ok' | 'throttled' | 'lost';
}

export interface FaultyHandlerOptions {
  readonly random: () => number;
  readonly faults: TransportFaults;
  readonly latency?: LatencyModel | undefined;
  /** Told of every call (counting, tracing). */
  readonly onCall?: ((call: CallRecord) => void) | undefined;
  /** Told of each request of these operations that reaches the service (its JSON body). */
  readonly onRequest?: {
    readonly operations: ReadonlySet<string>;
    readonly listener: (operation: string, body: unknown) => void;
  };
}

const never = new Promise<never>(() => {});

export class FaultyHandler implements RequestHandler {
  readonly metadata = { handlerProtocol: 'http/1.1' };
  readonly #inner: RequestHandler;
  readonly #options: FaultyHandlerOptions;
  #dead = false;
  #stalledUntilMs = 0;

  constructor(inner: RequestHandler, options: FaultyHandlerOptions) {
    this.#inner = inner;
    this.#options = options;
  }

  get dead(): boolean {
    return this.#dead;
  }

  /** The component died: nothing it sent is answered any more (what was sent may apply). */
  kill(): void {
    this.#dead = true;
  }

  /** From now on for `ms`, calls are held before they reach the service, then land. */
  stall(ms: number): void {
    this.#stalledUntilMs = Math.max(this.#stalledUntilMs, Date.now() + ms);
  }

  async handle(request: HttpRequest, options: HttpHandlerOptions = {}): Promise<{ response: HttpResponse }> {
    if (this.#dead) return never;
    const { random, faults, latency, onCall } = this.#options;
    const { service, operation } = operationOf(request);
    const delay = latency?.(service, operation, random) ?? 0;
    if (delay > 0) await new Promise((resolve) => setTimeout(resolve, delay / 2));
    const heldMs = this.#stalledUntilMs - Date.now();
    if (heldMs > 0) {
      // Already on its way: it lands when the stall ends, whatever became of the sender.
      await new Promise((resolve) => setTimeout(resolve, heldMs));
    } else if (this.#dead) {
      return never;
    }
    const roll = random();
    if (roll < faults.throttleRate) {
      onCall?.({ service, operation, outcome: 'throttled' });
      return service === 'sqs'
        ? errorResponse('sqs', 'RequestThrottled', 'Request is throttled.')
        : errorResponse(
            'dynamodb',
            'ProvisionedThroughputExceededException',
            'The level of configured provisioned throughput for the table was exceeded.',
          );
    }
    const { onRequest } = this.#options;
    if (onRequest?.operations.has(operation)) onRequest.listener(operation, parseBody(request));
    const result = await this.#inner.handle(request, options);
    if (delay > 0) await new Promise((resolve) => setTimeout(resolve, delay / 2));
    if (this.#dead) return never;
    if (roll < faults.throttleRate + faults.lostResponseRate) {
      // Applied, then lost: a write that happened, or received messages now in flight (they
      // come back after their visibility timeout, each receive counted toward maxReceiveCount).
      onCall?.({ service, operation, outcome: 'lost' });
      throw Object.assign(new Error(`socket hang up (simulated: ${operation} applied, its response lost)`), {
        code: 'ECONNRESET',
      });
    }
    onCall?.({ service, operation, outcome: 'ok' });
    return result;
  }

  updateHttpClientConfig(): void {}
  httpHandlerConfigs(): Record<string, never> {
    return {};
  }
  destroy(): void {
    this.#inner.destroy?.();
  }
}

function parseBody(request: HttpRequest): unknown {
  try {
    return JSON.parse(bodyText(request));
  } catch {
    return undefined;
  }
}
