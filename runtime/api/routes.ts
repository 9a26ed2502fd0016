/**
 * The route table: every route of the HTTP API, the same locally and behind API Gateway.
 * Handlers get validated input and call TaskService; authorization is checked before any write.
 */
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { memberCursor } from '../app/batches.ts';
import { resolveTenantSettings } from '../app/task-service.ts';
import { MAX_BATCH_BODY_BYTES } from '../core/batch.ts';
import type { SchedulerConfig } from '../core/config.ts';
import { type SchedulerError, TaskNotFoundError } from '../core/errors.ts';
import { mostGenerous, pickTenantSettings, type SettingAbove, settingsAbove } from '../core/tenant-settings.ts';
import { mayActFor as principalMayActFor } from './authorization.ts';
import { ALL_TENANTS, callerIdentity } from './caller.ts';
import { ApiError } from './errors.ts';
import {
  EXAMPLE_BATCH,
  EXAMPLE_BATCH_RESULT,
  EXAMPLE_BATCH_SUBMIT,
  EXAMPLE_CURSOR,
  EXAMPLE_STORED_TENANT,
  EXAMPLE_SUBMIT,
  EXAMPLE_SUCCEEDED_TASK,
  EXAMPLE_TASK,
  EXAMPLE_TASK_TYPE,
  EXAMPLE_TENANT,
  EXAMPLE_TENANT_SETTINGS,
  EXAMPLE_UNKNOWN_DEPENDENCY,
  EXAMPLE_WAIT,
} from './examples.ts';
import { LIST_RESPONSE_BUDGET_BYTES, MAX_BODY_BYTES } from './limits.ts';
import { buildOpenApiDocument } from './openapi.ts';
import { type AnyRoute, defineRoute, type ResponseSpec } from './route.ts';
import {
  batchIdParamsSchema,
  emptyBodySchema,
  listBatchesQuerySchema,
  listBatchTasksQuerySchema,
  listTasksQuerySchema,
  noParamsSchema,
  noQuerySchema,
  submitBatchSchema,
  submitTaskSchema,
  taskIdParamsSchema,
  taskTypeParamsSchema,
  taskTypeSettingsSchema,
  tenantIdParamsSchema,
  tenantSettingsSchema,
} from './schemas.ts';
import { statusRoute } from './status.ts';
import { traceparentOf } from './trace-context.ts';
import {
  batchPageSchema,
  batchSubmitResultSchema,
  batchViewSchema,
  errorResponseSchema,
  fitToBudget,
  healthSchema,
  openApiDocumentSchema,
  presentStoredTenant,
  presentTask,
  presentTaskDetail,
  presentTenant,
  storedTenantSchema,
  taskDetailSchema,
  taskPageSchema,
  taskTypeListSchema,
  taskTypeViewSchema,
  taskViewSchema,
  tenantViewSchema,
} from './views.ts';

const ERROR_DESCRIPTIONS: Record<number, string> = {
  400: 'Invalid JSON, or a field, parameter or query value failed validation (details.issues names each field)',
  403: 'The caller may not act for this tenant',
  404: 'No such task (or not visible to the caller)',
  409: 'The task is not in a state that allows this, or the idempotency key was used for another request',
  413: 'The body is larger than 256 KiB',
  415: 'The body is not JSON, or not UTF-8 (a charset other than utf-8)',
};

const errors = (...statuses: number[]): Record<number, ResponseSpec> =>
  Object.fromEntries(
    statuses.map((status) => [status, { description: ERROR_DESCRIPTIONS[status]!, schema: errorResponseSchema }]),
  );

const health = defineRoute({
  method: 'GET',
  path: '/health',
  operationId: 'getHealth',
  summary: 'Liveness check',
  params: noParamsSchema,
  query: noQuerySchema,
  responses: {
    200: {
      description: 'The API is up',
      schema: healthSchema,
      example: { status: 'ok', time: EXAMPLE_TASK.submittedAt },
    },
    ...errors(400),
  },
  async handle({ services }) {
    return { status: 200, body: { status: 'ok', time: services.now().toISOString() } };
  },
});

