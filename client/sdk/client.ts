/**
 * SchedulerClient: the HTTP API as typed methods. Plain HTTP against the local runtime;
 * SigV4-signed requests (IAM authorization) against a deployed endpoint.
 *
 *   const client = new SchedulerClient({ endpoint: 'http://127.0.0.1:3000' });
 *   const { taskId } = await client.submit({ tenantId: 'acme', type: 'demo.sleep', payload: { ms: 100 } });
 *   const done = await client.waitFor(taskId);
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { MAX_BATCH_TASKS, TERMINAL_STATES } from '../../runtime/api/contract.ts';
import {
  apiErrorFor,
  SchedulerApiError,
  SchedulerClientError,
  SchedulerConnectionError,
  WaitTimeoutError,
} from './errors.ts';
import { type CredentialsOption, isLocalEndpoint, RequestSigner, regionOfEndpoint } from './signing.ts';
import type {
  Batch,
  BatchItemResult,
  BatchPage,
  BatchSubmitResult,
  ListTasksQuery,
  SchedulerStatus,
  StoredTenantSettings,
  SubmitBatchInput,
  SubmitTaskInput,
  Task,
  TaskDetail,
  TaskPage,
  TaskState,
  TaskTypeView,
  Tenant,
  TenantSettingsInput,
} from './types.ts';

export interface SchedulerClientOptions {
  /** Base URL of the API, e.g. `http://127.0.0.1:3000` or `https://abc.execute-api.eu-west-1.amazonaws.com`. */
  readonly endpoint: string;
  /** Signing region. @default the endpoint's region, else AWS_REGION / AWS_DEFAULT_REGION */
  readonly region?: string | undefined;
  /** @default the standard AWS credential chain (only consulted when signing) */
  readonly credentials?: CredentialsOption;
  /** Sign with SigV4. @default true unless the endpoint is localhost / 127.0.0.1 */
  readonly sign?: boolean;
  /** Per-request timeout. @default 30000 */
  readonly timeoutMs?: number;
  /**
   * Retries of a request that is safe to repeat (reads, tenant writes, cancel, a submit with an
   * idempotency key) after a connection error, 429 or 502–504. @default 2
   */
  readonly maxRetries?: number;
  /** @default globalThis.fetch */
  readonly fetch?: typeof fetch;
}

export interface WaitForOptions {
  /** @default 300000 (5 minutes) */
  readonly timeoutMs?: number;
  /** Delay between reads. @default 500 */
  readonly pollMs?: number;
  readonly signal?: AbortSignal | undefined;
}

export interface SubmitManyOptions {
  /** Requests in flight at once. @default 8 */
  readonly concurrency?: number;
  /** Stops starting new submits; those not started are reported as rejected with the abort reason. */
  readonly signal?: AbortSignal | undefined;
}

export interface SubmitBatchOptions {
  /**
   * The batch's `then`: submitted once every task has ended (only when the tasks fit one request:
   * 1,000 at most). Not named `then`, which would make the options object a thenable.
   */
  readonly thenTask?: SubmitTaskInput | undefined;
  /**
   * Names the batch (request `n` of a split array gets `${key}-${n}`); without it the same tasks
   * again are the same batch, so a retry after a lost answer creates nothing.
   */
  readonly idempotencyKey?: string | undefined;
  /** Tasks per request, at most 1,000. @default 1000 */
  readonly chunkSize?: number;
  /** Requests in flight at once. @default 2 */
  readonly concurrency?: number;
  /** Told after each request answered: tasks answered so far, and in all. */
  readonly onProgress?: ((done: number, total: number) => void) | undefined;
  readonly signal?: AbortSignal | undefined;
  /** W3C trace context sent with every request, as `submit`'s: each task's spans continue it. */
  readonly traceparent?: string | undefined;
}

/** What `submitBatch` answers: one result per task in input order, and the batch of each request. */
export interface SubmitBatchResult {
  readonly results: BatchItemResult[];
  /**
   * Per request that made a batch: its batch id and the input indexes it covered, `[from, from +
   * count)`. A request whose every item was refused made none (400 `all_items_refused`): its
   * items' errors are in `results`, and it is not listed here.
   */
  readonly batches: { readonly batchId: string; readonly from: number; readonly count: number }[];
}

