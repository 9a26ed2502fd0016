/**
 * `tasks tenants get|set`: a tenant's weight and quota.
 */
import { type Command, integer, number, UsageError } from '../command.ts';
import { formatStoredTenant, formatTenant } from '../format.ts';

export const tenantsCommand: Command = {
  summary: "Show or set a tenant's weight and quota",
  usage: 'tasks tenants get T | tasks tenants set T --weight W --max-concurrency N',
  help: `Subcommands:
  get T                                 settings (and where they come from), running vs quota, share
  set T --weight W --max-concurrency N  store settings; they override the configuration file

Options:
  --weight W            fair-share weight (> 0)
  --max-concurrency N   tasks dispatched or running at once (>= 1)`,
  options: {
    weight: { type: 'string' },
    'max-concurrency': { type: 'string' },
  },
  async run(ctx) {
    const [sub, tenantId, ...rest] = ctx.positionals;
    if (rest.length > 0) throw new UsageError(`Unexpected argument "${rest[0]}"`, ctx.name);
    if (sub !== 'get' && sub !== 'set') throw new UsageError('Give a subcommand: get or set', ctx.name);
    if (!tenantId) throw new UsageError(`tenants ${sub} needs a tenant id`, ctx.name);
    if (sub === 'get') {
      if (ctx.values.weight !== undefined || ctx.values['max-concurrency'] !== undefined) {
        throw new UsageError('--weight and --max-concurrency go with "tenants set"', ctx.name);
      }
      const tenant = await ctx.client().getTenant(tenantId);
      ctx.print(tenant, () => formatTenant(tenant, ctx.style));
      return 0;
    }
    const weight = number(ctx, 'weight');
    const maxConcurrency = integer(ctx, 'max-concurrency', 1);
    if (weight === undefined || maxConcurrency === undefined) {
      throw new UsageError('tenants set needs --weight and --max-concurrency', ctx.name);
    }
    const stored = await ctx.client().putTenant(tenantId, { weight, maxConcurrency });
    ctx.print(stored, () => formatStoredTenant(stored, ctx.style));
    return 0;
  },
};
