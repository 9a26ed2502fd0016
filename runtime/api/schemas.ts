/**
 * Request schemas (zod). They are the single source of truth for validation in the router and
 * for the OpenAPI document. Everything a request carries is checked here before any I/O;
 * cross-field rules that need the task-type registry or the config (unknown type, payload
 * shape, runtime limits) are checked by TaskService.resolveSpec, also before any I/O.
 */

import { z } from 'zod';
import type { SubmitInput } from '../app/task-service.ts';
import { MAX_BATCH_TASKS } from '../core/batch.ts';
import { MAX_DEPENDENCIES } from '../core/dependencies.ts';
import { storableProblem } from '../core/storable.ts';
import { PRIORITY_TIERS, RUNTIMES, TASK_STATES } from '../core/task.ts';
import {
  LIST_LIMIT,
  MAX_CURSOR_LENGTH,
  MAX_ID_LENGTH,
  MAX_PAYLOAD_BYTES,
  MAX_PAYLOAD_DEPTH,
  MIN_NUMBER_MAGNITUDE,
} from './limits.ts';

/** Task, tenant and idempotency ids: safe in URLs, keys and logs. */
export const idSchema = z
  .string()
  .min(1)
  .max(MAX_ID_LENGTH)
  .regex(/^[A-Za-z0-9_.:@-]+$/, 'only letters, digits and _ . : @ - are allowed');

/** Same rule as defineTaskType: dotted lower-case words. */
export const taskTypeNameSchema = z
  .string()
  .min(1)
  .max(MAX_ID_LENGTH)
  .regex(/^[a-z][a-z0-9-]*(\.[a-z][a-z0-9-]*)*$/, 'dotted lower-case words, e.g. "demo.sleep"');

/** Why a JSON value cannot be stored as a payload (a 400, not a 500 from the store). */
export function payloadProblem(value: unknown): string | undefined {
  return storableProblem(value, MAX_PAYLOAD_BYTES);
}

export const payloadSchema = z
  .unknown()
  .superRefine((value, ctx) => {
    const problem = payloadProblem(value);
    if (problem) ctx.addIssue({ code: 'custom', message: problem });
  })
  .meta({
    description:
      `Any JSON value the task type accepts: at most ${MAX_PAYLOAD_BYTES} bytes serialized, nesting at most ` +
      `${MAX_PAYLOAD_DEPTH} levels of objects and arrays, numbers 0 or between ${MIN_NUMBER_MAGNITUDE} and ` +
      `${Number.MAX_SAFE_INTEGER} in magnitude. Keys are kept exactly (\`__proto__\` and \`constructor\` included); ` +
      'a key given twice in one object is refused.',
    // JSON Schema cannot bound nesting or every number at any depth: stated as extensions too.
    'x-max-bytes': MAX_PAYLOAD_BYTES,
    'x-max-depth': MAX_PAYLOAD_DEPTH,
    'x-number-magnitude': { min: MIN_NUMBER_MAGNITUDE, max: Number.MAX_SAFE_INTEGER },
  });

export const resourcesSchema = z.strictObject({
  vcpu: z.number().min(0.25).max(16).optional(),
  memoryMiB: z.number().int().min(128).max(122_880).optional(),
});

/** A submit body's fields; the checks across fields are `submitTaskSchema`'s. */
const submitTaskFields = z.strictObject({
  tenantId: idSchema,
  type: taskTypeNameSchema,
  payload: payloadSchema.optional(),
  priority: z.enum(PRIORITY_TIERS).optional(),
  idempotencyKey: idSchema.optional(),
  resources: resourcesSchema.optional(),
  runtime: z.enum(RUNTIMES).optional(),
  timeoutSeconds: z.number().int().min(1).max(86_400).optional(),
  maxAttempts: z.number().int().min(1).max(100).optional(),
  delaySeconds: z.number().int().min(0).max(31_536_000).optional(),
  runAt: z.iso.datetime({ offset: true }).optional(),
  concurrencyKey: idSchema
    .optional()
    .meta({ description: "At most concurrencyLimit of the tenant's tasks with this key run at once" }),
  concurrencyLimit: z
    .number()
    .int()
    .min(1)
    .max(100)
    .optional()
    .meta({ description: 'With concurrencyKey: how many may be dispatched or running at once (default 1)' }),
  dependsOn: z
    .array(idSchema)
    .min(1)
    .max(MAX_DEPENDENCIES)
    .refine((ids) => new Set(ids).size === ids.length, 'each task id at most once')
    .optional()
    .meta({
      description: `Task ids of the same tenant (at most ${MAX_DEPENDENCIES}, each existing at submit, else 400 unknown_dependency): the task is held (QUEUED, wait.reason "dependencies") until all of them SUCCEEDED; if one ends FAILED or CANCELLED it is CANCELLED with error code DEPENDENCY_FAILED`,
      examples: [['tsk_5f3a9c1e7b2d4e6f8a0b1c2d3e4f5a6b']],
    }),
});

