/**
 * SCHEDULER_FAULTS: AWS's failure modes injected into the running local stack (`npm start`), so
 * users can watch their own handlers under them. Unset, nothing is injected.
 *
 *   SCHEDULER_FAULTS='{"seed":7,"lostResponseRate":0.05,"duplicateDeliveryRate":0.1,
 *                      "schedulerRestartSeconds":20,"indexLagMs":500}' npm start
 *
 * - lostResponseRate / throttleRate: per DynamoDB or SQS call, below the SDK's retries (the
 *   simulation's FaultyHandler around the real HTTP handler): the request is applied and its
 *   response lost, or it is throttled;
 * - duplicateDeliveryRate: a SendMessage(Batch) is delivered twice (SQS is at-least-once);
 * - indexLagMs: an index Query leaves out tasks written less than this long ago (the emulator's
 *   indexes are immediate; AWS's lag);
 * - schedulerRestartSeconds: the scheduler loop hands its lease back and a new one starts this
 *   often (the Lambda starts afresh every minute on AWS);
 * - latencyMs: `{ "dynamodb": [min, max], "sqs": [min, max] }`, a latency uniform in that range
 *   added to every call of that service (the emulators answer in-process; AWS over a network),
 *   half before the request reaches the emulator and half after it answered.
 */

import type { HttpRequest, HttpResponse } from '@smithy/core/transport';
import { NodeHttpHandler } from '@smithy/node-http-handler';
import type { HttpHandlerOptions } from '@smithy/types';
import { z } from 'zod';
import { type AwsClients, type AwsEndpoints, createAwsClients } from '../runtime/adapters/aws-clients.ts';
import { ConfigError } from '../runtime/core/errors.ts';
import { seededRandom } from '../runtime/core/random.ts';
import { TASKS_TABLE } from '../runtime/infra/resources.ts';
import { FaultyHandler, latencyRangesSchema, uniformLatency } from '../sim/aws/faults.ts';
import { bodyText, operationOf, type RequestHandler } from '../sim/aws/http.ts';

export const SCHEDULER_FAULTS_ENV = 'SCHEDULER_FAULTS';

const rate = z.number().min(0).max(1);
const faultsSchema = z.strictObject({
  seed: z.number().int().default(1),
  lostResponseRate: rate.default(0),
  throttleRate: rate.default(0),
  duplicateDeliveryRate: rate.default(0),
  indexLagMs: z.number().int().min(0).max(600_000).default(0),
  schedulerRestartSeconds: z.number().int().min(5).max(3600).optional(),
  latencyMs: latencyRangesSchema.optional(),
});

export type SchedulerFaults = z.infer<typeof faultsSchema>;

/** The faults asked for in the environment, or undefined when SCHEDULER_FAULTS is unset. */
export function schedulerFaultsFromEnvironment(env: NodeJS.ProcessEnv = process.env): SchedulerFaults | undefined {
  const raw = env[SCHEDULER_FAULTS_ENV];
  if (raw === undefined || raw.trim() === '') return undefined;
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch {
    throw new ConfigError(`${SCHEDULER_FAULTS_ENV} is not JSON`, { problems: [`${SCHEDULER_FAULTS_ENV}: not JSON`] });
  }
  const parsed = faultsSchema.safeParse(json);
  if (!parsed.success) {
    const problems = parsed.error.issues.map(
      (issue) => `${[SCHEDULER_FAULTS_ENV, ...issue.path].join('.')}: ${issue.message}`,
    );
    throw new ConfigError(`Invalid ${SCHEDULER_FAULTS_ENV}:\n  ${problems.join('\n  ')}`, { problems });
  }
  return parsed.data;
}

/** What has been injected in this process so far (printed by the faults-live bench). */
export interface InjectedFaults {
  calls: number;
  lostResponses: number;
  throttled: number;
  duplicateSends: number;
  /** Index reads that left out a task written less than indexLagMs ago. */
  laggedIndexReads: number;
}

const injected: InjectedFaults = { calls: 0, lostResponses: 0, throttled: 0, duplicateSends: 0, laggedIndexReads: 0 };

export function injectedFaults(): Readonly<InjectedFaults> {
  return { ...injected };
}