const submitTask = defineRoute({
  method: 'POST',
  path: '/v1/tasks',
  operationId: 'submitTask',
  summary: 'Submit a task',
  params: noParamsSchema,
  query: noQuerySchema,
  body: { schema: submitTaskSchema, required: true, example: EXAMPLE_SUBMIT },
  responses: {
    202: { description: 'Accepted: the new task, QUEUED', schema: taskViewSchema, example: EXAMPLE_TASK },
    200: {
      description: 'The same tenantId + idempotencyKey was accepted before: the original task',
      schema: taskViewSchema,
      example: EXAMPLE_SUCCEEDED_TASK,
    },
    ...errors(400, 403, 409, 413, 415),
    400: {
      description:
        'Invalid request (invalid_request, ...), or a dependsOn naming tasks the tenant does not have (unknown_dependency, details.missing): nothing written',
      schema: errorResponseSchema,
      example: { error: EXAMPLE_UNKNOWN_DEPENDENCY },
    },
  },
  async handle({ body, services, requireTenant, event }) {
    await requireTenant(body.tenantId);
    const { created, task } = await services.tasks.submit(body, { traceparent: traceparentOf(event) });
    return { status: created ? 202 : 200, body: presentTask(task) };
  },
});

/**
 * Many tasks in one request (issue 25; app/batches.ts). Each item is validated and idempotent on
 * its own; the limits (items, bytes, bytes per item) refuse the whole request before any write.
 */
const submitBatch = defineRoute({
  method: 'POST',
  path: '/v1/tasks/batch',
  operationId: 'submitBatch',
  summary: 'Submit up to 1,000 tasks of one tenant, and optionally a task to run when all have ended',
  params: noParamsSchema,
  query: noQuerySchema,
  body: { schema: submitBatchSchema, required: true, example: EXAMPLE_BATCH_SUBMIT, maxBytes: MAX_BATCH_BODY_BYTES },
  responses: {
    200: {
      description:
        'Per-item results in the order given (the task, or why the item was refused); the same request again answers the same, creating nothing',
      schema: batchSubmitResultSchema,
      example: EXAMPLE_BATCH_RESULT,
    },
    400: {
      description:
        "Not a batch (no tasks, more than 1,000, items of several tenants, an invalid then); an invalid item is an error in its result instead, unless every item is invalid: then `all_items_refused`, each item's error in `details.results`, and nothing is written (no batch, no then-task)",
      schema: errorResponseSchema,
    },
    403: { description: ERROR_DESCRIPTIONS[403]!, schema: errorResponseSchema },
    409: { description: 'The batch idempotencyKey was used for another body', schema: errorResponseSchema },
    413: {
      description: `The body is larger than ${MAX_BATCH_BODY_BYTES} bytes, or an item larger than ${MAX_BODY_BYTES}`,
      schema: errorResponseSchema,
    },
    415: { description: ERROR_DESCRIPTIONS[415]!, schema: errorResponseSchema },
  },
  async handle({ body, services, requireTenant }) {
    body.tasks.forEach((item, index) => {
      const bytes = Buffer.byteLength(JSON.stringify(item) ?? '', 'utf8');
      if (bytes > MAX_BODY_BYTES) {
        throw new ApiError(
          'item_too_large',
          413,
          `tasks[${index}] is ${bytes} bytes; an item may have ${MAX_BODY_BYTES}`,
          {
            details: { index, limitBytes: MAX_BODY_BYTES },
          },
        );
      }
    });
    await requireTenant(services.batches.tenantOf(body));
    const { batchId, results } = await services.batches.submit(body);
    return { status: 200, body: { batchId, results } };
  },
});

const getBatch = defineRoute({
  method: 'GET',
  path: '/v1/batches/{batchId}',
  operationId: 'getBatch',
  summary: "A batch: its members' counts by how they ended, and its then-task once submitted",
  params: batchIdParamsSchema,
  query: noQuerySchema,
  responses: {
    200: { description: 'The batch', schema: batchViewSchema, example: EXAMPLE_BATCH },
    ...errors(400, 404),
  },
  async handle({ params, services, mayActFor }) {
    const batch = await services.batches.describe(params.batchId, mayActFor);
    if (!batch) throw batchNotFound(params.batchId);
    return { status: 200, body: batch };
  },
});

const listBatchTasks = defineRoute({
  method: 'GET',
  path: '/v1/batches/{batchId}/tasks',
  operationId: 'listBatchTasks',
  summary:
    "A batch's tasks in the order they were submitted, optionally in one state (its succeeded tasks are listed here, not among its tenant's)",
  params: batchIdParamsSchema,
  query: listBatchTasksQuerySchema,
  responses: {
    200: {
      description: "One page of the batch's tasks",
      schema: taskPageSchema,
      example: { items: [EXAMPLE_SUCCEEDED_TASK], nextCursor: EXAMPLE_CURSOR },
    },
    ...errors(400, 404),
  },
  async handle({ params, query, services, mayActFor }) {
    const page = await services.batches.members(
      params.batchId,
      { state: query.state, limit: query.limit, cursor: query.cursor },
      mayActFor,
    );
    if (!page) throw batchNotFound(params.batchId);
    // Pages are capped by bytes as well as by count, to fit Lambda's 6 MB response.
    const items = fitToBudget(
      page.items.map(({ task }) => presentTask(task)),
      LIST_RESPONSE_BUDGET_BYTES,
    );
    const next = items.length < page.items.length ? page.items[items.length]!.index : page.nextIndex;
    return {
      status: 200,
      body: next === undefined ? { items } : { items, nextCursor: memberCursor(params.batchId, next) },
    };
  },
});

