/**
 * GET /v1/status: one read-only view of what the scheduler is doing, for the dashboard and
 * `tasks watch`. It rests on the snapshot the scheduler publishes every few seconds (tiers,
 * pools, the busiest tenants' shares) plus each shown tenant's newest tasks, with the reason a
 * queued one waits. Tier and pool figures are aggregates and shown to every caller; tenants
 * (and so their tasks) only to callers that may act for them.
 */
import { z } from 'zod';
import { readSnapshots } from '../app/shard-snapshots.ts';
import { QUEUED_COUNT_CAP, resolveTenantSettings } from '../app/task-service.ts';
import { explainWait } from '../app/wait.ts';
import type { Services } from '../app/wiring.ts';
import { ownEntry } from '../core/records.ts';
import type { SchedulerSnapshot } from '../core/scheduler-snapshot.ts';
import { PRIORITY_TIERS, type PriorityTier, type Task, type TenantSettings } from '../core/task.ts';
import { pickPause, startRateOf } from '../core/tenant-settings.ts';
import { ALL_TENANTS } from './caller.ts';
import { EXAMPLE_STATUS } from './examples.ts';
import { LIST_RESPONSE_BUDGET_BYTES, MAX_ID_LENGTH } from './limits.ts';
import { defineRoute } from './route.ts';
import { idSchema } from './schemas.ts';
import { batchViewSchema, errorResponseSchema, fitToBudget, presentTask, taskViewSchema, waitSchema } from './views.ts';

/** Tenants shown at most: the dashboard is for eyes, and each costs a few reads. */
export const MAX_STATUS_TENANTS = 20;
export const RECENT_PER_TENANT = { min: 0, max: 20, default: 5 } as const;
/** Recent tasks returned at most, newest first, across the shown tenants. */
export const MAX_RECENT_TASKS = 50;
/** Open batches the status shows (each costs a read of its counter shards). */
export const MAX_OPEN_BATCHES = 5;

const RECENT_MESSAGE = `an integer from ${RECENT_PER_TENANT.min} to ${RECENT_PER_TENANT.max}`;

export const statusQuerySchema = z.strictObject({
  recent: z
    .string()
    .max(2, RECENT_MESSAGE)
    .regex(/^[0-9]{1,2}$/, RECENT_MESSAGE)
    .transform(Number)
    .pipe(z.number().int().min(RECENT_PER_TENANT.min, RECENT_MESSAGE).max(RECENT_PER_TENANT.max, RECENT_MESSAGE))
    .optional()
    .transform((recent) => recent ?? RECENT_PER_TENANT.default)
    .meta({
      description: `Newest tasks per shown tenant, ${RECENT_PER_TENANT.min}–${RECENT_PER_TENANT.max} (default ${RECENT_PER_TENANT.default})`,
    }),
  tenants: z
    .string()
    // Stated on the text as well, so the OpenAPI document carries the limits.
    .max(MAX_STATUS_TENANTS * (MAX_ID_LENGTH + 1))
    .regex(/^[A-Za-z0-9_.:@,-]*$/, 'comma-separated tenant ids')
    .transform((list) => list.split(',').filter((id) => id !== ''))
    .pipe(z.array(idSchema).max(MAX_STATUS_TENANTS))
    .optional()
    .meta({
      description: `Comma-separated tenant ids (at most ${MAX_STATUS_TENANTS}) to show even when the scheduler holds no work of theirs`,
    }),
});

const poolsSchema = z.object({
  lambda: z.object({ used: z.number(), capacity: z.number() }),
  fargate: z.object({ vcpuUsed: z.number(), vcpu: z.number(), memoryMiBUsed: z.number(), memoryMiB: z.number() }),
});

