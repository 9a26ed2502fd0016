/**
 * `deploy.callers` maps IAM principal ARNs to tenants. A key that is not such an ARN (a role's
 * bare name, an ARN without its account) can never match a caller: every request of the
 * principal meant would be a 403 with nothing saying why. Refused when the file is read.
 */
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../runtime/core/config.ts';
import { ConfigError } from '../../runtime/core/errors.ts';

const withCallers = (callers: Record<string, string[]>) => ({ deploy: { callers } });

describe('Configuration: deploy.callers', () => {
  it('refuses a key that is not an IAM principal ARN, naming it', () => {
    // Act
    const refused = (() => {
      try {
        parseConfig(withCallers({ 'orders-service': ['orders'], 'arn:aws:iam::role/ops': ['*'] }));
      } catch (error) {
        return error;
      }
    })();

    // Assess
    expect(refused).toBeInstanceOf(ConfigError);
    expect((refused as ConfigError).message).toContain(
      'deploy.callers.orders-service: not an IAM principal ARN (arn:aws:iam::ACCOUNT:role/NAME, arn:aws:iam::ACCOUNT:user/NAME, arn:aws:sts::ACCOUNT:assumed-role/ROLE[/SESSION])',
    );
    expect((refused as ConfigError).message).toContain(
      'deploy.callers.arn:aws:iam::role/ops: not an IAM principal ARN',
    );
  });

  it('refuses a tenant that no tenant id can be (a pattern, a space), naming it', () => {
    // Act: "orders-*" reads as every orders tenant, and grants none (tenant ids have no "*").
    const refused = (() => {
      try {
        parseConfig(withCallers({ 'arn:aws:iam::111122223333:role/orders': ['orders-*', 'billing ', 'ok'] }));
      } catch (error) {
        return error;
      }
    })();

    // Assess
    expect(refused).toBeInstanceOf(ConfigError);
    const message = (refused as ConfigError).message;
    expect(message).toContain('deploy.callers.arn:aws:iam::111122223333:role/orders.0: not a tenant id');
    expect(message).toContain('deploy.callers.arn:aws:iam::111122223333:role/orders.1: not a tenant id');
    expect(message).not.toContain('orders.2');
  });

  it('takes role, user, path, assumed-role and other-partition ARNs', () => {
    const callers = {
      'arn:aws:iam::111122223333:role/orders-service': ['orders'],
      'arn:aws:iam::111122223333:role/service-role/billing': ['billing'],
      'arn:aws:iam::111122223333:user/ops': ['*'],
      'arn:aws:sts::111122223333:assumed-role/reports/nightly': ['reports'],
      'arn:aws-cn:iam::111122223333:role/cn': ['cn'],
    };
    expect(parseConfig(withCallers(callers)).deploy.callers).toEqual(callers);
  });
});
