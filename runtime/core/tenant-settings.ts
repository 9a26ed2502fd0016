/**
 * A tenant's settings, defined once. The configuration file (`tenantDefaults`, `tenants`), the
 * API's `PUT /v1/tenants/{id}` body, the control table's item, the API's view and the scheduler
 * all take the fields from this schema, so a new field is added here and nowhere else (before
 * issue 26 they were copied field by field in three places, and a new one was silently dropped).
 */
import { z } from 'zod';

/** The fields alone (a configuration's `tenants` entries take any of them: config.ts). */
export const tenantSettingsFields = z.strictObject({
  // A lower bound, not just positive: DynamoDB cannot store magnitudes below 1e-130 (found by the fuzz test).
  weight: z.number().min(0.001).max(1000).meta({ description: 'Fair-share weight, 0.001–1000' }),
  maxConcurrency: z.number().int().min(1).max(100_000).meta({ description: 'Tasks dispatched or running at once' }),
  maxStartsPerSecond: z
    .number()
    .min(0.001)
    .max(1000)
    .optional()
    .meta({ description: 'Start-rate limit (a token bucket on dispatches, with burst); absent: unlimited' }),
  burst: z
    .number()
    .int()
    .min(1)
    .max(10_000)
    .optional()
    .meta({ description: 'Starts the bucket holds when full; with maxStartsPerSecond (default: one second of it)' }),
  paused: z.boolean().optional().meta({
    description: 'True: nothing of the tenant starts; queued work stays, running work goes on, submits are accepted',
  }),
});

export const tenantSettingsSchema = tenantSettingsFields.superRefine((settings, ctx) => {
  if (settings.burst !== undefined && settings.maxStartsPerSecond === undefined) {
    ctx.addIssue({ code: 'custom', path: ['burst'], message: 'burst needs maxStartsPerSecond' });
  }
});

export type TenantSettings = z.output<typeof tenantSettingsSchema>;

/** The settings' field names, in the schema's order. */
/**
 * How long a scan of the stored settings is used while their version (which every change moves
 * before it answers) stands still: the bound on how late a change whose version bump failed is
 * taken, by the scheduler and by each API container (runtime/adapters/control-store.ts).
 */
export const SETTINGS_RESCAN_MS = 5 * 60_000;

export const TENANT_SETTING_KEYS = Object.keys(tenantSettingsFields.shape) as (keyof TenantSettings)[];

/**
 * The settings fields of a record that holds them among other things (a stored item, a view):
 * every field of the schema that is present, nothing else.
 */
export function pickTenantSettings(source: object): TenantSettings {
  const record = source as Readonly<Record<string, unknown>>;
  const settings: Record<string, unknown> = {};
  for (const key of TENANT_SETTING_KEYS) if (record[key] !== undefined) settings[key] = record[key];
  return settings as unknown as TenantSettings;
}

/** A tenant's start-rate limit, when it has one: starts per second and the bucket's size. */
export interface StartRate {
  readonly perSecond: number;
  readonly burst: number;
}

export function startRateOf(settings: TenantSettings): StartRate | undefined {
  if (settings.maxStartsPerSecond === undefined) return undefined;
  return {
    perSecond: settings.maxStartsPerSecond,
    burst: settings.burst ?? Math.max(1, Math.ceil(settings.maxStartsPerSecond)),
  };
}

/** A setting a request asks above what is allowed: its value (null: none, i.e. unlimited) and the allowed. */
export interface SettingAbove {
  readonly field: keyof TenantSettings;
  readonly value: number | boolean | null;
  readonly allowed: number | boolean;
}

/**
 * Where `requested` gives a tenant more than `allowed`: a larger weight or quota, a start rate or
 * burst lifted or raised, a pause lifted. Empty when it is within them. A caller that acts for
 * some tenants only may store no more than its tenant's configured or current settings give
 * (runtime/api/routes.ts, PUT /v1/tenants/{id}; `mostGenerous`): its own weight at 1000 would
 * take contended capacity from every other tenant.
 */
export function settingsAbove(allowed: TenantSettings, requested: TenantSettings): SettingAbove[] {
  const above: SettingAbove[] = [];
  if (requested.weight > allowed.weight) {
    above.push({ field: 'weight', value: requested.weight, allowed: allowed.weight });
  }
  if (requested.maxConcurrency > allowed.maxConcurrency) {
    above.push({ field: 'maxConcurrency', value: requested.maxConcurrency, allowed: allowed.maxConcurrency });
  }
  const limit = startRateOf(allowed);
  if (limit) {
    const asked = startRateOf(requested);
    if (!asked || asked.perSecond > limit.perSecond) {
      above.push({ field: 'maxStartsPerSecond', value: asked?.perSecond ?? null, allowed: limit.perSecond });
    } else if (asked.burst > limit.burst) {
      above.push({ field: 'burst', value: asked.burst, allowed: limit.burst });
    }
  }
  if (allowed.paused === true && requested.paused !== true) {
    above.push({ field: 'paused', value: false, allowed: true });
  }
  return above;
}

/**
 * The more generous of two settings, field by field: the larger weight and quota, no start rate
 * when either has none (else the higher rate and burst), paused only when both are.
 */
export function mostGenerous(a: TenantSettings, b: TenantSettings): TenantSettings {
  const [rateA, rateB] = [startRateOf(a), startRateOf(b)];
  const rate =
    rateA && rateB
      ? { maxStartsPerSecond: Math.max(rateA.perSecond, rateB.perSecond), burst: Math.max(rateA.burst, rateB.burst) }
      : {};
  return {
    weight: Math.max(a.weight, b.weight),
    maxConcurrency: Math.max(a.maxConcurrency, b.maxConcurrency),
    ...rate,
    ...(a.paused === true && b.paused === true ? { paused: true } : {}),
  };
}

/** Who paused something and when (tenants and task types alike). */
export interface PauseRecord {
  /** The caller that paused it (an IAM principal ARN on AWS; `local` on the local runtime). */
  readonly pausedBy?: string;
  readonly pausedAt?: string;
}

/** Who paused it and when, from an item or a record that holds them (nothing when not paused). */
export function pickPause(source: object): PauseRecord {
  const item = source as Readonly<Record<string, unknown>>;
  if (item.paused !== true) return {};
  return {
    ...(typeof item.pausedBy === 'string' ? { pausedBy: item.pausedBy } : {}),
    ...(typeof item.pausedAt === 'string' ? { pausedAt: item.pausedAt } : {}),
  };
}