export const statusSchema = z
  .object({
    at: z.iso.datetime({ offset: true }),
    policy: z.enum(['fifo', 'priority', 'fair-share']),
    agingSeconds: z.number(),
    scheduler: z
      .object({
        at: z.iso.datetime({ offset: true }),
        ageSeconds: z.number().meta({ description: 'How old the snapshot is; a large value means no scheduler runs' }),
        dispatchRate: z.number().meta({ description: 'Dispatches per second over the last minute' }),
      })
      .nullable()
      .meta({ description: 'The snapshot the figures come from; null before the scheduler first publishes one' }),
    pools: poolsSchema.meta({ description: 'Capacity in use per worker pool' }),
    tiers: z
      .array(
        z.object({
          tier: z.enum(PRIORITY_TIERS),
          waiting: z
            .number()
            .int()
            .meta({
              description: `Queued tasks of the tier: the real backlog, each tenant's counted up to ${QUEUED_COUNT_CAP.toLocaleString('en-US')} by the scheduler at a paced interval`,
            }),
          waitingExact: z.boolean().meta({ description: 'False when some tenant of the tier is over the count cap' }),
          held: z.number().int().meta({ description: 'Of those, the ones the scheduler holds in its intake windows' }),
          oldestWaitSeconds: z.number(),
        }),
      )
      .meta({ description: 'Queued tasks per tier (highest first) and the age of the oldest' }),
    tenants: z
      .array(
        z.object({
          tenantId: z.string(),
          running: z.number().int().meta({ description: 'Dispatched or running' }),
          queued: z
            .number()
            .int()
            .meta({
              description: `Queued tasks, the tenant's real backlog, counted up to ${QUEUED_COUNT_CAP.toLocaleString('en-US')} (by the scheduler at a paced interval, or for a tenant it holds nothing of, by this request)`,
            }),
          queuedExact: z.boolean().meta({ description: 'False when `queued` is the cap and more are queued' }),
          recentlyFinished: z
            .object({
              succeeded: z.number().int(),
              failed: z.number().int(),
              cancelled: z.number().int(),
              lastFinishedAt: z.iso.datetime({ offset: true }),
            })
            .nullable()
            .meta({
              description: 'Tasks of the tenant that finished in the last 15 minutes (as the scheduler saw them)',
            }),
          weight: z.number(),
          maxConcurrency: z.number().int(),
          dominantShare: z.number().meta({ description: 'Share of the dominant pool resource held now (0–1)' }),
          entitlement: z.number().meta({ description: 'Fair share by weight among tenants with work (0–1)' }),
          paused: z.boolean().meta({ description: 'Paused: nothing of it starts' }),
          maxStartsPerSecond: z.number().optional().meta({ description: 'Its start-rate limit, when it has one' }),
          burst: z.number().int().optional(),
          rateLimited: z.boolean().meta({ description: 'At its start-rate limit in the latest snapshot' }),
          parked: z
            .number()
            .int()
            .meta({ description: 'Its tasks the scheduler holds back by a paused type or a full concurrency key' }),
        }),
      )
      .meta({ description: `Busiest tenants first, at most ${MAX_STATUS_TENANTS}` }),
    pausedTypes: z
      .array(
        z.object({
          type: z.string(),
          pausedBy: z.string().optional(),
          pausedAt: z.iso.datetime({ offset: true }).optional(),
          parked: z.number().int().meta({ description: 'Its tasks the scheduler holds because it is paused' }),
        }),
      )
      .meta({ description: 'Task types paused now (in every tenant)' }),
    recentTasks: z
      .array(taskViewSchema.extend({ wait: waitSchema.optional() }))
      .meta({ description: `Newest tasks of the shown tenants, at most ${MAX_RECENT_TASKS}` }),
    openBatches: z
      .array(batchViewSchema)
      .optional()
      .meta({
        description: `Batches not ended yet, newest first, at most ${MAX_OPEN_BATCHES} (of tenants the caller may see; for a caller for some tenants only, of the shown tenants, among the ${MAX_OPEN_BATCHES} newest batches of each)`,
      }),
  })
  .meta({ id: 'Status' });
export type StatusView = z.infer<typeof statusSchema>;

/** Compile-time proof that the snapshot the scheduler publishes fits the documented pools. */
const _poolsFit: (pools: SchedulerSnapshot['pools']) => z.infer<typeof poolsSchema> = (pools) => pools;
void _poolsFit;

type StatusTenant = StatusView['tenants'][number];

