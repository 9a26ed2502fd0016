/**
 * `tasks tenants get|set|pause|resume|reset`: a tenant's weight, quota, start-rate limit and pause.
 */
import { type Command, integer, number, UsageError } from '../command.ts';
import { formatStoredTenant, formatTenant } from '../format.ts';

const SET_FLAGS = ['weight', 'max-concurrency', 'max-starts-per-second', 'burst'] as const;

export const tenantsCommand: Command = {
  summary: "Show or set a tenant's weight, quota and start rate; pause or resume it",
  usage:
    'tasks tenants get T | tasks tenants set T --weight W --max-concurrency N [--max-starts-per-second R [--burst B]] | tasks tenants pause|resume|reset T',
  help: `Subcommands:
  get T                                 settings (and where they come from), running vs quota,
                                        start-rate limit, pause (who, when), share
  set T --weight W --max-concurrency N  store settings; they override the configuration file. A
                                        start-rate limit not given is removed; a pause is kept
  pause T                               nothing of the tenant starts once this answers; queued
                                        work stays, running work goes on, submits are accepted
  resume T                              its queued work is eligible at once
  reset T                               remove its stored settings (a pause with them): it
                                        follows the configuration file again

Options:
  --weight W                  fair-share weight (> 0)
  --max-concurrency N         tasks dispatched or running at once (>= 1)
  --max-starts-per-second R   start-rate limit (a token bucket on starts); absent: unlimited
  --burst B                   starts the bucket holds when full (default: one second of R)`,
  options: {
    weight: { type: 'string' },
    'max-concurrency': { type: 'string' },
    'max-starts-per-second': { type: 'string' },
    burst: { type: 'string' },
  },
  async run(ctx) {
    const [sub, tenantId, ...rest] = ctx.positionals;
    if (rest.length > 0) throw new UsageError(`Unexpected argument "${rest[0]}"`, ctx.name);
    if (sub !== 'get' && sub !== 'set' && sub !== 'pause' && sub !== 'resume' && sub !== 'reset') {
      throw new UsageError('Give a subcommand: get, set, pause, resume or reset', ctx.name);
    }
    if (!tenantId) throw new UsageError(`tenants ${sub} needs a tenant id`, ctx.name);
    if (sub !== 'set') {
      const given = SET_FLAGS.find((flag) => ctx.values[flag] !== undefined);
      if (given) throw new UsageError(`--${given} goes with "tenants set"`, ctx.name);
    }
    if (sub === 'get') {
      const tenant = await ctx.client().getTenant(tenantId);
      ctx.print(tenant, () => formatTenant(tenant, ctx.style));
      return 0;
    }
    if (sub === 'reset') {
      const tenant = await ctx.client().deleteTenant(tenantId);
      ctx.print(tenant, () => formatTenant(tenant, ctx.style));
      return 0;
    }
    if (sub === 'pause' || sub === 'resume') {
      const stored = await ctx.client().setTenantPaused(tenantId, sub === 'pause');
      ctx.print(stored, () => formatStoredTenant(stored, ctx.style));
      return 0;
    }
    const weight = number(ctx, 'weight');
    const maxConcurrency = integer(ctx, 'max-concurrency', 1);
    const maxStartsPerSecond = number(ctx, 'max-starts-per-second');
    const burst = integer(ctx, 'burst', 1);
    if (weight === undefined || maxConcurrency === undefined) {
      throw new UsageError('tenants set needs --weight and --max-concurrency', ctx.name);
    }
    if (burst !== undefined && maxStartsPerSecond === undefined) {
      throw new UsageError('--burst goes with --max-starts-per-second', ctx.name);
    }
    const client = ctx.client();
    // The pause has its own subcommands: setting the rest keeps it as it is.
    const { paused } = await client.getTenant(tenantId);
    const stored = await client.putTenant(tenantId, {
      weight,
      maxConcurrency,
      ...(maxStartsPerSecond === undefined ? {} : { maxStartsPerSecond }),
      ...(burst === undefined ? {} : { burst }),
      ...(paused ? { paused } : {}),
    });
    ctx.print(stored, () => formatStoredTenant(stored, ctx.style));
    return 0;
  },
};