const listBatches = defineRoute({
  method: 'GET',
  path: '/v1/batches',
  operationId: 'listBatches',
  summary: "A tenant's batches, newest first",
  params: noParamsSchema,
  query: listBatchesQuerySchema,
  responses: {
    200: { description: 'One page of batches', schema: batchPageSchema, example: { items: [EXAMPLE_BATCH] } },
    ...errors(400, 403),
  },
  async handle({ query, services, requireTenant }) {
    await requireTenant(query.tenantId);
    return { status: 200, body: await services.batches.list(query.tenantId, query.limit, query.cursor) };
  },
});

const batchNotFound = (batchId: string): SchedulerError =>
  new ApiError('batch_not_found', 404, `Batch ${batchId} not found`, { details: { batchId } });

const getTask = defineRoute({
  method: 'GET',
  path: '/v1/tasks/{taskId}',
  operationId: 'getTask',
  summary: 'A task and, while it waits, why and for how long at most',
  params: taskIdParamsSchema,
  query: noQuerySchema,
  responses: {
    200: { description: 'The task', schema: taskDetailSchema, example: { ...EXAMPLE_TASK, wait: EXAMPLE_WAIT } },
    ...errors(400, 404),
  },
  async handle({ params, services, mayActFor }) {
    const described = await services.tasks.describe(params.taskId, mayActFor);
    if (!described) throw new TaskNotFoundError(params.taskId);
    return { status: 200, body: presentTaskDetail(described.task, described.wait) };
  },
});

const listTasks = defineRoute({
  method: 'GET',
  path: '/v1/tasks',
  operationId: 'listTasks',
  summary: "A tenant's tasks, newest first",
  params: noParamsSchema,
  query: listTasksQuerySchema,
  responses: {
    200: {
      description: 'One page of tasks',
      schema: taskPageSchema,
      example: { items: [EXAMPLE_SUCCEEDED_TASK], nextCursor: EXAMPLE_CURSOR },
    },
    ...errors(400, 403),
  },
  async handle({ query, services, requireTenant }) {
    await requireTenant(query.tenantId);
    const page = await services.tasks.list({
      tenantId: query.tenantId,
      limit: query.limit,
      state: query.state,
      cursor: query.cursor,
    });
    // Pages are capped by bytes as well as by count, to fit Lambda's 6 MB response.
    const items = fitToBudget(page.items.map(presentTask), LIST_RESPONSE_BUDGET_BYTES);
    const nextCursor =
      items.length < page.items.length
        ? services.store.cursorAfter(page.items[items.length - 1]!, query)
        : page.nextCursor;
    return { status: 200, body: nextCursor ? { items, nextCursor } : { items } };
  },
});

/** Cancel and retry read the task first, so a task of another tenant is a 404 and is never touched. */
const cancelTask = defineRoute({
  method: 'POST',
  path: '/v1/tasks/{taskId}/cancel',
  operationId: 'cancelTask',
  summary: 'Cancel a waiting task, or ask a running one to stop',
  params: taskIdParamsSchema,
  query: noQuerySchema,
  body: { schema: emptyBodySchema, required: false, example: {} },
  responses: {
    200: {
      description: 'The task: CANCELLED, or RUNNING with cancelRequested',
      schema: taskViewSchema,
      example: { ...EXAMPLE_TASK, state: 'CANCELLED', finishedAt: '2026-12-01T09:00:01.000Z' },
    },
    ...errors(400, 404, 409, 413, 415),
  },
  async handle({ params, services, mayActFor }) {
    const task = await services.tasks.get(params.taskId);
    if (!task || !(await mayActFor(task.tenantId))) throw new TaskNotFoundError(params.taskId);
    return { status: 200, body: presentTask(await services.tasks.cancel(params.taskId)) };
  },
});