/** One input's outcome, in input order. `created` is false when an idempotency key matched an earlier task. */
export type SubmitOutcome =
  | { readonly status: 'fulfilled'; readonly task: Task; readonly created: boolean }
  | { readonly status: 'rejected'; readonly error: unknown };

interface RequestOptions {
  readonly query?: Readonly<Record<string, string | number | undefined>>;
  readonly body?: unknown;
  /** Safe to send again when no answer (or a transient one) came back. */
  readonly repeatable: boolean;
  readonly signal?: AbortSignal | undefined;
  /** Headers beyond accept and content-type (signed with the rest). */
  readonly headers?: Readonly<Record<string, string>>;
}

const RETRYABLE_STATUSES = new Set([429, 502, 503, 504]);

export class SchedulerClient {
  readonly endpoint: string;
  readonly #base: URL;
  readonly #signer: RequestSigner | undefined;
  readonly #timeoutMs: number;
  readonly #maxRetries: number;
  readonly #fetch: typeof fetch;

  constructor(options: SchedulerClientOptions) {
    let base: URL;
    try {
      base = new URL(options.endpoint);
    } catch {
      throw new SchedulerClientError(
        `Invalid endpoint "${options.endpoint}": give a URL such as http://127.0.0.1:3000`,
      );
    }
    // A trailing slash makes relative paths resolve under a stage prefix (`/prod/`).
    if (!base.pathname.endsWith('/')) base.pathname = `${base.pathname}/`;
    this.#base = base;
    this.endpoint = base.toString().replace(/\/$/, '');
    this.#timeoutMs = options.timeoutMs ?? 30_000;
    this.#maxRetries = options.maxRetries ?? 2;
    this.#fetch = options.fetch ?? globalThis.fetch;
    if (options.sign ?? !isLocalEndpoint(base)) {
      const region =
        options.region ?? regionOfEndpoint(base) ?? process.env.AWS_REGION ?? process.env.AWS_DEFAULT_REGION;
      if (!region) {
        throw new SchedulerClientError(
          `No signing region for ${this.endpoint}: pass { region } or set AWS_REGION (or use an execute-api URL)`,
        );
      }
      this.#signer = new RequestSigner({
        region,
        credentials: options.credentials,
      });
    }
  }

  /**
   * Submit a task; resolves with it QUEUED (or, for a repeated idempotency key, the original task).
   * `traceparent` (W3C trace context, e.g. from your tracer's active span) is sent as the header
   * of that name: the task's spans continue your trace (docs/events.md).
   */
  async submit(
    input: SubmitTaskInput,
    options: { signal?: AbortSignal | undefined; traceparent?: string | undefined } = {},
  ): Promise<Task> {
    return (await this.#submit(input, options.signal, options.traceparent)).task;
  }

  /** Submit several tasks, at most `concurrency` at a time; never rejects: each input gets an outcome. */
  async submitMany(inputs: readonly SubmitTaskInput[], options: SubmitManyOptions = {}): Promise<SubmitOutcome[]> {
    const concurrency = Math.max(1, Math.floor(options.concurrency ?? 8));
    const outcomes: SubmitOutcome[] = new Array(inputs.length);
    let next = 0;
    const lane = async () => {
      while (next < inputs.length) {
        const index = next++;
        try {
          options.signal?.throwIfAborted();
          const { task, created } = await this.#submit(inputs[index]!, options.signal);
          outcomes[index] = { status: 'fulfilled', task, created };
        } catch (error) {
          outcomes[index] = { status: 'rejected', error };
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(concurrency, inputs.length) }, lane));
    return outcomes;
  }

  /**
   * Submit many tasks in batch requests (POST /v1/tasks/batch, up to 1,000 a request): an array
   * larger than `chunkSize` is split, the results come back in input order. Each item is validated
   * on its own (a refused one is `{ error }` at its index, the others go ahead; a request whose
   * every item is refused makes no batch, and its items' errors are in `results` all the same). A request whose
   * answer is lost is sent again: the same body names the same batch and creates nothing twice.
   */
  async submitBatch(tasks: readonly SubmitTaskInput[], options: SubmitBatchOptions = {}): Promise<SubmitBatchResult> {
    const chunkSize = Math.min(MAX_BATCH_TASKS, Math.max(1, Math.floor(options.chunkSize ?? MAX_BATCH_TASKS)));
    const chunks: { from: number; tasks: readonly SubmitTaskInput[] }[] = [];
    for (let from = 0; from < tasks.length; from += chunkSize)
      chunks.push({ from, tasks: tasks.slice(from, from + chunkSize) });
    if (options.thenTask && chunks.length === 0) {
      // The API refuses a batch of no tasks; an empty answer would leave the then-task unsubmitted.
      throw new SchedulerClientError('A then-task needs at least one task in its batch: none were given');
    }
    if (options.thenTask && chunks.length > 1) {
      throw new SchedulerClientError(
        `A then-task needs all its tasks in one batch request: ${tasks.length} tasks is more than ${chunkSize}`,
      );
    }
    const results = new Array<BatchItemResult>(tasks.length);
    const batches = new Array<SubmitBatchResult['batches'][number]>(chunks.length);
    let done = 0;
    let next = 0;
    const lane = async () => {
      while (next < chunks.length) {
        const n = next++;
        const chunk = chunks[n]!;
        options.signal?.throwIfAborted();
        const body: SubmitBatchInput = {
          tasks: [...chunk.tasks],
          // biome-ignore lint/suspicious/noThenProperty: the field's name is pinned (PRODUCT.md, POST /v1/tasks/batch)
          ...(options.thenTask ? { then: options.thenTask } : {}),
          ...(options.idempotencyKey === undefined
            ? {}
            : { idempotencyKey: chunks.length === 1 ? options.idempotencyKey : `${options.idempotencyKey}-${n}` }),
        };
        const answer = await this.#request<BatchSubmitResult>('POST', 'v1/tasks/batch', {
          body,
          ...(options.traceparent ? { headers: { traceparent: options.traceparent } } : {}),
          repeatable: true,
          signal: options.signal,
        }).then(
          (response) => response.body,
          (error: unknown) => {
            // Every item of this request refused: nothing written, no batch; each item's error
            // comes back at its index, as it would in a 200.
            const refused = allItemsRefused(error, chunk.tasks.length);
            if (!refused) throw error;
            return { results: refused };
          },
        );
        answer.results.forEach((result, i) => {
          results[chunk.from + i] = result;
        });
        if ('batchId' in answer) batches[n] = { batchId: answer.batchId, from: chunk.from, count: chunk.tasks.length };
        done += chunk.tasks.length;
        options.onProgress?.(done, tasks.length);
      }
    };
    const lanes = Math.min(chunks.length, Math.max(1, Math.floor(options.concurrency ?? 2)));
    await Promise.all(Array.from({ length: lanes }, lane));
    return { results, batches: batches.filter((batch) => batch !== undefined) };
  }

  /** A batch: its members' counts by how they ended, and its then-task once submitted. */
  async getBatch(batchId: string, options: { signal?: AbortSignal | undefined } = {}): Promise<Batch> {
    return (await this.#request<Batch>('GET', `v1/batches/${encodeURIComponent(batchId)}`, read(options.signal))).body;
  }

  /**
   * One page of a batch's tasks, in the order they were submitted, optionally those in one state.
   * A batch's succeeded tasks are listed here, not among its tenant's (`listPage`).
   */
  async listBatchTasks(
    batchId: string,
    query: { state?: TaskState | undefined; limit?: number | undefined; cursor?: string | undefined } = {},
    options: { signal?: AbortSignal | undefined } = {},
  ): Promise<TaskPage> {
    return (
      await this.#request<TaskPage>('GET', `v1/batches/${encodeURIComponent(batchId)}/tasks`, {
        ...read(options.signal),
        query: { state: query.state, limit: query.limit, cursor: query.cursor },
      })
    ).body;
  }

  /** One page of a tenant's batches, newest first. */
  async listBatches(
    query: { tenantId: string; limit?: number | undefined; cursor?: string | undefined },
    options: { signal?: AbortSignal | undefined } = {},
  ): Promise<BatchPage> {
    return (
      await this.#request<BatchPage>('GET', 'v1/batches', {
        ...read(options.signal),
        query: { tenantId: query.tenantId, limit: query.limit, cursor: query.cursor },
      })
    ).body;
  }

  async #submit(
    input: SubmitTaskInput,
    signal: AbortSignal | undefined,
    traceparent?: string | undefined,
  ): Promise<{ task: Task; created: boolean }> {
    const { status, body } = await this.#request<Task>('POST', 'v1/tasks', {
      body: input,
      ...(traceparent ? { headers: { traceparent } } : {}),
      // With a key the server answers a repeat with the original task, so a retry is harmless.
      repeatable: input.idempotencyKey !== undefined,
      signal,
    });
    return { task: body, created: status === 202 };
  }

  /** The task and, while it is QUEUED, why it waits. Throws NotFoundError for an unknown id. */
  async get(taskId: string, options: { signal?: AbortSignal | undefined } = {}): Promise<TaskDetail> {
    return (await this.#request<TaskDetail>('GET', `v1/tasks/${encodeURIComponent(taskId)}`, read(options.signal)))
      .body;
  }

  /** One page of a tenant's tasks, newest first. */
  async listPage(query: ListTasksQuery, options: { signal?: AbortSignal | undefined } = {}): Promise<TaskPage> {
    return (
      await this.#request<TaskPage>('GET', 'v1/tasks', {
        ...read(options.signal),
        query: { tenantId: query.tenantId, state: query.state, limit: query.limit, cursor: query.cursor },
      })
    ).body;
  }

  /** Every page, following `nextCursor` until the last. */
  async *listPages(
    query: ListTasksQuery,
    options: { signal?: AbortSignal | undefined } = {},
  ): AsyncGenerator<TaskPage> {
    let cursor = query.cursor;
    do {
      const page = await this.listPage({ ...query, cursor }, options);
      yield page;
      cursor = page.nextCursor;
    } while (cursor);
  }

  /** Every task of a tenant matching the filters, newest first, fetched page by page as iterated. */
  async *list(query: ListTasksQuery, options: { signal?: AbortSignal | undefined } = {}): AsyncGenerator<Task> {
    for await (const page of this.listPages(query, options)) yield* page.items;
  }

  /** Cancel a waiting task (CANCELLED), or ask a running one to stop (`cancelRequested`). */
  async cancel(taskId: string, options: { signal?: AbortSignal | undefined } = {}): Promise<Task> {
    return (
      await this.#request<Task>('POST', `v1/tasks/${encodeURIComponent(taskId)}/cancel`, {
        repeatable: true,
        signal: options.signal,
      })
    ).body;
  }

  /** Queue a FAILED or CANCELLED task again with a fresh attempt budget. */
  async retry(taskId: string, options: { signal?: AbortSignal | undefined } = {}): Promise<Task> {
    return (
      await this.#request<Task>('POST', `v1/tasks/${encodeURIComponent(taskId)}/retry`, {
        repeatable: false,
        signal: options.signal,
      })
    ).body;
  }

  /**
   * Poll until the task is SUCCEEDED, FAILED or CANCELLED and resolve with it (a failure is a
   * result here, not an exception: look at `state` and `error`). A poll that got no answer, or a
   * transient one (429, 502–504), after the client's own retries, does not end the wait: polling
   * goes on while time remains (a restart, a deploy). Throws WaitTimeoutError after `timeoutMs`
   * (its `cause` the last such failure, if the last poll failed), the signal's reason when aborted,
   * NotFoundError for an unknown id and any other refusal at once.
   */
  async waitFor(taskId: string, options: WaitForOptions = {}): Promise<TaskDetail> {
    const timeoutMs = options.timeoutMs ?? 300_000;
    const pollMs = Math.max(10, options.pollMs ?? 500);
    const deadline = Date.now() + timeoutMs;
    let last: TaskDetail | undefined;
    for (;;) {
      options.signal?.throwIfAborted();
      let failure: SchedulerClientError | undefined;
      try {
        last = await this.get(taskId, { signal: options.signal });
        if (TERMINAL_STATES.includes(last.state)) return last;
      } catch (error) {
        options.signal?.throwIfAborted();
        if (!isTransient(error)) throw error;
        failure = error;
      }
      const remaining = deadline - Date.now();
      if (remaining <= 0) throw new WaitTimeoutError(taskId, timeoutMs, last, failure);
      await pause(Math.min(pollMs, remaining), options.signal);
    }
  }

  /** Effective settings (stored, configured or default), live counts and fair share. */
  async getTenant(tenantId: string, options: { signal?: AbortSignal | undefined } = {}): Promise<Tenant> {
    return (await this.#request<Tenant>('GET', `v1/tenants/${encodeURIComponent(tenantId)}`, read(options.signal)))
      .body;
  }

  /**
   * Remove a tenant's stored settings, a pause with them: it follows the configuration file (or
   * the defaults) again. Resolves with the tenant as it is then; the same again changes nothing.
   */
  async deleteTenant(tenantId: string, options: { signal?: AbortSignal | undefined } = {}): Promise<Tenant> {
    return (
      await this.#request<Tenant>('DELETE', `v1/tenants/${encodeURIComponent(tenantId)}`, {
        repeatable: true,
        signal: options.signal,
      })
    ).body;
  }

  /**
   * Store a tenant's settings (they override the configuration file). They replace what was
   * stored: a `paused` left out resumes a paused tenant (see `setTenantPaused`).
   */
  async putTenant(
    tenantId: string,
    settings: TenantSettingsInput,
    options: { signal?: AbortSignal | undefined } = {},
  ): Promise<StoredTenantSettings> {
    return (
      await this.#request<StoredTenantSettings>('PUT', `v1/tenants/${encodeURIComponent(tenantId)}`, {
        body: settings,
        repeatable: true,
        signal: options.signal,
      })
    ).body;
  }

  /**
   * Pause (or resume) a tenant: its stored settings with `paused` set, the others kept as they are
   * (read, then stored: a settings change between the two is overwritten).
   */
  async setTenantPaused(
    tenantId: string,
    paused: boolean,
    options: { signal?: AbortSignal | undefined } = {},
  ): Promise<StoredTenantSettings> {
    const { weight, maxConcurrency, maxStartsPerSecond, burst } = await this.getTenant(tenantId, options);
    return this.putTenant(
      tenantId,
      {
        weight,
        maxConcurrency,
        ...(maxStartsPerSecond === undefined ? {} : { maxStartsPerSecond }),
        ...(burst === undefined ? {} : { burst }),
        paused,
      },
      options,
    );
  }

  /** Every task type, paused or not, with who paused it and its parked tasks (callers for every tenant). */
  async listTaskTypes(options: { signal?: AbortSignal | undefined } = {}): Promise<TaskTypeView[]> {
    return (await this.#request<{ items: TaskTypeView[] }>('GET', 'v1/task-types', read(options.signal))).body.items;
  }

  /** Pause or resume a task type in every tenant; nothing of it starts after a pause has answered. */
  async putTaskType(
    type: string,
    settings: { paused: boolean },
    options: { signal?: AbortSignal | undefined } = {},
  ): Promise<TaskTypeView> {
    return (
      await this.#request<TaskTypeView>('PUT', `v1/task-types/${encodeURIComponent(type)}`, {
        body: settings,
        repeatable: true,
        signal: options.signal,
      })
    ).body;
  }

  /** Tiers, pools, the busiest tenants and their newest tasks (what `tasks watch` and the dashboard show). */
  async status(
    query: { recent?: number | undefined; tenants?: readonly string[] | undefined } = {},
    options: { signal?: AbortSignal | undefined } = {},
  ): Promise<SchedulerStatus> {
    return (
      await this.#request<SchedulerStatus>('GET', 'v1/status', {
        ...read(options.signal),
        query: { recent: query.recent, tenants: query.tenants?.join(',') || undefined },
      })
    ).body;
  }

  async health(options: { signal?: AbortSignal | undefined } = {}): Promise<{ status: 'ok'; time: string }> {
    return (await this.#request<{ status: 'ok'; time: string }>('GET', 'health', read(options.signal))).body;
  }

  async #request<T>(method: string, path: string, options: RequestOptions): Promise<{ status: number; body: T }> {
    const url = new URL(path, this.#base);
    for (const [key, value] of Object.entries(options.query ?? {})) {
      if (value !== undefined) url.searchParams.set(key, String(value));
    }
    const text = options.body === undefined ? undefined : JSON.stringify(options.body);
    const label = `${method} ${url.pathname}`;
    for (let attempt = 0; ; attempt++) {
      const canRetry = options.repeatable && attempt < this.#maxRetries;
      let response: Response;
      try {
        response = await this.#send(method, url, text, options.signal, options.headers);
      } catch (error) {
        if (options.signal?.aborted) throw options.signal.reason;
        if (canRetry) {
          await pause(backoff(attempt), options.signal);
          continue;
        }
        throw new SchedulerConnectionError(this.endpoint, error);
      }
      if (canRetry && RETRYABLE_STATUSES.has(response.status)) {
        await response.body?.cancel();
        await pause(backoff(attempt), options.signal);
        continue;
      }
      const raw = await response.text();
      let body: unknown;
      try {
        body = raw === '' ? undefined : JSON.parse(raw);
      } catch {
        if (response.ok) {
          throw new SchedulerApiError({
            status: response.status,
            code: 'invalid_response',
            message: `${label} answered ${response.status} with a body that is not JSON`,
            request: label,
          });
        }
        body = { message: raw.slice(0, 200) };
      }
      if (!response.ok) throw apiErrorFor(response.status, body, label);
      return { status: response.status, body: body as T };
    }
  }

  async #send(
    method: string,
    url: URL,
    body: string | undefined,
    signal: AbortSignal | undefined,
    extraHeaders: Readonly<Record<string, string>> = {},
  ): Promise<Response> {
    let headers: Record<string, string> = {
      ...extraHeaders,
      accept: 'application/json',
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    };
    if (this.#signer) {
      headers = await this.#signer.sign({ method, url, headers, body });
    }
    const timeout = AbortSignal.timeout(this.#timeoutMs);
    return this.#fetch(url, {
      method,
      headers,
      body: body ?? null,
      signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
    });
  }
}

