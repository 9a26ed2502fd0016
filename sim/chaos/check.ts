/**
 * The checker: the scheduler's guarantees, read off a run's recorded history (what DynamoDB
 * applied, what SQS delivered, what the API answered, what handlers ran).
 *
 * - terminal:      every accepted task ends SUCCEEDED, FAILED or CANCELLED (none lost or stuck);
 * - one-success:   at most one SUCCEEDED write per task, and nothing written after it;
 * - honest-failure: a task ends FAILED (retryable error) only with all its attempts used, and no
 *                  attempt counted whose handler never ran, unless the worker that started it died;
 * - quota:         DISPATCHED + RUNNING per tenant, as stored in DynamoDB, never above its quota;
 * - receives:      no tier message dead-lettered (received maxReceiveCount times);
 * - announcements: tier messages per task stay within what its waits explain: two per time it
 *                  became QUEUED, two per hour it waited, one per 30 receives (a replaced
 *                  message), and two more for retried sends (duplicates a waiting task
 *                  collects every minute are a cost that grows with the backlog);
 * - wait-bound:    a task is dispatched within every maxWaitSeconds the API gave for it while its
 *                  assumptions held (app/wait.ts): checked unless its tenant queued more work, or
 *                  had work fall due, before the task started; extended by the time no scheduler
 *                  could dispatch because one crashed or stalled (planned handovers are in the bound).
 *                  Every bound given is counted once: checked (the task left QUEUED, or was still
 *                  QUEUED at the run's end past its deadline), assumption broken, cancelled while
 *                  waiting, or unresolved (still QUEUED at the run's end, before its deadline);
 * - rotation:      fair share rotates: while a tenant's only task waits in the Lambda pool (its
 *                  tenant running nothing), no other tenant starts two tasks there before it, from
 *                  when a scheduler's engine took it in; one more per scheduler crash or stall
 *                  meanwhile (the rotation's memory is written every 2 s).
 * - rate:          a tenant's recorded dispatch times (each dispatch's `dispatchedAt`, as stored)
 *                  conform to its start-rate limit: at most burst + ⌊W·rate⌋ in any W seconds
 *                  (GCRA over them in time order, runtime/core/policy/rate.ts);
 * - key-limit:     per tenant and concurrency key, the tasks DISPATCHED or RUNNING as stored
 *                  never outnumber the key's limit;
 * - pause:         no task of a tenant or type is recorded dispatched (its `dispatchedAt`) after
 *                  the PUT that paused it answered and before the resume was asked for.
 * - dependency-order: no task submitted with `dependsOn` is recorded DISPATCHED before every one
 *                  of its dependencies is recorded SUCCEEDED;
 * - dependency-failed: a dependent of a task that ends FAILED or CANCELLED ends CANCELLED with
 *                  DEPENDENCY_FAILED, and a dependent so cancelled had a dependency recorded
 *                  FAILED or CANCELLED before;
 * - stranded:      no task is left held on dependencies (QUEUED with `waitingOn`) at the end.
 * - due-start:     a task QUEUED with a later runAt (a delay, a retry's backoff) leaves QUEUED
 *                  within DUE_START_ALLOWANCE_MS of that runAt (extended by scheduler crashes and
 *                  stalls, as the wait bound is), unless the checker sees it held back: never
 *                  announced (a submit that crashed: the backstop's case), its tenant at its quota
 *                  or its pool full meanwhile, or flow control (a pause, a concurrency key, a start
 *                  rate). Each due time is counted once: checked (on time or late), excused, or
 *                  unresolved (still QUEUED at the run's end before its deadline).
 * - then-once:     each acknowledged batch whose members all ended has exactly one then-task (its
 *                  deterministic id; no other task carries the batch's summary), created after
 *                  every member's first end, with the members' end states counted in its payload,
 *                  and it ends too (a count never made would leave it missing: the Celery chord bug).
 */
import { firstNonConforming } from '../../runtime/core/policy/rate.ts';
import { MAX_SCHEDULER_SHARDS } from '../../runtime/core/shards.ts';
import { decodeJsonFields } from '../../runtime/core/storable.ts';
import type { Task } from '../../runtime/core/task.ts';
import { startRateOf } from '../../runtime/core/tenant-settings.ts';
import { tierQueuesFor } from '../../runtime/infra/resources.ts';
import { countBetween } from '../metrics.ts';
import type { History } from './history.ts';

export type Invariant =
  | 'terminal'
  | 'one-success'
  | 'honest-failure'
  | 'quota'
  | 'receives'
  | 'announcements'
  | 'wait-bound'
  | 'rotation'
  | 'rate'
  | 'key-limit'
  | 'pause'
  | 'dependency-order'
  | 'dependency-failed'
  | 'stranded'
  | 'then-once'
  | 'due-start';

export interface Violation {
  readonly invariant: Invariant;
  readonly taskId?: string;
  readonly tenantId?: string | undefined;
  /** Simulated seconds since the run started. */
  readonly atSeconds: number;
  readonly detail: string;
  /** The task's stored states, oldest first: the minimal history to reproduce it from. */
  readonly trace?: string[];
}

export interface CheckSummary {
  readonly violations: Violation[];
  readonly stats: {
    readonly accepted: number;
    readonly succeeded: number;
    readonly failed: number;
    readonly cancelled: number;
    readonly unfinished: number;
    readonly handlerRuns: number;
    readonly waitBounds: {
      /**
       * Bounds given (answers with a number; a task asked about twice has two), each counted once
       * below: given = checked + assumptionBroken + cancelledWaiting + unresolved.
       */
      readonly given: number;
      /** Judged: the task left QUEUED (or the run ended past the deadline) with the assumptions held. */
      readonly checked: number;
      /** The tasks those checked bounds were given for (a task asked about while it waited has several). */
      readonly checkedTasks: number;
      /** Of the checked, those past their deadline (each a wait-bound violation). */
      readonly broken: number;
      /** Its tenant queued more work, or had work fall due, or it was paused or keyed, before it started. */
      readonly assumptionBroken: number;
      /**
       * Of the checked, bounds on the Lambda pool's pace (`assumedFreed`); and bounds on the pace
       * that would have been broken but the pool freed fewer slots than they assumed (counted in
       * `assumptionBroken`).
       */
      readonly onPace: number;
      readonly paceNotKept: number;
      /**
       * Of the checked, bounds on the Lambda pool's headroom (`assumedHeadroom`); and bounds on the
       * headroom that would have been broken but the pool filled meanwhile (in `assumptionBroken`).
       */
      readonly onHeadroom: number;
      readonly headroomNotKept: number;
      /**
       * Late answers whose tenant ran a task they did not count (leased when asked and ending after
       * the pace's count began, or their tenant at its quota during a headroom answer): the index
       * the describe reads its tenant's leased tasks from lagged. In `assumptionBroken`.
       */
      readonly runningNotSeen: number;
      /**
       * Late answers whose task the scheduler took in later than they assumed (a lost or skipped
       * announcement found by the backstop), and late answers for a task whose tenant had another
       * waiting when it was asked (its index lagging): both counted in `assumptionBroken`.
       */
      readonly intakeNotKept: number;
      readonly notOnlyWaitingLate: number;
      /** Bounds that would have been broken but more tenants joined after the snapshot than they counted (in `assumptionBroken`). */
      readonly joinsExceeded: number;
      /** Late, and the tenants with work weighed more than its answer took them to (its tenant below its fair share). */
      readonly busyWeightExceeded: number;
      /**
       * Late, and a worker's report of an end in its pool or of its tenant was delivered again: its
       * first delivery freed nothing (a receive whose answer was lost), so the scheduler learned of
       * that end late (a later delivery or its lease sweep), not within the 2 s the answers allow.
       */
      readonly reportLost: number;
      /** Cancelled while it waited: the wait ended without a start. */
      readonly cancelledWaiting: number;
      /** Still QUEUED when the run ended, before its deadline: neither kept nor broken. */
      readonly unresolved: number;
      /** Answers without a bound, by reason. */
      readonly none: number;
      readonly noneBy: Readonly<Record<string, number>>;
      /** bound / actual wait (the wait at least 1 s) of each checked bound whose task left QUEUED, ascending. */
      readonly ratios: readonly number[];
      /** The same for each task's first answer (asked right after its submit), and for the later ones. */
      readonly ratiosAtSubmit: readonly number[];
      readonly ratiosLater: readonly number[];
      /** Of the checked bounds, the median and the largest of bound / actual wait (the wait at least 1 s). */
      readonly ratio: { readonly median: number; readonly max: number } | null;
      readonly ratioAtSubmit: { readonly median: number; readonly max: number } | null;
      readonly ratioLater: { readonly median: number; readonly max: number } | null;
    };
    /** Solo tasks checked for the rotation, and the most starts of one other tenant ahead of one. */
    readonly rotation: { readonly checked: number; readonly mostStartsOfOneTenantAhead: number };
    /**
     * Flow control: dispatches of rate-limited tenants checked, the most in one second; the most
     * tasks of one key leased at once; dispatches checked against the pauses and the pauses that
     * answered.
     */
    readonly flow: {
      readonly rateLimitedDispatches: number;
      readonly mostRateLimitedInOneSecond: number;
      readonly keyedDispatches: number;
      readonly mostLeasedOfOneKey: number;
      readonly pausesAnswered: number;
      readonly dispatchesChecked: number;
    };
    /** Tasks submitted with dependencies; of them, released to run, and cancelled for a failed one. */
    readonly dependencies: {
      readonly dependents: number;
      readonly ran: number;
      readonly cancelledForDependency: number;
    };
    /** Batches acknowledged, and those whose then-task was checked (every member ended). */
    readonly batches: { readonly acknowledged: number; readonly checked: number; readonly members: number };
    /** The due-start invariant's due times (see the header), and the latest of the checked ones. */
    readonly dueStarts: DueStartStats;
    readonly maxReceivesOfOneMessage: Readonly<Record<string, number>>;
    readonly deadLettered: Readonly<Record<string, number>>;
    readonly mostTierMessagesForOneTask: number;
  };
}