/** Clients to the emulators (or an external endpoint) whose transport injects the faults. */
export function faultyLocalClients(endpoints: AwsEndpoints, faults: SchedulerFaults): AwsClients {
  const random = seededRandom(faults.seed);
  const transport = new FaultyHandler(new EmulatorQuirks(new NodeHttpHandler(), faults, random), {
    random,
    faults: { lostResponseRate: faults.lostResponseRate, throttleRate: faults.throttleRate },
    latency: faults.latencyMs ? uniformLatency(faults.latencyMs) : undefined,
    onCall: ({ outcome }) => {
      injected.calls++;
      if (outcome === 'lost') injected.lostResponses++;
      if (outcome === 'throttled') injected.throttled++;
    },
  });
  return createAwsClients({ ...endpoints, requestHandler: transport });
}

/** What the emulators never do, added around the real HTTP handler: duplicates and index lag. */
class EmulatorQuirks implements RequestHandler {
  readonly metadata = { handlerProtocol: 'http/1.1' };
  readonly #inner: NodeHttpHandler;
  readonly #faults: SchedulerFaults;
  readonly #random: () => number;
  /** When each task was last written, to hide it from index reads for `indexLagMs`. */
  readonly #writtenAt = new Map<string, number>();

  constructor(inner: NodeHttpHandler, faults: SchedulerFaults, random: () => number) {
    this.#inner = inner;
    this.#faults = faults;
    this.#random = random;
  }

  async handle(request: HttpRequest, options: HttpHandlerOptions = {}): Promise<{ response: HttpResponse }> {
    const { operation } = operationOf(request);
    const lag = this.#faults.indexLagMs;
    if (lag > 0 && operation === 'PutItem') {
      const taskId = (JSON.parse(bodyText(request)) as { Item?: Record<string, { S?: string }> }).Item?.[
        TASKS_TABLE.partitionKey
      ]?.S;
      if (taskId) this.#writtenAt.set(taskId, Date.now());
    }
    const result = await this.#inner.handle(request, options);
    if (
      (operation === 'SendMessageBatch' || operation === 'SendMessage') &&
      result.response.statusCode === 200 &&
      this.#random() < this.#faults.duplicateDeliveryRate
    ) {
      const bytes = await drain(result.response);
      await this.#inner.handle(request.clone(), options).then(({ response }) => drain(response));
      injected.duplicateSends++;
      return { response: { ...result.response, body: bytes } as HttpResponse };
    }
    if (lag > 0 && operation === 'Query' && result.response.statusCode === 200) {
      const input = JSON.parse(bodyText(request)) as { IndexName?: string };
      if (input.IndexName) return { response: await this.#withoutRecent(result.response, lag) };
    }
    return result;
  }

  async #withoutRecent(response: HttpResponse, lagMs: number): Promise<HttpResponse> {
    const body = JSON.parse((await drain(response)).toString('utf8')) as {
      Items?: Record<string, { S?: string }>[];
      Count?: number;
    };
    const nowMs = Date.now();
    for (const [taskId, atMs] of this.#writtenAt) if (nowMs - atMs > lagMs) this.#writtenAt.delete(taskId);
    if (body.Items) {
      const before = body.Items.length;
      body.Items = body.Items.filter((item) => !this.#writtenAt.has(item[TASKS_TABLE.partitionKey]?.S ?? ''));
      body.Count = body.Items.length;
      if (body.Count < before) injected.laggedIndexReads++;
    }
    const bytes = Buffer.from(JSON.stringify(body), 'utf8');
    const headers: Record<string, string> = { ...response.headers, 'content-length': String(bytes.length) };
    // The body changed: its CRC32 (which the SDK checks) no longer applies.
    delete headers['x-amz-crc32'];
    return {
      ...response,
      headers,
      body: new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength),
    } as HttpResponse;
  }

  updateHttpClientConfig(): void {}
  httpHandlerConfigs(): Record<string, never> {
    return {};
  }
  destroy(): void {
    this.#inner.destroy();
  }
}

async function drain(response: HttpResponse): Promise<Buffer> {
  const body = response.body as AsyncIterable<Uint8Array> | Uint8Array | undefined;
  if (!body) return Buffer.alloc(0);
  if (body instanceof Uint8Array) return Buffer.from(body);
  const chunks: Buffer[] = [];
  for await (const chunk of body) chunks.push(Buffer.from(chunk));
  return Buffer.concat(chunks);
}
