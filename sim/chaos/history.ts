/**
 * What a chaos run records: the truth as DynamoDB and SQS saw it (every applied task write,
 * every receive), what the API told its callers, and what the workers' handlers did. The
 * checker reads only this.
 */
import { createHash } from 'node:crypto';
import type { Task, TenantSettings } from '../../runtime/core/task.ts';
import type { PartitionThroughput } from '../aws/capacity.ts';
import type { LambdaAccount } from '../aws/lambda.ts';
import type { ReceiveRecord } from '../aws/sqs.ts';

export interface History {
  readonly seed: number;
  readonly startMs: number;
  endMs: number;
  readonly tenants: Readonly<Record<string, TenantSettings>>;
  /** Submits the API acknowledged, with the wait bound its describe gave right after. */
  readonly accepted: {
    readonly taskId: string;
    readonly tenantId: string;
    readonly atMs: number;
    readonly maxAttempts: number;
    readonly maxWaitSeconds: number | null;
    readonly boundAtMs: number;
  }[];
  /**
   * Every wait bound the API gave (or why not) when a client asked: right after each submit, and
   * in some scenarios again a few seconds later while the task still waited.
   */
  readonly bounds: {
    readonly taskId: string;
    readonly tenantId: string;
    /** When the answer arrived (the bound runs from here), and when it was asked for (default: atMs). */
    readonly atMs: number;
    readonly askedAtMs?: number | undefined;
    readonly maxWaitSeconds: number | null;
    readonly noBound?: string | undefined;
    /** A bound on the Lambda pool's pace: the slots it assumed freed between two instants (epoch ms). */
    readonly assumedFreed?:
      | {
          readonly slots: number;
          readonly fromMs: number;
          readonly byMs: number;
          /** Its tenant's tasks running when it was asked have all ended by then (as its tasks ran lately). */
          readonly tenantFreeByMs?: number | undefined;
        }
      | undefined;
    /** A bound on the Lambda pool's headroom: fewer than `slots` tasks hold it at every instant between two (epoch ms). */
    readonly assumedHeadroom?: { readonly slots: number; readonly fromMs: number; readonly byMs: number } | undefined;
    /** A task the snapshot predated: at most `atMost` other tenants start waiting in its pool between two instants. */
    readonly assumedJoins?: { readonly atMost: number; readonly fromMs: number; readonly byMs: number } | undefined;
    /** Its tenant below its fair share: the summed weight of the tenants with work stays at most `atMost` between two instants. */
    readonly assumedBusyWeight?:
      | { readonly atMost: number; readonly fromMs: number; readonly byMs: number }
      | undefined;
    /** The snapshot the answer rests on (`wait.asOf`): a task in its rotation was in the scheduler's engine by then. */
    readonly asOfMs?: number | undefined;
  }[];
  /** When a scheduler's engine first took each task in (the harness watches SchedulingPolicy.add). */
  readonly admitted: Map<string, number>;
  /**
   * Every time a scheduler's engine took each task in (after a handover it is taken in again; a
   * retried task is taken in again once due): the wait-bound check wants the first since the task
   * last became QUEUED. Absent in histories made before it existed (then `admitted`).
   */
  readonly admissions?: Map<string, number[]>;
  /** Scheduler leases taken (each invocation's, by owner), to tell when none could dispatch. */
  readonly leases: { readonly atMs: number; readonly owner: string }[];
  /** Scheduler invocations' stalls (their calls held), [from, to). */
  readonly stalls: { readonly fromMs: number; readonly toMs: number; readonly component: string }[];
  /**
   * Pauses and resumes an operator asked for (flow scenario): a tenant's or a task type's, when
   * the request was sent and when it answered 200 (undefined: it never answered, and may or may
   * not have applied).
   */
  readonly pauses: {
    readonly kind: 'tenant' | 'type';
    readonly id: string;
    readonly paused: boolean;
    readonly requestedAtMs: number;
    readonly answeredAtMs: number | undefined;
  }[];
  /** Each accepted (or written) task's `dependsOn`, for those submitted with dependencies. */
  readonly dependsOn?: Map<string, readonly string[]>;
  /**
   * Batches the API acknowledged (POST /v1/tasks/batch, issue 25): their members (also in
   * `accepted`) and the id their then-task must have.
   */
  readonly batches?: {
    readonly batchId: string;
    readonly tenantId: string;
    readonly memberIds: readonly string[];
    readonly thenTaskId: string;
    readonly atMs: number;
  }[];
  /** Submits the client gave up on (never acknowledged; the task may still exist). */
  unacknowledged: number;
  /** Every handler run that began. */
  readonly runs: { readonly taskId: string; readonly fence: number; readonly attempt: number; readonly atMs: number }[];
  /** Attempts a worker learned it had started (its start write answered). */
  readonly starts: { readonly taskId: string; readonly fence: number; readonly component: string }[];
  /** Components that crashed (worker processes, scheduler invocations) and when. */
  readonly deaths: { readonly component: string; readonly atMs: number }[];
  /** Which component sent the RUNNING write of each attempt (`taskId#fence`). */
  startedBy?: ReadonlyMap<string, string>;
  /** Every write applied to the tasks table, in order (task undefined: deleted). */
  writes: { readonly atMs: number; readonly task: Task | undefined }[];
  readonly receives: readonly ReceiveRecord[];
  /** Every message sent, by queue id. */
  readonly sends: readonly { readonly queueId: string; readonly body: string; readonly atMs: number }[];
  readonly deadLettered: readonly { readonly queueId: string; readonly body: string; readonly atMs: number }[];
  finalTasks: Task[];
  messagesLeft?: Readonly<Record<string, number>>;
  schedulerInvocations: number;
  /**
   * The scheduler function's invocations by the event that started them (wake, tick, handover)
   * and by how the handler said they ended (idle, handed-over, lease-held, live-elsewhere,
   * nothing-due...); crashed and timed-out ones end nowhere.
   */
  readonly scheduler: { invoked: Record<string, number>; ended: Record<string, number> };
  /** Transport calls: answered, lost after they applied, throttled by the injected fault. */
  readonly calls: { ok: number; lost: number; throttled: number };
  /** DynamoDB's units and its per-partition refusals (sim/aws/capacity.ts), once the run ended. */
  throughput?: PartitionThroughput;
  /** The pools' capacity as configured (the due-start check's "pool capacity free"). */
  readonly pools?: { readonly lambdaSlots: number; readonly fargateVcpu: number };
  /** The account's Lambda concurrency: peak in use, invocations throttled. */
  lambda?: LambdaAccount;
}

/**
 * SHA-256 (first 16 hex digits) of what DynamoDB applied and SQS sent and delivered, with their
 * simulated times: equal digests, equal histories (one seed must always give one).
 */
export function historyDigest(history: History): string {
  const hash = createHash('sha256');
  for (const write of history.writes) hash.update(JSON.stringify(write));
  for (const receive of history.receives) hash.update(JSON.stringify(receive));
  for (const send of history.sends) hash.update(JSON.stringify(send));
  return hash.digest('hex').slice(0, 16);
}