/** Slack on the wait bound for the simulated call latencies (the bound is in whole seconds). */
export const WAIT_BOUND_SLACK_MS = 2_000;
/**
 * How long after a task's end the scheduler may still count its slot (the API's allowance for it
 * to learn of a freed slot, runtime/app/wait.ts SCHEDULER_PACE_SECONDS): a headroom answer
 * assumes the pool not full as the scheduler counts it.
 */
const SLOT_LEARNED_MS = 2_000;

export function checkHistory(history: History): CheckSummary {
  const violations: Violation[] = [];
  const sec = (ms: number) => Math.round((ms - history.startMs) / 100) / 10;
  const writesByTask = new Map<string, { atMs: number; task: NonNullable<History['writes'][number]['task']> }[]>();
  for (const { atMs, task } of history.writes) {
    if (!task) continue;
    const list = writesByTask.get(task.taskId) ?? [];
    list.push({ atMs, task });
    writesByTask.set(task.taskId, list);
  }
  const traceOf = (taskId: string) =>
    (writesByTask.get(taskId) ?? [])
      .slice(-16)
      .map(
        ({ atMs, task }) =>
          `t=${sec(atMs)}s ${task.state} v${task.version} fence=${task.fence} attempts=${task.attempts}${task.error ? ` error=${task.error.name}` : ''}`,
      );
  const runsByTask = new Map<string, History['runs']>();
  for (const run of history.runs) {
    const list = runsByTask.get(run.taskId) ?? [];
    list.push(run);
    runsByTask.set(run.taskId, list);
  }
  const died = new Set(history.deaths.map((death) => death.component));

  const finalById = new Map(history.finalTasks.map((task) => [task.taskId, task]));
  let succeeded = 0;
  let failed = 0;
  let cancelled = 0;
  let unfinished = 0;
  for (const accepted of history.accepted) {
    const final = finalById.get(accepted.taskId);
    if (final?.state === 'SUCCEEDED') succeeded++;
    else if (final?.state === 'FAILED') failed++;
    else if (final?.state === 'CANCELLED') cancelled++;
    else {
      unfinished++;
      violations.push({
        invariant: 'terminal',
        taskId: accepted.taskId,
        tenantId: accepted.tenantId,
        atSeconds: sec(history.endMs),
        detail: final ? `still ${final.state} when the run ended` : 'accepted but not stored',
        trace: traceOf(accepted.taskId),
      });
    }
  }

  for (const [taskId, writes] of writesByTask) {
    // --- one-success ---
    const successAt = writes.findIndex(({ task }) => task.state === 'SUCCEEDED');
    if (successAt >= 0 && successAt < writes.length - 1) {
      violations.push({
        invariant: 'one-success',
        taskId,
        tenantId: writes[0]!.task.tenantId,
        atSeconds: sec(writes[successAt + 1]!.atMs),
        detail: `written ${writes[successAt + 1]!.task.state} after SUCCEEDED`,
        trace: traceOf(taskId),
      });
    }
    // --- honest-failure: judged on each FAILED write, over the attempts since the last reset ---
    let sinceReset: typeof writes = [];
    for (const write of writes) {
      if (write.task.attempts === 0) sinceReset = [];
      sinceReset.push(write);
      if (write.task.state !== 'FAILED' || write.task.error?.retryable === false) continue;
      const runs = (runsByTask.get(taskId) ?? []).filter(
        (run) => run.atMs >= sinceReset[0]!.atMs && run.atMs <= write.atMs,
      );
      const ranFences = new Set(runs.map((run) => run.fence));
      const counted = new Set(sinceReset.filter(({ task }) => task.state === 'RUNNING').map(({ task }) => task.fence));
      const problems: string[] = [];
      if (write.task.attempts < write.task.maxAttempts && write.task.error?.name !== 'DeadLettered') {
        problems.push(`FAILED after ${write.task.attempts} of ${write.task.maxAttempts} attempts`);
      }
      for (const fence of counted) {
        if (ranFences.has(fence)) continue;
        const by = history.startedBy?.get(`${taskId}#${fence}`);
        if (by && died.has(by)) continue; // its worker crashed: a lost running lease
        problems.push(
          `attempt fence=${fence} counted but its handler never ran (started by ${by ?? 'unknown'}, alive)`,
        );
      }
      if (problems.length > 0) {
        violations.push({
          invariant: 'honest-failure',
          taskId,
          tenantId: write.task.tenantId,
          atSeconds: sec(write.atMs),
          detail: `${problems.join('; ')}; handler runs ${runs.length}, error ${write.task.error?.name}`,
          trace: traceOf(taskId),
        });
      }
    }
  }

  // --- quota: replay the stored states in write order ---
  const leased = new Map<string, Map<string, string>>();
  const stateOf = new Map<string, string>();
  const reported = new Set<string>();
  for (const { atMs, task } of history.writes) {
    if (!task) continue;
    const before = stateOf.get(task.taskId);
    stateOf.set(task.taskId, task.state);
    const set = leased.get(task.tenantId) ?? new Map<string, string>();
    leased.set(task.tenantId, set);
    if (task.state === 'DISPATCHED' || task.state === 'RUNNING') set.set(task.taskId, task.state);
    else set.delete(task.taskId);
    const quota = history.tenants[task.tenantId]?.maxConcurrency;
    if (quota !== undefined && set.size > quota && before !== task.state) {
      const key = `${task.tenantId}#${[...set.keys()].sort().join(',')}`;
      if (reported.has(key)) continue;
      reported.add(key);
      violations.push({
        invariant: 'quota',
        taskId: task.taskId,
        tenantId: task.tenantId,
        atSeconds: sec(atMs),
        detail: `${set.size} tasks DISPATCHED or RUNNING against a quota of ${quota}: ${[...set].map(([id, s]) => `${id} ${s}`).join(', ')}`,
        trace: [...set.keys()].flatMap((id) => traceOf(id).map((line) => `${id} ${line}`)),
      });
    }
  }

  // --- receives ---
  const maxReceives: Record<string, number> = {};
  for (const receive of history.receives) {
    maxReceives[receive.queueId] = Math.max(maxReceives[receive.queueId] ?? 0, receive.receiveCount);
  }
  const deadLettered: Record<string, number> = {};
  const tierIds = new Set(tierQueuesFor(MAX_SCHEDULER_SHARDS).map((queue) => queue.id));
  for (const letter of history.deadLettered) {
    deadLettered[letter.queueId] = (deadLettered[letter.queueId] ?? 0) + 1;
    if (!tierIds.has(letter.queueId)) continue;
    const taskId = safeTaskId(letter.body);
    violations.push({
      invariant: 'receives',
      ...(taskId ? { taskId } : {}),
      atSeconds: sec(letter.atMs),
      detail: `a ${letter.queueId} message was received its queue's maxReceiveCount times and dead-lettered`,
      ...(taskId ? { trace: traceOf(taskId) } : {}),
    });
  }

  // --- announcements ---
  const tierSends = new Map<string, number>();
  for (const send of history.sends) {
    if (!tierIds.has(send.queueId)) continue;
    const taskId = safeTaskId(send.body);
    if (taskId) tierSends.set(taskId, (tierSends.get(taskId) ?? 0) + 1);
  }
  const tierReceives = new Map<string, number>();
  for (const receive of history.receives) {
    if (!tierIds.has(receive.queueId)) continue;
    const taskId = safeTaskId(receive.body);
    if (taskId) tierReceives.set(taskId, (tierReceives.get(taskId) ?? 0) + 1);
  }
  let mostAnnouncements = 0;
  for (const [taskId, sent] of tierSends) {
    mostAnnouncements = Math.max(mostAnnouncements, sent);
    const writes = writesByTask.get(taskId) ?? [];
    let entries = 0;
    let queuedMs = 0;
    writes.forEach(({ atMs, task }, i) => {
      if (task.state !== 'QUEUED') return;
      if (i === 0 || writes[i - 1]!.task.state !== 'QUEUED') entries++;
      queuedMs += (writes[i + 1]?.atMs ?? history.endMs) - atMs;
    });
    const allowed =
      2 * entries + 2 * Math.ceil(queuedMs / 3_600_000) + Math.floor((tierReceives.get(taskId) ?? 0) / 30) + 2;
    if (sent > allowed) {
      violations.push({
        invariant: 'announcements',
        taskId,
        tenantId: writes[0]?.task.tenantId,
        atSeconds: sec(history.endMs),
        detail: `${sent} tier messages for a task that became QUEUED ${entries} times and waited ${Math.round(queuedMs / 1000)} s (at most ${allowed} expected)`,
        trace: traceOf(taskId),
      });
    }
  }

  // --- wait-bound ---
  const outages = schedulerOutages(history);
  /** When each tenant's tasks entered QUEUED, and when waiting ones fell due (A1 of the bound). */
  const queuedEvents = new Map<string, { taskId: string; atMs: number }[]>();
  for (const [taskId, writes] of writesByTask) {
    writes.forEach(({ atMs, task }, i) => {
      if (task.state !== 'QUEUED') return;
      const events = queuedEvents.get(task.tenantId) ?? [];
      if (i === 0 || writes[i - 1]!.task.state !== 'QUEUED') events.push({ taskId, atMs });
      const dueMs = Date.parse(task.runAt);
      if (dueMs > atMs) events.push({ taskId, atMs: dueMs });
      queuedEvents.set(task.tenantId, events);
    });
  }
  // Per tenant, when each of its tasks was QUEUED: a bound is for its tenant's only waiting task.
  const queuedSpans = new Map<string, { taskId: string; fromMs: number; toMs: number }[]>();
  for (const [taskId, writes] of writesByTask) {
    let open: { taskId: string; fromMs: number; toMs: number } | undefined;
    for (const { atMs, task } of writes) {
      if (task.state === 'QUEUED' && !open) {
        open = { taskId, fromMs: atMs, toMs: Number.POSITIVE_INFINITY };
        const spans = queuedSpans.get(task.tenantId) ?? [];
        spans.push(open);
        queuedSpans.set(task.tenantId, spans);
      } else if (task.state !== 'QUEUED' && open) {
        open.toMs = atMs;
        open = undefined;
      }
    }
  }
  const joinsByPool = tenantsStartingToWait(writesByTask);
  const mostBusyWeightBetween = busyWeightOf(history, writesByTask);
  const reportLostBetween = reportsRedelivered(history, writesByTask);
  /** Distinct tenants other than `own` that started waiting in `runtime`'s pool in (fromMs, byMs]. */
  const joinedBetween = (runtime: string, own: string, fromMs: number, byMs: number) =>
    new Set(
      (joinsByPool.get(runtime) ?? [])
        .filter((join) => join.atMs > fromMs && join.atMs <= byMs && join.tenantId !== own)
        .map((join) => join.tenantId),
    ).size;
  // When Lambda slots freed: each attempt's leaving DISPATCHED or RUNNING (its end, or its retry).
  const lambdaFreedMs: number[] = [];
  const leasedState = new Map<string, boolean>();
  /** Each attempt's time DISPATCHED or RUNNING, per tenant: a bound's tenantFreeBy is checked against them. */
  const leasedSpans: { tenantId: string; runtime: string; fromMs: number; toMs: number }[] = [];
  const openSpan = new Map<string, (typeof leasedSpans)[number]>();
  for (const { atMs, task } of history.writes) {
    if (!task) continue;
    const leased = task.state === 'DISPATCHED' || task.state === 'RUNNING';
    const was = leasedState.get(task.taskId);
    if (leased && !was) {
      const span = { tenantId: task.tenantId, runtime: task.runtime, fromMs: atMs, toMs: Number.POSITIVE_INFINITY };
      leasedSpans.push(span);
      openSpan.set(task.taskId, span);
    }
    if (!leased && was) {
      const span = openSpan.get(task.taskId);
      if (span) span.toMs = atMs;
      openSpan.delete(task.taskId);
      if (task.runtime === 'lambda') lambdaFreedMs.push(atMs);
    }
    leasedState.set(task.taskId, leased);
  }
  lambdaFreedMs.sort((a, b) => a - b);
  const freedBetween = (fromMs: number, byMs: number) => countBetween(lambdaFreedMs, fromMs, byMs);
  /** The most of `spans` leased at once in [fromMs, byMs], each counted until `learnedMs` after its end. */
  const mostLeased = (
    spans: readonly (typeof leasedSpans)[number][],
    fromMs: number,
    byMs: number,
    learnedMs: number,
  ) => {
    const edges: [number, number][] = [];
    for (const span of spans) {
      const toMs = span.toMs + learnedMs;
      if (span.fromMs > byMs || toMs <= fromMs) continue;
      edges.push([Math.max(span.fromMs, fromMs), 1], [toMs, -1]);
    }
    // Ends before starts at the same instant: a slot freed and refilled at once is not two.
    edges.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
    let now = 0;
    let most = 0;
    for (const [, step] of edges) {
      now += step;
      most = Math.max(most, now);
    }
    return most;
  };
  /** The Lambda pool as the scheduler counts it: each attempt until SLOT_LEARNED_MS after its end. */
  const lambdaSpans = leasedSpans.filter((span) => span.runtime === 'lambda');
  const mostLeasedBetween = (fromMs: number, byMs: number) => mostLeased(lambdaSpans, fromMs, byMs, SLOT_LEARNED_MS);
  const spansOf = new Map<string, (typeof leasedSpans)[number][]>();
  for (const span of leasedSpans) {
    const spans = spansOf.get(span.tenantId);
    if (spans) spans.push(span);
    else spansOf.set(span.tenantId, [span]);
  }
  let onPace = 0;
  let paceNotKept = 0;
  let onHeadroom = 0;
  let headroomNotKept = 0;
  let runningNotSeen = 0;
  let intakeNotKept = 0;
  let notOnlyWaitingLate = 0;
  let joinsExceeded = 0;
  let busyWeightExceeded = 0;
  let reportLost = 0;
  let given = 0;
  let checked = 0;
  let assumptionBroken = 0;
  let cancelledWaiting = 0;
  let unresolved = 0;
  let broken = 0;
  const checkedTasks = new Set<string>();
  const noneBy: Record<string, number> = {};
  const ratios: number[] = [];
  const ratiosAtSubmit: number[] = [];
  const ratiosLater: number[] = [];
  const answered = new Set<string>();
  for (const bound of history.bounds) {
    const first = !answered.has(bound.taskId);
    answered.add(bound.taskId);
    if (bound.maxWaitSeconds === null) {
      noneBy[bound.noBound ?? 'none'] = (noneBy[bound.noBound ?? 'none'] ?? 0) + 1;
      continue;
    }
    given++;
    const writes = writesByTask.get(bound.taskId) ?? [];
    // The answer read the task QUEUED after it was asked for: it left QUEUED at its first other write since.
    const askedAtMs = bound.askedAtMs ?? bound.atMs;
    const left = writes.find(({ atMs, task }) => atMs >= askedAtMs && task.state !== 'QUEUED');
    const leftAt = left?.atMs ?? history.endMs;
    if (left?.task.state === 'CANCELLED') {
      cancelledWaiting++;
      continue;
    }
    const more = (queuedEvents.get(bound.tenantId) ?? []).some(
      (event) => event.taskId !== bound.taskId && event.atMs > askedAtMs && event.atMs < leftAt,
    );
    if (more || flowHeldMeanwhile(history, writes[0]?.task, bound.atMs, leftAt)) {
      assumptionBroken++;
      continue;
    }
    // Its tenant had another task waiting when it was asked (the index the describe counts them
    // from lagged): the answer was for a task that was not its tenant's only waiting one.
    const notOnlyWaiting = (queuedSpans.get(bound.tenantId) ?? []).some(
      (span) => span.taskId !== bound.taskId && span.fromMs <= askedAtMs && span.toMs > askedAtMs,
    );
    // The scheduler took it in later than the answer assumed: by its snapshot's instant (a task
    // the snapshot held), or within the intake allowance (the join instant of `assumedJoins`).
    // Taken in for this wait: the first admission since the task last became QUEUED before the
    // question (a retried task waits again, and is taken in again once due).
    const queuedSinceMs = writes.findLast(({ atMs, task }) => atMs <= askedAtMs && task.state === 'QUEUED')?.atMs;
    const admissions = history.admissions?.get(bound.taskId);
    const admittedMs = admissions
      ? (admissions.find((ms) => ms >= (queuedSinceMs ?? Number.NEGATIVE_INFINITY)) ?? leftAt)
      : history.admitted.get(bound.taskId);
    const joinedByMs = bound.assumedJoins?.byMs ?? bound.asOfMs;
    const intakeLate =
      joinedByMs !== undefined && admittedMs !== undefined && admittedMs > joinedByMs && leftAt > joinedByMs;
    const deadline = extendedBy(outages, bound.atMs, bound.atMs + bound.maxWaitSeconds * 1000 + WAIT_BOUND_SLACK_MS);
    // Still waiting when the run ended, before its deadline: nothing to judge either way.
    if (!left && history.endMs <= deadline) {
      unresolved++;
      continue;
    }
    // Judged only when late, as the pace's assumptions are.
    if ((notOnlyWaiting || intakeLate) && leftAt > deadline) {
      if (notOnlyWaiting) notOnlyWaitingLate++;
      else intakeNotKept++;
      assumptionBroken++;
      continue;
    }
    // A bound on the pool's pace holds while the pool frees what it assumed (bound.ts paceBound).
    const freed = bound.assumedFreed;
    const tenantLate =
      freed?.tenantFreeByMs !== undefined &&
      leasedSpans.some(
        (span) =>
          span.tenantId === bound.tenantId &&
          span.fromMs <= askedAtMs &&
          span.toMs > askedAtMs &&
          span.toMs > (freed.tenantFreeByMs as number),
      );
    if (freed && leftAt > deadline && (tenantLate || freedBetween(freed.fromMs, freed.byMs) < freed.slots)) {
      paceNotKept++;
      assumptionBroken++;
      continue;
    }
    // Its tenant ran a task the answer did not count: one leased when it was asked and ending after
    // the pace's count began (a counted one ends by then, or by tenantFreeBy above), or, on the
    // headroom, its tenant at its quota meanwhile. The describe reads its tenant's leased tasks
    // from an index, which may not show a dispatch of a moment before ("as its indexes show them").
    const own = spansOf.get(bound.tenantId) ?? [];
    const room = bound.assumedHeadroom;
    const quota = history.tenants[bound.tenantId]?.maxConcurrency;
    const unseenOnPace =
      freed !== undefined &&
      own.some(
        (span) =>
          span.fromMs <= askedAtMs &&
          span.toMs > askedAtMs &&
          span.toMs > Math.max(freed.fromMs, freed.tenantFreeByMs ?? Number.NEGATIVE_INFINITY),
      );
    const atQuota =
      room !== undefined &&
      quota !== undefined &&
      mostLeased(own, room.fromMs, Math.min(leftAt - 1, room.byMs), 0) >= quota;
    if (leftAt > deadline && (unseenOnPace || atQuota)) {
      runningNotSeen++;
      assumptionBroken++;
      continue;
    }
    // A bound on the Lambda pool's headroom holds while the pool keeps a free slot (bound.ts headroomBound).
    if (room && leftAt > deadline && mostLeasedBetween(room.fromMs, Math.min(leftAt, room.byMs)) >= room.slots) {
      headroomNotKept++;
      assumptionBroken++;
      continue;
    }
    // More tenants started waiting after the snapshot than the answer counted (wait.assumedJoins).
    const joins = bound.assumedJoins;
    const runtime = writes[0]?.task.runtime ?? 'lambda';
    if (joins && leftAt > deadline && joinedBetween(runtime, bound.tenantId, joins.fromMs, joins.byMs) > joins.atMost) {
      joinsExceeded++;
      assumptionBroken++;
      continue;
    }
    // Its tenant was taken to stay below its fair share, and the tenants with work weighed more (wait.assumedBusyWeight).
    const busy = bound.assumedBusyWeight;
    if (
      busy &&
      leftAt > deadline &&
      mostBusyWeightBetween(busy.fromMs, Math.min(leftAt, busy.byMs)) > busy.atMost + 1e-9
    ) {
      busyWeightExceeded++;
      assumptionBroken++;
      continue;
    }
    // Last, so it excuses only what nothing else did: the scheduler learned of an end it counted on
    // late (a report whose first delivery freed nothing).
    if (
      leftAt > deadline &&
      reportLostBetween(bound.tenantId, writes[0]?.task.runtime, bound.askedAtMs ?? bound.atMs, leftAt)
    ) {
      reportLost++;
      assumptionBroken++;
      continue;
    }
    if (freed) onPace++;
    if (room) onHeadroom++;
    checked++;
    checkedTasks.add(bound.taskId);
    if (left) {
      const ratio = bound.maxWaitSeconds / Math.max(1, (left.atMs - bound.atMs) / 1000);
      ratios.push(ratio);
      (first ? ratiosAtSubmit : ratiosLater).push(ratio);
    }
    if (leftAt > deadline) {
      broken++;
      violations.push({
        invariant: 'wait-bound',
        taskId: bound.taskId,
        tenantId: bound.tenantId,
        atSeconds: sec(deadline),
        detail: `given maxWaitSeconds ${bound.maxWaitSeconds} at t=${sec(bound.atMs)}s (deadline with outages t=${sec(deadline)}s); ${left ? `left QUEUED (${left.task.state}) at t=${sec(left.atMs)}s` : 'never left QUEUED'}`,
        trace: traceOf(bound.taskId),
      });
    }
  }
  for (const list of [ratios, ratiosAtSubmit, ratiosLater]) list.sort((a, b) => a - b);
  const none = Object.values(noneBy).reduce((sum, n) => sum + n, 0);

  // --- rotation ---
  const tasksOfTenant = new Map<string, Set<string>>();
  for (const [taskId, writes] of writesByTask) {
    const tenantId = writes[0]!.task.tenantId;
    tasksOfTenant.set(tenantId, (tasksOfTenant.get(tenantId) ?? new Set()).add(taskId));
  }
  const lambdaDispatches: { atMs: number; taskId: string; tenantId: string }[] = [];
  const previousState = new Map<string, string>();
  for (const { atMs, task } of history.writes) {
    if (!task) continue;
    const before = previousState.get(task.taskId);
    previousState.set(task.taskId, task.state);
    if (task.state === 'DISPATCHED' && before === 'QUEUED' && task.runtime === 'lambda') {
      lambdaDispatches.push({ atMs, taskId: task.taskId, tenantId: task.tenantId });
    }
  }
  const upsets = (fromMs: number, toMs: number) =>
    outages.filter((outage) => outage.fromMs < toMs && outage.toMs > fromMs).length;
  let rotationChecked = 0;
  let mostAhead = 0;
  const firstBound = new Map<string, (typeof history.bounds)[number]>();
  for (const bound of history.bounds) if (!firstBound.has(bound.taskId)) firstBound.set(bound.taskId, bound);
  for (const bound of firstBound.values()) {
    if ((tasksOfTenant.get(bound.tenantId)?.size ?? 0) !== 1 || bound.maxWaitSeconds === null) continue;
    const writes = writesByTask.get(bound.taskId) ?? [];
    if (writes[0]?.task.runtime !== 'lambda') continue;
    const dispatched = writes.find(({ task }) => task.state === 'DISPATCHED');
    if (!dispatched) continue;
    const admittedMs = history.admitted.get(bound.taskId);
    if (admittedMs === undefined) continue;
    const fromMs = Math.max(bound.atMs, admittedMs);
    if (dispatched.atMs <= fromMs) continue;
    rotationChecked++;
    const starts = new Map<string, number>();
    for (const d of lambdaDispatches) {
      if (d.atMs <= fromMs || d.atMs >= dispatched.atMs || d.tenantId === bound.tenantId) continue;
      starts.set(d.tenantId, (starts.get(d.tenantId) ?? 0) + 1);
    }
    const allowed = 1 + upsets(fromMs, dispatched.atMs);
    for (const [tenantId, count] of starts) {
      mostAhead = Math.max(mostAhead, count);
      if (count <= allowed) continue;
      violations.push({
        invariant: 'rotation',
        taskId: bound.taskId,
        tenantId: bound.tenantId,
        atSeconds: sec(dispatched.atMs),
        detail: `tenant ${tenantId} started ${count} Lambda tasks between t=${sec(fromMs)}s and this one-task tenant's start at t=${sec(dispatched.atMs)}s (at most ${allowed}: one, and one per scheduler crash or stall meanwhile)`,
        trace: traceOf(bound.taskId),
      });
    }
  }

  const flow = checkFlow(history, violations, sec, traceOf);
  const dependencies = checkDependencies(history, violations, sec, traceOf, writesByTask, finalById);
  const batches = checkBatches(history, violations, sec, writesByTask, finalById, traceOf);
  const dueStarts = checkDueStarts(history, violations, sec, traceOf, writesByTask, outages);

  return {
    violations,
    stats: {
      accepted: history.accepted.length,
      succeeded,
      failed,
      cancelled,
      unfinished,
      handlerRuns: history.runs.length,
      waitBounds: {
        given,
        checked,
        checkedTasks: checkedTasks.size,
        broken,
        assumptionBroken,
        onPace,
        paceNotKept,
        onHeadroom,
        headroomNotKept,
        runningNotSeen,
        intakeNotKept,
        notOnlyWaitingLate,
        joinsExceeded,
        busyWeightExceeded,
        reportLost,
        cancelledWaiting,
        unresolved,
        none,
        noneBy,
        ratios,
        ratiosAtSubmit,
        ratiosLater,
        ratio: medianAndMax(ratios),
        ratioAtSubmit: medianAndMax(ratiosAtSubmit),
        ratioLater: medianAndMax(ratiosLater),
      },
      rotation: { checked: rotationChecked, mostStartsOfOneTenantAhead: mostAhead },
      flow,
      dependencies,
      batches,
      dueStarts,
      maxReceivesOfOneMessage: maxReceives,
      deadLettered,
      mostTierMessagesForOneTask: mostAnnouncements,
    },
  };
}