/** A failure a later request may not meet: no answer at all, or a transient status. */
function isTransient(error: unknown): error is SchedulerClientError {
  return (
    error instanceof SchedulerConnectionError ||
    (error instanceof SchedulerApiError && RETRYABLE_STATUSES.has(error.status))
  );
}

function read(signal: AbortSignal | undefined): RequestOptions {
  return { repeatable: true, signal };
}

/** 200 ms, 400 ms, 800 ms … with jitter, so a fleet of clients does not retry in step. */
function backoff(attempt: number): number {
  return 200 * 2 ** attempt * (0.5 + Math.random() / 2);
}

/** Waits `ms`; an abort rejects with the signal's reason, as fetch does (not Node's AbortError). */
async function pause(ms: number, signal: AbortSignal | undefined): Promise<void> {
  try {
    await sleep(ms, undefined, { signal });
  } catch (error) {
    signal?.throwIfAborted();
    throw error;
  }
}

/** The per-item errors of a 400 `all_items_refused` answering a batch request of `count` items. */
function allItemsRefused(error: unknown, count: number): BatchItemResult[] | undefined {
  if (!(error instanceof SchedulerApiError) || error.code !== 'all_items_refused') return undefined;
  const results = (error.details as { results?: unknown } | undefined)?.results;
  return Array.isArray(results) && results.length === count ? (results as BatchItemResult[]) : undefined;
}