export async function buildStatus(
  services: Services,
  input: { recent: number; tenants?: readonly string[] | undefined; mayActFor: (tenantId: string) => Promise<boolean> },
): Promise<StatusView> {
  const { config } = services;
  const now = services.now();
  // The settings from this container's last scan while their version stands still (one small
  // read): a scan per call read the whole control table, 5.5 s at 10,000 tenant-tiers.
  const [snapshot, { tenants: stored, taskTypes: types }] = await Promise.all([
    readSnapshots(services.control, config.scheduler.shards),
    services.control.settings(),
  ]);

  // Busiest first (the snapshot's order), then tenants asked for, configured or stored.
  const candidates = [
    ...new Set([
      ...Object.keys(snapshot?.tenants ?? {}),
      ...Object.keys(snapshot?.backlog ?? {}),
      ...(input.tenants ?? []),
      // Tenants whose work just ended stay in view a while.
      ...Object.keys(snapshot?.recentlyFinished?.tenants ?? {}),
      ...Object.keys(config.tenants),
      ...stored.map((tenant) => tenant.tenantId),
    ]),
  ];
  const visible: string[] = [];
  for (const tenantId of candidates) {
    if (visible.length >= MAX_STATUS_TENANTS) break;
    if (await input.mayActFor(tenantId)) visible.push(tenantId);
  }

  const storedById = new Map(stored.map((tenant) => [tenant.tenantId, tenant]));
  // Tenants the snapshot does not cover are counted from the store, their leased tasks in one pass.
  const covered = (tenantId: string) => ownEntry(snapshot?.tenants, tenantId) ?? ownEntry(snapshot?.backlog, tenantId);
  const leased = visible.some((tenantId) => !covered(tenantId))
    ? await services.store.countLeasedByTenant()
    : new Map<string, number>();
  const rows = await Promise.all(
    visible.map(async (tenantId) => {
      // Settings from the tenants listed above: no read per tenant.
      const settings = resolveTenantSettings(config, tenantId, storedById.get(tenantId));
      const share = ownEntry(snapshot?.tenants, tenantId);
      const backlog = backlogOf(snapshot, tenantId);
      const finished = ownEntry(snapshot?.recentlyFinished?.tenants, tenantId) ?? null;
      const row: StatusTenant =
        share || backlog
          ? {
              tenantId,
              running: share?.running ?? leased.get(tenantId) ?? 0,
              weight: share?.weight ?? settings.weight,
              maxConcurrency: share?.maxConcurrency ?? settings.maxConcurrency,
              dominantShare: share?.dominantShare ?? 0,
              entitlement: share?.entitlement ?? 0,
              // The real backlog when the scheduler counted it; else what it holds.
              queued: backlog?.queued ?? share?.queued ?? 0,
              queuedExact: backlog ? backlog.exact : true,
              recentlyFinished: finished,
              ...flowOf(settings, share),
            }
          : {
              ...(await quietTenant(services, tenantId, settings, leased.get(tenantId) ?? 0)),
              recentlyFinished: finished,
              ...flowOf(settings, undefined),
            };
      const page =
        input.recent > 0 ? await services.tasks.list({ tenantId, limit: input.recent }) : { items: [] as Task[] };
      const recent = page.items.map((task) => ({
        ...presentTask(task),
        ...(task.state === 'QUEUED' ? { wait: explainWait(task, { config, tenant: settings, snapshot, now }) } : {}),
      }));
      return { row, recent };
    }),
  );

  const recentNewest = rows
    .flatMap(({ recent }) => recent)
    .sort((a, b) => (a.submittedAt < b.submittedAt ? 1 : a.submittedAt > b.submittedAt ? -1 : 0))
    .slice(0, MAX_RECENT_TASKS);
  // Newest first, so the budget (Lambda's 6 MB response) drops the oldest.
  const recentTasks = fitToBudget(recentNewest, LIST_RESPONSE_BUDGET_BYTES);

  return {
    at: now.toISOString(),
    policy: config.policy,
    agingSeconds: config.agingSeconds,
    scheduler: snapshot
      ? {
          at: snapshot.at,
          ageSeconds: Math.max(0, Math.round((now.getTime() - Date.parse(snapshot.at)) / 100) / 10),
          dispatchRate: snapshot.dispatchRate,
        }
      : null,
    pools: snapshot?.pools ?? {
      lambda: { used: 0, capacity: config.pools.lambda.concurrency },
      fargate: {
        vcpuUsed: 0,
        vcpu: config.pools.fargate.vcpu,
        memoryMiBUsed: 0,
        memoryMiB: config.pools.fargate.memoryMiB,
      },
    },
    tiers: PRIORITY_TIERS.map((tier) => tierRow(snapshot, tier)),
    tenants: rows.map(({ row }) => row),
    pausedTypes: types
      .filter((type) => type.paused)
      .map((type) => ({
        type: type.type,
        ...pickPause(type),
        parked: ownEntry(snapshot?.parkedByType, type.type) ?? 0,
      })),
    recentTasks,
    // A caller for some tenants only: from its tenants' own listings (the open list is every
    // tenant's, and another's open batches would fill the places read of it).
    openBatches: (await input.mayActFor(ALL_TENANTS))
      ? await services.batches.listOpen(MAX_OPEN_BATCHES, input.mayActFor)
      : await services.batches.listOpenOf(visible, MAX_OPEN_BATCHES),
  };
}