/** The median and the largest of ascending `ratios`, to a tenth (null when there are none). */
export function medianAndMax(ratios: readonly number[]): { median: number; max: number } | null {
  if (ratios.length === 0) return null;
  const tenth = (n: number) => Math.round(n * 10) / 10;
  return { median: tenth(ratios[Math.floor((ratios.length - 1) / 2)]!), max: tenth(ratios.at(-1)!) };
}

/** Each dispatch as stored: the write that moved a task from QUEUED to DISPATCHED, with its recorded time. */
function dispatchesOf(history: History): { atMs: number; dispatchedMs: number; task: Task }[] {
  const previous = new Map<string, string>();
  const dispatches: { atMs: number; dispatchedMs: number; task: Task }[] = [];
  for (const { atMs, task } of history.writes) {
    if (!task) continue;
    const before = previous.get(task.taskId);
    previous.set(task.taskId, task.state);
    if (task.state === 'DISPATCHED' && before !== 'DISPATCHED' && task.dispatchedAt) {
      dispatches.push({ atMs, dispatchedMs: Date.parse(task.dispatchedAt), task });
    }
  }
  return dispatches;
}

/** Per tenant or type, the spans in which it was surely paused: from a pause's answer to the next resume's request. */
function pausedSpans(history: History): Map<string, { fromMs: number; toMs: number }[]> {
  const spans = new Map<string, { fromMs: number; toMs: number }[]>();
  const byTarget = Map.groupBy(history.pauses, (pause) => `${pause.kind}#${pause.id}`);
  for (const [target, requests] of byTarget) {
    const ordered = [...requests].sort((a, b) => a.requestedAtMs - b.requestedAtMs);
    ordered.forEach((pause, i) => {
      if (!pause.paused || pause.answeredAtMs === undefined) return;
      const resume = ordered.slice(i + 1).find((next) => !next.paused);
      const list = spans.get(target) ?? [];
      list.push({ fromMs: pause.answeredAtMs, toMs: resume?.requestedAtMs ?? history.endMs });
      spans.set(target, list);
    });
  }
  return spans;
}

