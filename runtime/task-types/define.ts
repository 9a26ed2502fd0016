/**
 * The task-handler API. One call defines a task type: its name, payload schema, defaults and
 * handler. The handler gets a typed payload and a context; it must be safe to run more than
 * once for the same task (at-least-once delivery), which `ctx.idempotencyKey` makes easy.
 */
import type { z } from 'zod';
import { UnknownTaskTypeError, ValidationError } from '../core/errors.ts';
import type { TaskLogger } from '../core/logger.ts';
import type { PriorityTier, Runtime, TaskResources } from '../core/task.ts';

/** Part of the task-handler API (`context.logger`); defined in the core, where the rest of the runtime takes it from. */
export type { TaskLogger };

export interface TaskContext {
  readonly taskId: string;
  readonly tenantId: string;
  readonly type: string;
  /** Stable across attempts: the submit's idempotency key, else the task id. */
  readonly idempotencyKey: string;
  /** 1 for the first attempt. */
  readonly attempt: number;
  readonly maxAttempts: number;
  /** Fencing token of this attempt: pass it to external systems that support fencing. */
  readonly fence: number;
  /**
   * W3C `traceparent` of this attempt's `task.run` span (or of the submit, when spans are not
   * exported), when the task was submitted with one: parent your own spans on it.
   */
  readonly traceparent?: string;
  /** Aborted when the task is cancelled, its lease is lost, or its timeout passes. */
  readonly signal: AbortSignal;
  /** Extend the lease (long tasks). Rejects if the attempt is no longer current. */
  heartbeat(): Promise<void>;
  readonly logger: TaskLogger;
  /** Services the runtime provides (AWS clients, resource names) for handlers that need them. */
  readonly services: TaskServices;
}

/** What handlers may use from the runtime; examples use the AWS clients and the data bucket. */
export interface TaskServices {
  readonly aws?: {
    readonly documents: import('@aws-sdk/lib-dynamodb').DynamoDBDocumentClient;
    readonly dynamodb: import('@aws-sdk/client-dynamodb').DynamoDBClient;
    readonly s3: import('@aws-sdk/client-s3').S3Client;
  };
  /** Names of the example data stores (tables/buckets), by logical name. */
  readonly resources?: Readonly<Record<string, string>> | undefined;
}

export interface TaskTypeDefaults {
  readonly priority?: PriorityTier;
  readonly runtime?: Runtime;
  readonly resources?: Partial<TaskResources>;
  readonly timeoutSeconds?: number;
  readonly maxAttempts?: number;
}

export interface TaskTypeDefinition<Payload = unknown> {
  readonly type: string;
  readonly description: string;
  readonly payload: z.ZodType<Payload>;
  readonly defaults?: TaskTypeDefaults;
  handler(payload: Payload, context: TaskContext): Promise<unknown>;
}

/**
 * Marks what defineTaskType made, so a task module's entries are checked at load (modules.ts).
 * Symbol.for, not a module-local symbol: a task module may import another copy of this package
 * (the installed one) than the runtime that loads it (this repository's sources).
 */
const TASK_TYPE = Symbol.for('serverless-task-scheduler.TaskType');

/** Define a task type; the payload type is inferred from the schema. */
export function defineTaskType<Schema extends z.ZodType>(definition: {
  type: string;
  description: string;
  payload: Schema;
  defaults?: TaskTypeDefaults;
  handler: (payload: z.output<Schema>, context: TaskContext) => Promise<unknown>;
}): TaskTypeDefinition<z.output<Schema>> {
  if (!/^[a-z][a-z0-9-]*(\.[a-z][a-z0-9-]*)*$/.test(definition.type)) {
    throw new Error(`Task type name "${definition.type}" must be dotted lower-case words, e.g. "reports.weekly-sales"`);
  }
  if (typeof definition.handler !== 'function') {
    throw new Error(`Task type "${definition.type}": handler must be a function`);
  }
  const defined = { ...definition };
  Object.defineProperty(defined, TASK_TYPE, { value: true });
  return Object.freeze(defined) as TaskTypeDefinition<z.output<Schema>>;
}

/** Whether `value` was made by defineTaskType (by any copy of this package). */
export function isTaskTypeDefinition(value: unknown): value is AnyTaskTypeDefinition {
  return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[TASK_TYPE] === true;
}

/** A definition of any payload type (the registry stores them side by side). */
// biome-ignore lint/suspicious/noExplicitAny: each definition has its own payload type
export type AnyTaskTypeDefinition = TaskTypeDefinition<any>;

export class TaskTypeRegistry {
  readonly #types = new Map<string, TaskTypeDefinition<unknown>>();

  constructor(definitions: readonly AnyTaskTypeDefinition[] = []) {
    for (const definition of definitions) this.register(definition);
  }

  register<P>(definition: TaskTypeDefinition<P>): this {
    if (this.#types.has(definition.type)) throw new Error(`Task type "${definition.type}" is registered twice`);
    this.#types.set(definition.type, definition as TaskTypeDefinition<unknown>);
    return this;
  }

  get(type: string): TaskTypeDefinition<unknown> {
    const definition = this.#types.get(type);
    if (!definition) throw new UnknownTaskTypeError(type, this.names());
    return definition;
  }

  has(type: string): boolean {
    return this.#types.has(type);
  }

  names(): string[] {
    return [...this.#types.keys()].sort();
  }

  /** Validate a payload against its type's schema (at submit and again before running). */
  parsePayload(type: string, payload: unknown): unknown {
    const parsed = this.get(type).payload.safeParse(payload);
    if (!parsed.success) {
      throw new ValidationError('invalid_payload', `Payload does not match task type "${type}"`, {
        issues: parsed.error.issues.map((issue) => ({ path: issue.path.join('.'), message: issue.message })),
      });
    }
    return parsed.data;
  }
}