/** A tenant's flow control as the dashboard shows it: paused, its start rate (and whether it holds it now), parked tasks. */
function flowOf(
  settings: TenantSettings,
  share: SchedulerSnapshot['tenants'][string] | undefined,
): Pick<StatusTenant, 'paused' | 'maxStartsPerSecond' | 'burst' | 'rateLimited' | 'parked'> {
  const rate = startRateOf(settings);
  return {
    paused: settings.paused === true,
    ...(rate ? { maxStartsPerSecond: rate.perSecond, burst: rate.burst } : {}),
    rateLimited: share?.hold === 'rate',
    parked: share?.parked ?? 0,
  };
}

/** A tenant's backlog over its tiers, from the snapshot (undefined: the scheduler counted none). */
function backlogOf(snapshot: SchedulerSnapshot | undefined, tenantId: string) {
  const tiers = ownEntry(snapshot?.backlog, tenantId);
  if (!tiers) return undefined;
  const rows = Object.values(tiers);
  const queued = rows.reduce((sum, row) => sum + row.queued, 0);
  return { queued, exact: rows.every((row) => !row.capped) };
}

/**
 * A tier's row: the real backlog summed over the tenant-tiers the scheduler counted (the held
 * count where it has none), and the oldest wait of either view.
 */
function tierRow(snapshot: SchedulerSnapshot | undefined, tier: PriorityTier): StatusView['tiers'][number] {
  const held = snapshot?.tiers[tier]?.waiting ?? 0;
  let waiting = 0;
  let exact = true;
  let oldest = snapshot?.tiers[tier]?.oldestWaitSeconds ?? 0;
  let any = false;
  for (const tiers of Object.values(snapshot?.backlog ?? {})) {
    const row = tiers[tier];
    if (!row) continue;
    any = true;
    waiting += row.queued;
    if (row.capped) exact = false;
    oldest = Math.max(oldest, row.oldestWaitSeconds);
  }
  return {
    tier,
    // Older snapshots (and a scheduler that counted nothing yet) have only what it holds.
    waiting: any ? Math.max(waiting, held) : held,
    waitingExact: exact,
    held,
    oldestWaitSeconds: Math.round(oldest * 10) / 10,
  };
}

/** A tenant the scheduler holds nothing of: counts from the store, no share. */
async function quietTenant(
  services: Services,
  tenantId: string,
  settings: TenantSettings,
  leased: number,
): Promise<Omit<StatusTenant, 'recentlyFinished' | keyof ReturnType<typeof flowOf>>> {
  const counted = await services.store.countByTenantState(tenantId, 'QUEUED', QUEUED_COUNT_CAP + 1);
  return {
    tenantId,
    running: leased,
    queued: Math.min(counted, QUEUED_COUNT_CAP),
    queuedExact: counted <= QUEUED_COUNT_CAP,
    weight: settings.weight,
    maxConcurrency: settings.maxConcurrency,
    dominantShare: 0,
    entitlement: 0,
  };
}

export const statusRoute = defineRoute({
  method: 'GET',
  path: '/v1/status',
  operationId: 'getStatus',
  summary: 'What the scheduler is doing: tiers, pools, tenants and their newest tasks (dashboard, `tasks watch`)',
  params: z.strictObject({}),
  query: statusQuerySchema,
  responses: {
    200: { description: 'The status', schema: statusSchema, example: EXAMPLE_STATUS },
    400: { description: 'A query value failed validation', schema: errorResponseSchema },
  },
  async handle({ query, services, mayActFor }) {
    return {
      status: 200,
      body: await buildStatus(services, {
        recent: query.recent,
        tenants: query.tenants,
        mayActFor,
      }),
    };
  },
});