/**
 * A bound's assumptions about flow control broke (explain.ts): its tenant or type was paused (as
 * asked, answered or not) between the bound and its start, or it has a concurrency key.
 */
function flowHeldMeanwhile(history: History, task: Task | undefined, fromMs: number, toMs: number): boolean {
  if (!task) return false;
  if (task.concurrencyKey !== undefined) return true;
  return history.pauses.some(
    (pause) =>
      pause.paused &&
      ((pause.kind === 'tenant' && pause.id === task.tenantId) || (pause.kind === 'type' && pause.id === task.type)) &&
      pause.requestedAtMs < toMs &&
      history.pauses.every(
        (resume) =>
          resume.paused ||
          resume.kind !== pause.kind ||
          resume.id !== pause.id ||
          resume.requestedAtMs < pause.requestedAtMs ||
          resume.requestedAtMs > fromMs,
      ),
  );
}

/** The dependency-order, dependency-failed and stranded invariants, over the stored writes. */
function checkDependencies(
  history: History,
  violations: Violation[],
  sec: (ms: number) => number,
  traceOf: (taskId: string) => string[],
  writesByTask: ReadonlyMap<string, readonly { atMs: number; task: Task }[]>,
  finalById: ReadonlyMap<string, Task>,
): CheckSummary['stats']['dependencies'] {
  let ran = 0;
  let cancelledForDependency = 0;
  const firstAt = (taskId: string, states: readonly string[]) =>
    (writesByTask.get(taskId) ?? []).find(({ task }) => states.includes(task.state))?.atMs;
  for (const [taskId, dependsOn] of history.dependsOn ?? []) {
    const dispatchedAtMs = firstAt(taskId, ['DISPATCHED']);
    if (dispatchedAtMs !== undefined) {
      ran++;
      for (const dependencyId of dependsOn) {
        const succeededAtMs = firstAt(dependencyId, ['SUCCEEDED']);
        if (succeededAtMs === undefined || succeededAtMs > dispatchedAtMs) {
          violations.push({
            invariant: 'dependency-order',
            taskId,
            atSeconds: sec(dispatchedAtMs),
            detail: `dispatched at t=${sec(dispatchedAtMs)}s, before its dependency ${dependencyId} succeeded (${succeededAtMs === undefined ? 'never' : `t=${sec(succeededAtMs)}s`})`,
            trace: traceOf(taskId),
          });
        }
      }
    }
    const final = finalById.get(taskId);
    const failedDependency = dependsOn.find((id) => ['FAILED', 'CANCELLED'].includes(finalById.get(id)?.state ?? ''));
    const cancelledForIt = final?.state === 'CANCELLED' && final.error?.code === 'DEPENDENCY_FAILED';
    if (cancelledForIt) cancelledForDependency++;
    if (failedDependency && !cancelledForIt) {
      violations.push({
        invariant: 'dependency-failed',
        taskId,
        atSeconds: sec(history.endMs),
        detail: `its dependency ${failedDependency} ended ${finalById.get(failedDependency)!.state}, and it ended ${final?.state ?? 'missing'}${final?.error ? ` (${final.error.name})` : ''}, not CANCELLED with DEPENDENCY_FAILED`,
        trace: traceOf(taskId),
      });
    }
    if (cancelledForIt) {
      const cancelledAtMs = firstAt(taskId, ['CANCELLED'])!;
      const cause = dependsOn.find((id) => {
        const endedAtMs = firstAt(id, ['FAILED', 'CANCELLED']);
        return endedAtMs !== undefined && endedAtMs <= cancelledAtMs;
      });
      if (!cause) {
        violations.push({
          invariant: 'dependency-failed',
          taskId,
          atSeconds: sec(cancelledAtMs),
          detail: `cancelled with DEPENDENCY_FAILED at t=${sec(cancelledAtMs)}s, but none of ${dependsOn.join(', ')} had failed or been cancelled by then`,
          trace: traceOf(taskId),
        });
      }
    }
  }
  for (const task of history.finalTasks) {
    if (task.state === 'QUEUED' && (task.waitingOn?.length ?? 0) > 0) {
      violations.push({
        invariant: 'stranded',
        taskId: task.taskId,
        tenantId: task.tenantId,
        atSeconds: sec(history.endMs),
        detail: `still held on ${task.waitingOn!.join(', ')} at the end (${task.waitingOn!.map((id) => `${id}: ${finalById.get(id)?.state ?? 'missing'}`).join(', ')})`,
        trace: traceOf(task.taskId),
      });
    }
  }
  return { dependents: history.dependsOn?.size ?? 0, ran, cancelledForDependency };
}