/** A start time is given one way at most. */
function oneStartTime(input: { delaySeconds?: number | undefined; runAt?: string | undefined }, ctx: z.RefinementCtx) {
  if (input.delaySeconds !== undefined && input.runAt !== undefined) {
    ctx.addIssue({ code: 'custom', path: ['runAt'], message: 'give delaySeconds or runAt, not both' });
  }
}

export const submitTaskSchema = submitTaskFields
  .superRefine(oneStartTime)
  .meta({ description: 'A task to run. Fields left out take the task type defaults, then the configured defaults.' });

/** Compile-time proof that what the schema produces is what TaskService.submit takes. */
export type SubmitTaskBody = z.output<typeof submitTaskSchema>;
const _submitFits: (body: SubmitTaskBody) => SubmitInput = (body) => body;
void _submitFits;

/** The body of `PUT /v1/tenants/{id}`: the one definition of tenant settings (core/tenant-settings.ts). */
export { tenantSettingsSchema } from '../core/tenant-settings.ts';

/** Cancel and retry take no input; an empty body or `{}` is accepted for clients that always send one. */
export const emptyBodySchema = z.strictObject({});

const LIMIT_MESSAGE = `an integer from ${LIST_LIMIT.min} to ${LIST_LIMIT.max}`;

export const listTasksQuerySchema = z.strictObject({
  tenantId: idSchema,
  state: z.enum(TASK_STATES).optional(),
  limit: z
    .string()
    .regex(/^[0-9]{1,3}$/, LIMIT_MESSAGE)
    .transform(Number)
    .pipe(z.number().int().min(LIST_LIMIT.min, LIMIT_MESSAGE).max(LIST_LIMIT.max, LIMIT_MESSAGE))
    .optional()
    .transform((limit) => limit ?? LIST_LIMIT.default)
    .meta({ description: `Page size, ${LIST_LIMIT.min}–${LIST_LIMIT.max} (default ${LIST_LIMIT.default})` }),
  cursor: z
    .string()
    .min(1)
    .max(MAX_CURSOR_LENGTH)
    .regex(/^[A-Za-z0-9_-]+$/, 'the opaque nextCursor of a previous page')
    .optional(),
});

/** Routes without query parameters refuse any (strict), so a typo is not silently ignored. */
export const noQuerySchema = z.strictObject({});

export const taskIdParamsSchema = z.strictObject({ taskId: idSchema });
export const tenantIdParamsSchema = z.strictObject({ tenantId: idSchema });
export const taskTypeParamsSchema = z.strictObject({ type: taskTypeNameSchema });

/** The body of `PUT /v1/task-types/{type}`. */
export const taskTypeSettingsSchema = z.strictObject({
  paused: z.boolean().meta({ description: 'True: its queued tasks in every tenant are held; running ones go on' }),
});
export const noParamsSchema = z.strictObject({});

/** Batch ids: `bat_` and a hash (app/batches.ts). */
export const batchIdSchema = z
  .string()
  .regex(/^bat_[A-Za-z0-9_-]{1,64}$/, 'a batchId, as POST /v1/tasks/batch answered');

/**
 * The body of `POST /v1/tasks/batch`. Items are checked one by one by the service (a bad item is
 * an error at its index, the others go ahead), so here an item is any JSON value.
 */
export const submitBatchSchema = z
  .strictObject({
    tasks: z
      .array(
        z.unknown().meta({
          description: 'A submit body, as for POST /v1/tasks (SubmitTask); every item names the same tenantId',
        }),
      )
      .min(1)
      .max(MAX_BATCH_TASKS)
      .meta({ description: `1 to ${MAX_BATCH_TASKS} tasks, each validated and idempotent on its own` }),
    // biome-ignore lint/suspicious/noThenProperty: the field's name is pinned (PRODUCT.md, POST /v1/tasks/batch)
    then: submitTaskFields.omit({ dependsOn: true, idempotencyKey: true }).superRefine(oneStartTime).optional().meta({
      description:
        'A submit body without `dependsOn` and `idempotencyKey` (either is 400 invalid_request, an unknown field: it waits for the batch, and the batch names it), submitted once every task of the batch has ended, with `batch: { batchId, succeeded, failed, cancelled }` added to its payload',
    }),
    idempotencyKey: idSchema.optional().meta({
      description:
        'Names the batch: the same key again is the same batch (without it, the same body again is the same batch)',
    }),
  })
  .meta({ description: 'Many tasks of one tenant in one request, and optionally a task to run when all have ended' });

export const batchIdParamsSchema = z.strictObject({ batchId: batchIdSchema });

/** A batch's members: its tenant is the batch's, so none is named. */
export const listBatchTasksQuerySchema = z.strictObject({
  state: listTasksQuerySchema.shape.state,
  limit: listTasksQuerySchema.shape.limit,
  cursor: listTasksQuerySchema.shape.cursor,
});

export const listBatchesQuerySchema = z.strictObject({
  tenantId: idSchema,
  limit: listTasksQuerySchema.shape.limit,
  cursor: listTasksQuerySchema.shape.cursor,
});