const retryTask = defineRoute({
  method: 'POST',
  path: '/v1/tasks/{taskId}/retry',
  operationId: 'retryTask',
  summary: 'Queue a FAILED or CANCELLED task again with a fresh attempt budget',
  params: taskIdParamsSchema,
  query: noQuerySchema,
  body: { schema: emptyBodySchema, required: false, example: {} },
  responses: {
    200: { description: 'The task, QUEUED again', schema: taskViewSchema, example: EXAMPLE_TASK },
    ...errors(400, 404, 409, 413, 415),
  },
  async handle({ params, services, mayActFor }) {
    const task = await services.tasks.get(params.taskId);
    if (!task || !(await mayActFor(task.tenantId))) throw new TaskNotFoundError(params.taskId);
    return { status: 200, body: presentTask(await services.tasks.retry(params.taskId)) };
  },
});

const getTenant = defineRoute({
  method: 'GET',
  path: '/v1/tenants/{tenantId}',
  operationId: 'getTenant',
  summary: "A tenant's effective settings, live counts and fair share",
  params: tenantIdParamsSchema,
  query: noQuerySchema,
  responses: {
    200: { description: 'The tenant', schema: tenantViewSchema, example: EXAMPLE_TENANT },
    ...errors(400, 403),
  },
  async handle({ params, services, requireTenant }) {
    await requireTenant(params.tenantId);
    return { status: 200, body: presentTenant(await services.tasks.getTenant(params.tenantId)) };
  },
});

const putTenant = defineRoute({
  method: 'PUT',
  path: '/v1/tenants/{tenantId}',
  operationId: 'putTenant',
  summary: "Store a tenant's settings (they override the configuration file)",
  params: tenantIdParamsSchema,
  query: noQuerySchema,
  body: { schema: tenantSettingsSchema, required: true, example: EXAMPLE_TENANT_SETTINGS },
  responses: {
    200: { description: 'The stored settings', schema: storedTenantSchema, example: EXAMPLE_STORED_TENANT },
    ...errors(400, 413, 415),
    403: {
      description:
        'The caller may not act for this tenant (forbidden), or acts for it but not for every tenant and asks for more than its configured or current settings give: a larger weight or maxConcurrency, a start rate lifted or raised, a pause lifted, or a pause lifted that a caller for every tenant made (settings_above_configured, details.fields)',
      schema: errorResponseSchema,
    },
  },
  async handle({ params, body, services, requireTenant, mayActFor, event }) {
    await requireTenant(params.tenantId);
    // A caller for some tenants only gives its tenant no more than the configured settings or
    // the current ones (which a caller for every tenant may have raised): raising its own weight
    // or quota would take contended capacity from every other tenant.
    if (!(await mayActFor(ALL_TENANTS))) {
      const configured = resolveTenantSettings(services.config, params.tenantId, undefined);
      const current = await services.tasks.tenantSettings(params.tenantId);
      const allowed = mostGenerous(pickTenantSettings(configured), pickTenantSettings(current));
      // An operator's pause is not the tenant's to lift, whatever the file says.
      if (pausedByOperator(services.config, current)) allowed.paused = true;
      const above = settingsAbove(allowed, body);
      if (above.length > 0) throw settingsAboveAllowed(params.tenantId, above);
    }
    const stored = await services.tasks.putTenant(params.tenantId, body, callerOf(event));
    return { status: 200, body: presentStoredTenant(stored) };
  },
});

const deleteTenant = defineRoute({
  method: 'DELETE',
  path: '/v1/tenants/{tenantId}',
  operationId: 'deleteTenant',
  summary:
    "Remove a tenant's stored settings (a pause with them): it follows the configuration file again. The same again is a no-op",
  params: tenantIdParamsSchema,
  query: noQuerySchema,
  responses: {
    200: { description: 'The tenant, as it is now', schema: tenantViewSchema, example: EXAMPLE_TENANT },
    ...errors(400, 403),
  },
  async handle({ params, services, requireTenant, mayActFor }) {
    await requireTenant(params.tenantId);
    if (
      !(await mayActFor(ALL_TENANTS)) &&
      pausedByOperator(services.config, await services.tasks.tenantSettings(params.tenantId))
    ) {
      throw settingsAboveAllowed(params.tenantId, [{ field: 'paused', value: false, allowed: true }]);
    }
    return { status: 200, body: presentTenant(await services.tasks.deleteTenant(params.tenantId)) };
  },
});