/** The rate, key-limit and pause invariants, over the stored writes (see the header). */
function checkFlow(
  history: History,
  violations: Violation[],
  sec: (ms: number) => number,
  traceOf: (taskId: string) => string[],
): CheckSummary['stats']['flow'] {
  const dispatches = dispatchesOf(history);
  // --- rate ---
  let rateLimitedDispatches = 0;
  let mostInOneSecond = 0;
  for (const [tenantId, settings] of Object.entries(history.tenants)) {
    const rate = startRateOf(settings);
    if (!rate) continue;
    const times = dispatches.filter((d) => d.task.tenantId === tenantId).map((d) => d.dispatchedMs);
    rateLimitedDispatches += times.length;
    const sorted = [...times].sort((a, b) => a - b);
    for (let i = 0, j = 0; i < sorted.length; i++) {
      while (sorted[j]! < sorted[i]! - 1000) j++;
      mostInOneSecond = Math.max(mostInOneSecond, i - j + 1);
    }
    const over = firstNonConforming(rate, times);
    if (over !== undefined) {
      const culprit = dispatches.find((d) => d.task.tenantId === tenantId && d.dispatchedMs === over);
      violations.push({
        invariant: 'rate',
        tenantId,
        atSeconds: sec(over),
        detail: `dispatched at t=${sec(over)}s over its start rate (${rate.perSecond}/s, burst ${rate.burst}): ${sorted.filter((t) => t > over - 2000 && t <= over).length} dispatches in the 2 s up to it`,
        ...(culprit ? { taskId: culprit.task.taskId, trace: traceOf(culprit.task.taskId) } : {}),
      });
    }
  }
  // --- key-limit: replay the stored states in write order ---
  const leasedByKey = new Map<string, Set<string>>();
  let keyedDispatches = 0;
  let mostLeasedOfOneKey = 0;
  const reported = new Set<string>();
  for (const { atMs, task } of history.writes) {
    if (task?.concurrencyKey === undefined) continue;
    const key = JSON.stringify([task.tenantId, task.concurrencyKey]);
    const leased = leasedByKey.get(key) ?? new Set<string>();
    leasedByKey.set(key, leased);
    const wasLeased = leased.has(task.taskId);
    if (task.state === 'DISPATCHED' || task.state === 'RUNNING') leased.add(task.taskId);
    else leased.delete(task.taskId);
    if (!wasLeased && leased.has(task.taskId)) keyedDispatches++;
    mostLeasedOfOneKey = Math.max(mostLeasedOfOneKey, leased.size);
    const limit = task.concurrencyLimit ?? 1;
    const id = `${key}#${[...leased].sort().join(',')}`;
    if (leased.size > limit && !reported.has(id)) {
      reported.add(id);
      violations.push({
        invariant: 'key-limit',
        taskId: task.taskId,
        tenantId: task.tenantId,
        atSeconds: sec(atMs),
        detail: `${leased.size} tasks of key ${task.concurrencyKey} DISPATCHED or RUNNING against its limit of ${limit}: ${[...leased].join(', ')}`,
        trace: [...leased].flatMap((taskId) => traceOf(taskId).map((line) => `${taskId} ${line}`)),
      });
    }
  }
  // --- pause ---
  const spans = pausedSpans(history);
  let dispatchesChecked = 0;
  if (spans.size > 0) {
    for (const { dispatchedMs, task } of dispatches) {
      dispatchesChecked++;
      for (const target of [`tenant#${task.tenantId}`, `type#${task.type}`]) {
        const span = spans.get(target)?.find((s) => dispatchedMs > s.fromMs && dispatchedMs < s.toMs);
        if (!span) continue;
        violations.push({
          invariant: 'pause',
          taskId: task.taskId,
          tenantId: task.tenantId,
          atSeconds: sec(dispatchedMs),
          detail: `dispatched at t=${sec(dispatchedMs)}s while ${target.replace('#', ' ')} was paused (answered t=${sec(span.fromMs)}s, resume asked t=${sec(span.toMs)}s)`,
          trace: traceOf(task.taskId),
        });
      }
    }
  }
  return {
    rateLimitedDispatches,
    mostRateLimitedInOneSecond: mostInOneSecond,
    keyedDispatches,
    mostLeasedOfOneKey,
    pausesAnswered: history.pauses.filter((pause) => pause.answeredAtMs !== undefined).length,
    dispatchesChecked,
  };
}

