/**
 * GET /v1/status: one read-only view of what the scheduler is doing, for the dashboard and
 * `tasks watch`. It rests on the snapshot the scheduler publishes every few seconds (tiers,
 * pools, the busiest tenants' shares) plus each shown tenant's newest tasks, with the reason a
 * queued one waits. Tier and pool figures are aggregates and shown to every caller; tenants
 * (and so their tasks) only to callers that may act for them.
 */
import { z } from 'zod';
import { QUEUED_COUNT_CAP, resolveTenantSettings } from '../app/task-service.ts';
import { explainWait } from '../app/wait.ts';
import type { Services } from '../app/wiring.ts';
import { ownEntry } from '../core/records.ts';
import type { SchedulerSnapshot } from '../core/scheduler-snapshot.ts';
import { PRIORITY_TIERS, type Task, type TenantSettings } from '../core/task.ts';
import { EXAMPLE_STATUS } from './examples.ts';
import { LIST_RESPONSE_BUDGET_BYTES, MAX_ID_LENGTH } from './limits.ts';
import { defineRoute } from './route.ts';
import { idSchema } from './schemas.ts';
import { errorResponseSchema, fitToBudget, presentTask, taskViewSchema, waitSchema } from './views.ts';

/** Tenants shown at most: the dashboard is for eyes, and each costs a few reads. */
export const MAX_STATUS_TENANTS = 20;
export const RECENT_PER_TENANT = { min: 0, max: 20, default: 5 } as const;
/** Recent tasks returned at most, newest first, across the shown tenants. */
export const MAX_RECENT_TASKS = 50;

export const statusQuerySchema = z.strictObject({
  recent: z
    .string()
    .max(2)
    .regex(/^[0-9]{1,2}$/, `an integer from ${RECENT_PER_TENANT.min} to ${RECENT_PER_TENANT.max}`)
    .transform(Number)
    .pipe(z.number().int().min(RECENT_PER_TENANT.min).max(RECENT_PER_TENANT.max))
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
      .array(z.object({ tier: z.enum(PRIORITY_TIERS), waiting: z.number().int(), oldestWaitSeconds: z.number() }))
      .meta({ description: 'Tasks the scheduler holds per tier (highest first) and the age of the oldest' }),
    tenants: z
      .array(
        z.object({
          tenantId: z.string(),
          running: z.number().int().meta({ description: 'Dispatched or running' }),
          queued: z
            .number()
            .int()
            .meta({
              description: `Queued tasks: those the scheduler holds in the tenant's windows, or for a tenant it holds nothing of, counted up to ${QUEUED_COUNT_CAP.toLocaleString('en-US')}`,
            }),
          weight: z.number(),
          maxConcurrency: z.number().int(),
          dominantShare: z.number().meta({ description: 'Share of the dominant pool resource held now (0–1)' }),
          entitlement: z.number().meta({ description: 'Fair share by weight among tenants with work (0–1)' }),
        }),
      )
      .meta({ description: `Busiest tenants first, at most ${MAX_STATUS_TENANTS}` }),
    recentTasks: z
      .array(taskViewSchema.extend({ wait: waitSchema.optional() }))
      .meta({ description: `Newest tasks of the shown tenants, at most ${MAX_RECENT_TASKS}` }),
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
  const [snapshot, stored] = await Promise.all([
    services.control.getSnapshot<SchedulerSnapshot>(),
    services.control.listTenants(),
  ]);

  // Busiest first (the snapshot's order), then tenants asked for, configured or stored.
  const candidates = [
    ...new Set([
      ...Object.keys(snapshot?.tenants ?? {}),
      ...(input.tenants ?? []),
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
  const leased = visible.some((tenantId) => !ownEntry(snapshot?.tenants, tenantId))
    ? await services.store.countLeasedByTenant()
    : new Map<string, number>();
  const rows = await Promise.all(
    visible.map(async (tenantId) => {
      // Settings from the tenants listed above: no read per tenant.
      const settings = resolveTenantSettings(config, tenantId, storedById.get(tenantId));
      const share = ownEntry(snapshot?.tenants, tenantId);
      const row: StatusTenant = share
        ? { tenantId, ...share }
        : await quietTenant(services, tenantId, settings, leased.get(tenantId) ?? 0);
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
    tiers: PRIORITY_TIERS.map((tier) => ({
      tier,
      waiting: snapshot?.tiers[tier]?.waiting ?? 0,
      oldestWaitSeconds: Math.round((snapshot?.tiers[tier]?.oldestWaitSeconds ?? 0) * 10) / 10,
    })),
    tenants: rows.map(({ row }) => row),
    recentTasks,
  };
}

/** A tenant the scheduler holds nothing of: counts from the store, no share. */
async function quietTenant(
  services: Services,
  tenantId: string,
  settings: TenantSettings,
  leased: number,
): Promise<StatusTenant> {
  const queued = await services.store.countByTenantState(tenantId, 'QUEUED', QUEUED_COUNT_CAP);
  return {
    tenantId,
    running: leased,
    queued,
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
