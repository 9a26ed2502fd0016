import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../runtime/core/config.ts';
import { ConfigError } from '../../runtime/core/errors.ts';

describe('Function: parseConfig, tenants', () => {
  it("takes what a tenant's entry leaves out from tenantDefaults", () => {
    // A platform team pausing one tenant should not have to repeat its weight and quota.
    const config = parseConfig({
      tenantDefaults: { weight: 2, maxConcurrency: 5 },
      tenants: { ops: { paused: true }, batch: { maxConcurrency: 50 } },
    });
    expect(config.tenants.ops).toEqual({ weight: 2, maxConcurrency: 5, paused: true });
    expect(config.tenants.batch).toEqual({ weight: 2, maxConcurrency: 50 });
  });

  it('refuses an entry that is invalid once merged, naming the tenant and the field', () => {
    const parse = () => parseConfig({ tenants: { ops: { burst: 3 } } }, 'config/x.json');
    expect(parse).toThrow(ConfigError);
    expect(parse).toThrow(/tenants\.ops\.burst: burst needs maxStartsPerSecond/);
    expect(() => parseConfig({ tenants: { ops: { weight: 0 } } })).toThrow(/tenants\.ops\.weight/);
    expect(() => parseConfig({ tenants: { ops: { colour: 'red' } } })).toThrow(/tenants\.ops/);
  });
});