/**
 * How late past its due time a delayed task may leave QUEUED when nothing the checker sees holds
 * it back, from the design (runtime/scheduler/activation.ts). With no scheduler running the
 * minute tick starts one: at most 60 s after the task's announcement shows in its tier queue (it
 * was sent with the task's delay) or its registered tenant-tier's first entry comes within the
 * 90 s horizon (so usually before it is due). Then 30 s for the scheduler's start and intake
 * under the faults: the Lambda invoke, the lease, the settle (2 s) and resume, the intake's
 * receive (short polls that miss, redeliveries), the dispatch write through lost responses and
 * throttles (the SDK's retries back off for seconds). A scheduler crash or stall meanwhile
 * extends it by the outage (schedulerOutages), as for the wait bound.
 */
export const DUE_START_ALLOWANCE_MS = 60_000 + 30_000;

export interface DueStartStats {
  /** Due times judged: the task left QUEUED, or was still QUEUED at the run's end past its deadline. */
  readonly checked: number;
  /** Of the checked, those past their deadline (each a due-start violation). */
  readonly late: number;
  /** Not judged, past their deadline for a reason the checker sees (see the header). */
  readonly excused: {
    readonly unannounced: number;
    readonly atQuota: number;
    readonly poolFull: number;
    readonly flowHeld: number;
  };
  /** Still QUEUED when the run ended, before the deadline. */
  readonly unresolved: number;
  /** Of the checked, the longest from due to leaving QUEUED, seconds (0 when none). */
  readonly mostLateSeconds: number;
}

