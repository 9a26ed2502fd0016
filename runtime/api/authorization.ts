/**
 * Caller → tenant authorization for the deployed stack. API Gateway checks the SigV4 signature
 * (IAM authorization on every route) and hands the caller's identity to the Lambda in
 * `requestContext.authorizer.iam`; `config.deploy.callers` says which tenants each principal
 * may act for:
 *
 *   "callers": {
 *     "arn:aws:iam::111122223333:role/orders-service": ["orders"],
 *     "arn:aws:iam::111122223333:user/ops": ["*"]
 *   }
 *
 * A role entry covers every session of the role: a caller that assumed it is seen as
 * `arn:aws:sts::111122223333:assumed-role/orders-service/<session>` (the role's IAM path is not
 * in that ARN, so roles match by partition, account and name). An entry may also name one
 * session exactly, or `arn:aws:sts::ACCOUNT:assumed-role/ROLE` for any session. A session's name
 * (like a federated user's) is chosen by whoever assumes the role: a session entry tells apart
 * uses of a role, not the principals that may assume it (docs/deploy.md, "Callers").
 *
 * Secure by default: with no entries no caller may act for any tenant (every tenant-scoped
 * request is refused with 403) until the operator says who acts for whom. The explicit opt-out
 * `deploy.allowAnyCaller: true` opens the API to every caller API Gateway lets through, i.e. any
 * IAM principal of the account whose policies allow `execute-api:Invoke` on it, for every tenant.
 */

export type CallerMap = Readonly<Record<string, readonly string[]>>;

import { ALL_TENANTS, type AuthorizeFn, type CallerIdentity, callerIdentity } from './caller.ts';

export { ALL_TENANTS, type CallerIdentity, callerIdentity };

interface ParsedArn {
  readonly partition: string;
  readonly service: string;
  readonly account: string;
  readonly resource: string;
}

function parseArn(arn: string): ParsedArn | undefined {
  const parts = arn.split(':');
  if (parts.length < 6 || parts[0] !== 'arn') return undefined;
  return { partition: parts[1]!, service: parts[2]!, account: parts[4]!, resource: parts.slice(5).join(':') };
}

/** `{ account, role, session? }` of an assumed-role ARN, else undefined. */
function assumedRole(arn: ParsedArn): { role: string; session?: string } | undefined {
  if (arn.service !== 'sts' || !arn.resource.startsWith('assumed-role/')) return undefined;
  const [, role, ...session] = arn.resource.split('/');
  if (!role) return undefined;
  return session.length > 0 ? { role, session: session.join('/') } : { role };
}

/** Role name of an IAM role ARN (`role/NAME` or `role/PATH/NAME`), else undefined. */
function roleName(arn: ParsedArn): string | undefined {
  if (arn.service !== 'iam' || !arn.resource.startsWith('role/')) return undefined;
  return arn.resource.split('/').at(-1) || undefined;
}

/** Whether a configured principal ARN covers the calling principal. */
export function principalMatches(configured: string, caller: string): boolean {
  if (configured === caller) return true;
  const entry = parseArn(configured);
  const call = parseArn(caller);
  if (!entry || !call || entry.partition !== call.partition || entry.account !== call.account) return false;
  const callerRole = assumedRole(call);
  if (!callerRole) return false;
  const entryRole = roleName(entry);
  if (entryRole !== undefined) return entryRole === callerRole.role;
  const entryAssumed = assumedRole(entry);
  // An assumed-role entry without a session covers all sessions of that role.
  return entryAssumed !== undefined && entryAssumed.session === undefined && entryAssumed.role === callerRole.role;
}

/** The tenants a caller may act for: the union over every entry that covers it. */
export function tenantsForCaller(callers: CallerMap, callerArn: string): ReadonlySet<string> {
  const tenants = new Set<string>();
  for (const [principal, allowed] of Object.entries(callers)) {
    if (principalMatches(principal, callerArn)) for (const tenant of allowed) tenants.add(tenant);
  }
  return tenants;
}

export function mayActFor(callers: CallerMap, callerArn: string, tenantId: string): boolean {
  const tenants = tenantsForCaller(callers, callerArn);
  return tenants.has(ALL_TENANTS) || tenants.has(tenantId);
}

/**
 * The router's `authorize` hook for a caller map. An empty map refuses everyone, unless
 * `allowAnyCaller` opts out: then there is no hook (open to every IAM-authorized caller). A
 * request without an IAM identity is refused: it can only come from a route someone forgot to
 * protect.
 */
export function createCallerAuthorizer(
  callers: CallerMap,
  options: { readonly allowAnyCaller?: boolean } = {},
): AuthorizeFn | undefined {
  if (Object.keys(callers).length === 0) return options.allowAnyCaller ? undefined : () => false;
  return (event, tenantId) => {
    const identity = callerIdentity(event);
    return identity !== undefined && mayActFor(callers, identity.userArn, tenantId);
  };
}