/** Pausing a type holds it in every tenant: only a caller that may act for every tenant may. */
const listTaskTypes = defineRoute({
  method: 'GET',
  path: '/v1/task-types',
  operationId: 'listTaskTypes',
  summary: 'The task types, each paused or not, with its parked tasks',
  params: noParamsSchema,
  query: noQuerySchema,
  responses: {
    200: { description: 'The task types', schema: taskTypeListSchema, example: { items: [EXAMPLE_TASK_TYPE] } },
    ...errors(400, 403),
  },
  async handle({ services, requireTenant }) {
    await requireTenant(ALL_TENANTS);
    return { status: 200, body: { items: await services.tasks.listTaskTypes() } };
  },
});

const putTaskType = defineRoute({
  method: 'PUT',
  path: '/v1/task-types/{type}',
  operationId: 'putTaskType',
  summary: 'Pause or resume a task type in every tenant (nothing of it starts after a pause answered)',
  params: taskTypeParamsSchema,
  query: noQuerySchema,
  body: { schema: taskTypeSettingsSchema, required: true, example: { paused: true } },
  responses: {
    200: { description: 'The stored settings', schema: taskTypeViewSchema, example: EXAMPLE_TASK_TYPE },
    ...errors(400, 403, 413, 415),
  },
  async handle({ params, body, services, requireTenant, event }) {
    await requireTenant(ALL_TENANTS);
    return { status: 200, body: await services.tasks.putTaskType(params.type, body, callerOf(event)) };
  },
});

const settingsAboveAllowed = (tenantId: string, above: readonly SettingAbove[]): SchedulerError =>
  new ApiError(
    'settings_above_configured',
    403,
    `A caller for tenant ${tenantId} but not for every tenant may give it no more than its configured or current settings: ${above
      .map((a) => `${a.field} ${a.value ?? 'unlimited'} (at most ${a.allowed})`)
      .join(', ')}; a caller for every tenant ("*" in deploy.callers) may`,
    { details: { tenantId, fields: above } },
  );

/**
 * A pause a caller for every tenant made (an operator, by `pausedBy` and deploy.callers): only
 * such a caller lifts it, by a PUT or by deleting the stored settings. The tenant's own caller
 * could otherwise resume what an operator held (an incident, a runaway job).
 */
const pausedByOperator = (
  config: SchedulerConfig,
  current: { paused?: boolean | undefined; pausedBy?: string | undefined },
): boolean =>
  current.paused === true &&
  current.pausedBy !== undefined &&
  principalMayActFor(config.deploy.callers, current.pausedBy, ALL_TENANTS);

/** Who is acting, for a pause's record: the IAM caller on AWS, `local` without one. */
const callerOf = (event: Parameters<typeof callerIdentity>[0]): string => callerIdentity(event)?.userArn ?? 'local';

const openApi = defineRoute({
  method: 'GET',
  path: '/openapi.json',
  operationId: 'getOpenApi',
  summary: 'This OpenAPI 3.1 document',
  params: noParamsSchema,
  query: noQuerySchema,
  responses: {
    200: {
      description: 'The OpenAPI document',
      schema: openApiDocumentSchema,
      example: { openapi: '3.1.0', info: { title: 'Task scheduler API', version: '1' }, paths: {} },
    },
    ...errors(400),
  },
  async handle({ event }) {
    return { status: 200, body: servedFrom(openApiDocument(), event) };
  },
});

/**
 * The document with the server that served it listed first, so a request tried from it reaches
 * this server: a local runtime on another port than the default, a deployed stack's own URL.
 * API Gateway says the scheme in `x-forwarded-proto`; the local runtime serves plain HTTP.
 */
function servedFrom(document: unknown, event: APIGatewayProxyEventV2): unknown {
  const host = event.headers?.host ?? event.requestContext?.domainName;
  if (!host) return document;
  const scheme = event.headers?.['x-forwarded-proto']?.split(',')[0]?.trim() === 'https' ? 'https' : 'http';
  const url = `${scheme}://${host}`;
  const { servers = [], ...rest } = document as { servers?: { url: string }[] };
  return {
    ...rest,
    servers: [{ url, description: 'The server that served this document' }, ...servers.filter((s) => s.url !== url)],
  };
}

export const API_ROUTES: readonly AnyRoute[] = [
  health,
  submitTask,
  submitBatch,
  listTasks,
  getTask,
  cancelTask,
  retryTask,
  getTenant,
  putTenant,
  deleteTenant,
  listTaskTypes,
  putTaskType,
  getBatch,
  listBatchTasks,
  listBatches,
  statusRoute,
  openApi,
];

let cachedDocument: unknown;
/** Built on first request: the schemas are static. */
function openApiDocument(): unknown {
  cachedDocument ??= buildOpenApiDocument(API_ROUTES);
  return cachedDocument;
}