/** The due-start invariant (see the header and DUE_START_ALLOWANCE_MS). */
function checkDueStarts(
  history: History,
  violations: Violation[],
  sec: (ms: number) => number,
  traceOf: (taskId: string) => string[],
  writesByTask: ReadonlyMap<string, readonly { atMs: number; task: Task }[]>,
  outages: readonly { fromMs: number; toMs: number }[],
): DueStartStats {
  // Each attempt's time DISPATCHED or RUNNING, with its share of its pool (a Lambda slot, or vCPU).
  const leased: { taskId: string; tenantId: string; runtime: string; weight: number; fromMs: number; toMs: number }[] =
    [];
  const open = new Map<string, (typeof leased)[number]>();
  for (const { atMs, task } of history.writes) {
    if (!task) continue;
    const isLeased = task.state === 'DISPATCHED' || task.state === 'RUNNING';
    const span = open.get(task.taskId);
    if (isLeased && !span) {
      const weight = task.runtime === 'lambda' ? 1 : (task.resources?.vcpu ?? 0);
      const added = {
        taskId: task.taskId,
        tenantId: task.tenantId,
        runtime: task.runtime,
        weight,
        fromMs: atMs,
        toMs: Number.POSITIVE_INFINITY,
      };
      leased.push(added);
      open.set(task.taskId, added);
    } else if (!isLeased && span) {
      span.toMs = atMs;
      open.delete(task.taskId);
    }
  }
  /**
   * The most of `spans` leased at once in [fromMs, toMs], each counted until `learnedMs` after its
   * end: by their share of the pool (`weighed`), or one each.
   */
  const most = (
    spans: readonly (typeof leased)[number][],
    fromMs: number,
    toMs: number,
    learnedMs: number,
    weighed: boolean,
  ) => {
    const edges: [number, number][] = [];
    for (const span of spans) {
      if (span.fromMs > toMs || span.toMs + learnedMs <= fromMs) continue;
      const weight = weighed ? span.weight : 1;
      edges.push([Math.max(span.fromMs, fromMs), weight], [span.toMs + learnedMs, -weight]);
    }
    edges.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
    let now = 0;
    let peak = 0;
    for (const [, step] of edges) {
      now += step;
      peak = Math.max(peak, now);
    }
    return peak;
  };
  const tierIds = new Set(tierQueuesFor(MAX_SCHEDULER_SHARDS).map((queue) => queue.id));
  const announcedAt = new Map<string, number[]>();
  for (const send of history.sends) {
    if (!tierIds.has(send.queueId)) continue;
    const taskId = safeTaskId(send.body);
    if (!taskId) continue;
    const times = announcedAt.get(taskId);
    if (times) times.push(send.atMs);
    else announcedAt.set(taskId, [send.atMs]);
  }
  let checked = 0;
  let late = 0;
  let unresolved = 0;
  let mostLateMs = 0;
  const excused = { unannounced: 0, atQuota: 0, poolFull: 0, flowHeld: 0 };
  for (const [taskId, writes] of writesByTask) {
    for (let i = 0; i < writes.length; i++) {
      const entered = writes[i]!;
      if (entered.task.state !== 'QUEUED' || (i > 0 && writes[i - 1]!.task.state === 'QUEUED')) continue;
      let end = i + 1;
      while (end < writes.length && writes[end]!.task.state === 'QUEUED') end++;
      const span = writes.slice(i, end);
      // Held on dependencies: the dependency invariants' (its release, not its runAt, makes it ready).
      if (span.some(({ task }) => (task.waitingOn?.length ?? 0) > 0)) continue;
      const dueMs = Date.parse(entered.task.runAt);
      // Due at once: the wait bound's; due after the run: nothing to judge.
      if (!(dueMs > entered.atMs) || dueMs >= history.endMs) continue;
      const left = writes[end];
      const deadline = extendedBy(outages, dueMs, dueMs + DUE_START_ALLOWANCE_MS);
      if (!left && history.endMs <= deadline) {
        unresolved++;
        continue;
      }
      const leftAtMs = left?.atMs ?? history.endMs;
      if (leftAtMs > deadline) {
        const task = entered.task;
        const quota = history.tenants[task.tenantId]?.maxConcurrency;
        const others = leased.filter((l) => l.taskId !== taskId);
        const capacity =
          history.pools && (task.runtime === 'lambda' ? history.pools.lambdaSlots : history.pools.fargateVcpu);
        const weight = task.runtime === 'lambda' ? 1 : (task.resources?.vcpu ?? 0);
        if (!(announcedAt.get(taskId) ?? []).some((atMs) => atMs >= entered.atMs && atMs <= deadline)) {
          excused.unannounced++;
          continue;
        }
        const settings = history.tenants[task.tenantId];
        if (flowHeldMeanwhile(history, task, dueMs, leftAtMs) || (settings && startRateOf(settings))) {
          excused.flowHeld++;
          continue;
        }
        if (
          quota !== undefined &&
          most(
            others.filter((l) => l.tenantId === task.tenantId),
            dueMs,
            leftAtMs,
            0,
            false,
          ) >= quota
        ) {
          excused.atQuota++;
          continue;
        }
        if (
          capacity !== undefined &&
          most(
            others.filter((l) => l.runtime === task.runtime),
            dueMs,
            leftAtMs,
            SLOT_LEARNED_MS,
            true,
          ) +
            weight >
            capacity
        ) {
          excused.poolFull++;
          continue;
        }
      }
      checked++;
      mostLateMs = Math.max(mostLateMs, leftAtMs - dueMs);
      if (leftAtMs <= deadline) continue;
      late++;
      violations.push({
        invariant: 'due-start',
        taskId,
        tenantId: entered.task.tenantId,
        atSeconds: sec(deadline),
        detail: `due at t=${sec(dueMs)}s (QUEUED at t=${sec(entered.atMs)}s, deadline with outages t=${sec(deadline)}s); ${left ? `left QUEUED (${left.task.state}) at t=${sec(left.atMs)}s` : 'never left QUEUED'}, ${Math.round((leftAtMs - dueMs) / 1000)} s after it was due`,
        trace: traceOf(taskId),
      });
    }
  }
  return { checked, late, excused, unresolved, mostLateSeconds: Math.round(mostLateMs / 1000) };
}

/** How long after a crash or during a stall no scheduler dispatches: until a lease is taken again, and its settle. */
const RESUME_AFTER_LEASE_MS = 2_000 + 3_000;

/**
 * Intervals in which no scheduler could dispatch for a reason the bound does not include: from a
 * scheduler crash until the next lease is taken (plus the settle time and a resume), and stalls.
 */
function schedulerOutages(history: History): { fromMs: number; toMs: number }[] {
  const intervals: { fromMs: number; toMs: number }[] = [];
  for (const death of history.deaths) {
    if (!death.component.startsWith('scheduler-')) continue;
    const next = history.leases.find((lease) => lease.atMs > death.atMs);
    intervals.push({ fromMs: death.atMs, toMs: (next?.atMs ?? history.endMs) + RESUME_AFTER_LEASE_MS });
  }
  for (const stall of history.stalls) {
    const next = history.leases.find((lease) => lease.atMs > stall.fromMs);
    // A stalled holder may lose its lease: then until the next is taken, as after a crash.
    intervals.push({
      fromMs: stall.fromMs,
      toMs: Math.max(stall.toMs, (next?.atMs ?? stall.toMs) + RESUME_AFTER_LEASE_MS),
    });
  }
  return intervals.sort((a, b) => a.fromMs - b.fromMs);
}

/** `deadlineMs` pushed back by the outage time between `fromMs` and it (and by the outages that then fall inside). */
function extendedBy(outages: readonly { fromMs: number; toMs: number }[], fromMs: number, deadlineMs: number): number {
  let deadline = deadlineMs;
  for (let changed = true; changed; ) {
    changed = false;
    let covered = 0;
    let cursor = fromMs;
    for (const outage of outages) {
      const start = Math.max(outage.fromMs, cursor);
      const end = Math.min(outage.toMs, deadline);
      if (end > start) {
        covered += end - start;
        cursor = end;
      }
    }
    const next = deadlineMs + covered;
    if (next > deadline) {
      deadline = next;
      changed = true;
    }
  }
  return deadline;
}

function safeTaskId(body: string): string | undefined {
  try {
    const parsed = JSON.parse(body) as { taskId?: unknown };
    return typeof parsed.taskId === 'string' ? parsed.taskId : undefined;
  } catch {
    return undefined;
  }
}

const TERMINAL = ['SUCCEEDED', 'FAILED', 'CANCELLED'];

/** A recorded item's payload (stored as JSON text: core/storable.ts). */
const payloadOf = (task: Task): unknown => decodeJsonFields(task as unknown as Record<string, unknown>).payload;

/** then-once: each batch's then-task exists once, after every member's end, with the right counts. */
function checkBatches(
  history: History,
  violations: Violation[],
  sec: (ms: number) => number,
  writesByTask: ReadonlyMap<string, readonly { atMs: number; task: Task }[]>,
  finalById: ReadonlyMap<string, Task>,
  traceOf: (taskId: string) => string[],
): CheckSummary['stats']['batches'] {
  const batches = history.batches ?? [];
  let checked = 0;
  let members = 0;
  for (const batch of batches) {
    members += batch.memberIds.length;
    const finals = batch.memberIds.map((id) => finalById.get(id));
    // A member that never ended is the terminal invariant's; the then-task may rightly not exist.
    if (finals.some((task) => !task || !TERMINAL.includes(task.state))) continue;
    checked++;
    const fail = (detail: string, atMs = history.endMs) =>
      violations.push({
        invariant: 'then-once',
        taskId: batch.thenTaskId,
        tenantId: batch.tenantId,
        atSeconds: sec(atMs),
        detail: `batch ${batch.batchId}: ${detail}`,
        trace: traceOf(batch.thenTaskId),
      });
    const others = history.finalTasks.filter(
      (task) =>
        task.taskId !== batch.thenTaskId &&
        (payloadOf(task) as { batch?: { batchId?: string } } | null)?.batch?.batchId === batch.batchId,
    );
    if (others.length > 0) fail(`${others.length} other task(s) carry its summary: ${others[0]!.taskId}`);
    const thenTask = finalById.get(batch.thenTaskId);
    if (!thenTask) {
      fail(`every member ended (${batch.memberIds.length}) and no then-task was submitted`);
      continue;
    }
    const createdAtMs = writesByTask.get(batch.thenTaskId)?.[0]?.atMs ?? Number.NaN;
    const lastEnd = Math.max(
      ...batch.memberIds.map(
        (id) => (writesByTask.get(id) ?? []).find(({ task }) => TERMINAL.includes(task.state))?.atMs ?? Number.NaN,
      ),
    );
    if (!(createdAtMs >= lastEnd))
      fail(`then-task created at ${sec(createdAtMs)} s, a member ended at ${sec(lastEnd)} s`, createdAtMs);
    const count = (state: string) => finals.filter((task) => task!.state === state).length;
    const expected = {
      batchId: batch.batchId,
      succeeded: count('SUCCEEDED'),
      failed: count('FAILED'),
      cancelled: count('CANCELLED'),
    };
    const summary = (payloadOf(thenTask) as { batch?: unknown } | null)?.batch;
    if (JSON.stringify(summary) !== JSON.stringify(expected)) {
      fail(`then-task counts ${JSON.stringify(summary)}, members ended ${JSON.stringify(expected)}`);
    }
    if (!TERMINAL.includes(thenTask.state)) fail(`then-task still ${thenTask.state} when the run ended`);
  }
  return { acknowledged: batches.length, checked, members };
}

/**
 * Whether a worker's report of an attempt's end, of `tenantId` or in the `runtime` pool, first
 * delivered in [fromMs, byMs], was delivered again later: the first delivery freed nothing (its
 * receive's answer was lost, or its receiver went away), so the scheduler learned of the end from
 * a later delivery or its lease sweep.
 */
function reportsRedelivered(
  history: History,
  writesByTask: ReadonlyMap<string, readonly { atMs: number; task: { runtime: string } }[]>,
): (tenantId: string, runtime: string | undefined, fromMs: number, byMs: number) => boolean {
  const first = new Map<string, { atMs: number; tenantId: string; runtime: string | undefined; again: boolean }>();
  for (const receive of history.receives) {
    if (!receive.queueId.startsWith('completions')) continue;
    let body: { taskId?: string; tenantId?: string; fence?: number };
    try {
      body = JSON.parse(receive.body);
    } catch {
      continue;
    }
    if (typeof body.taskId !== 'string' || typeof body.tenantId !== 'string') continue;
    const key = `${body.taskId}#${body.fence}`;
    const seen = first.get(key);
    if (seen) seen.again = true;
    else {
      const runtime = writesByTask.get(body.taskId)?.[0]?.task.runtime;
      first.set(key, { atMs: receive.atMs, tenantId: body.tenantId, runtime, again: receive.receiveCount > 1 });
    }
  }
  const lost = [...first.values()].filter((report) => report.again);
  return (tenantId, runtime, fromMs, byMs) =>
    lost.some(
      (report) =>
        report.atMs >= fromMs - SLOT_LEARNED_MS &&
        report.atMs <= byMs &&
        (report.tenantId === tenantId || report.runtime === runtime),
    );
}

/**
 * The most summed weight of tenants with work at once in [fromMs, byMs], as the checker can see
 * it (a wait.assumedBusyWeight bounds the engine's): a tenant counts from its first task's first
 * write to SLOT_LEARNED_MS after its last open task ended (the scheduler learns of an end that
 * late), weighed as configured (1 when not). It counts every task written, taken in by the engine
 * or not (held on dependencies, due beyond the intake's horizon), so it weighs at least what the
 * engine did: a late answer is excused when this exceeds what it assumed, never blamed when the
 * engine's sum was within it.
 */
function busyWeightOf(
  history: History,
  writesByTask: ReadonlyMap<string, readonly { atMs: number; task: { tenantId: string; state: string } }[]>,
): (fromMs: number, byMs: number) => number {
  const TERMINAL = new Set(['SUCCEEDED', 'FAILED', 'CANCELLED']);
  const edges: { atMs: number; tenantId: string; step: 1 | -1 }[] = [];
  for (const writes of writesByTask.values()) {
    const first = writes[0];
    if (!first) continue;
    const last = writes.at(-1) as (typeof writes)[number];
    const endMs = TERMINAL.has(last.task.state) ? last.atMs + SLOT_LEARNED_MS : Number.POSITIVE_INFINITY;
    edges.push({ atMs: first.atMs, tenantId: first.task.tenantId, step: 1 });
    if (endMs !== Number.POSITIVE_INFINITY) edges.push({ atMs: endMs, tenantId: first.task.tenantId, step: -1 });
  }
  // Starts before ends at one instant: the larger sum counts.
  edges.sort((a, b) => a.atMs - b.atMs || b.step - a.step);
  const weightOf = (tenantId: string) => history.tenants[tenantId]?.weight ?? 1;
  const steps: { atMs: number; weight: number }[] = [];
  const open = new Map<string, number>();
  let weight = 0;
  for (const edge of edges) {
    const before = open.get(edge.tenantId) ?? 0;
    const after = before + edge.step;
    open.set(edge.tenantId, after);
    if (before === 0 && after > 0) weight += weightOf(edge.tenantId);
    if (before > 0 && after === 0) weight -= weightOf(edge.tenantId);
    steps.push({ atMs: edge.atMs, weight });
  }
  return (fromMs, byMs) => {
    let most = 0;
    let inEffect = 0;
    for (const step of steps) {
      if (step.atMs <= fromMs) inEffect = step.weight;
      else if (step.atMs <= byMs) most = Math.max(most, step.weight);
      else break;
    }
    return Math.max(most, inEffect);
  };
}

/**
 * Per pool, when each tenant started waiting there (a wait.assumedJoins counts them): its count of
 * ready tasks in the pool (QUEUED, due, not held on dependencies) going from 0 to 1. A delayed
 * task becomes ready at its runAt if it is still QUEUED then.
 */
function tenantsStartingToWait(
  writesByTask: ReadonlyMap<string, readonly { readonly atMs: number; readonly task: Task }[]>,
): Map<string, { tenantId: string; atMs: number }[]> {
  const changes: { atMs: number; key: string; tenantId: string; runtime: string; delta: number }[] = [];
  for (const writes of writesByTask.values()) {
    let readySince: number | undefined;
    writes.forEach(({ atMs, task }, i) => {
      const nextMs = writes[i + 1]?.atMs ?? Number.POSITIVE_INFINITY;
      const queued = task.state === 'QUEUED' && (task.waitingOn?.length ?? 0) === 0;
      const readyAt = queued ? Math.max(atMs, Date.parse(task.runAt)) : Number.POSITIVE_INFINITY;
      const key = `${task.tenantId}\u0000${task.runtime}`;
      const change = (at: number, delta: number) =>
        changes.push({ atMs: at, key, tenantId: task.tenantId, runtime: task.runtime, delta });
      if (readySince !== undefined && !(readyAt < nextMs && queued)) {
        change(atMs, -1);
        readySince = undefined;
      }
      if (readySince === undefined && queued && readyAt < nextMs) {
        change(readyAt, 1);
        readySince = readyAt;
      }
    });
  }
  changes.sort((a, b) => a.atMs - b.atMs || a.delta - b.delta);
  const ready = new Map<string, number>();
  const joins = new Map<string, { tenantId: string; atMs: number }[]>();
  for (const change of changes) {
    const before = ready.get(change.key) ?? 0;
    ready.set(change.key, before + change.delta);
    if (before === 0 && change.delta > 0) {
      const list = joins.get(change.runtime) ?? [];
      list.push({ tenantId: change.tenantId, atMs: change.atMs });
      joins.set(change.runtime, list);
    }
  }
  return joins;
}
