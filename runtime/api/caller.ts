/** Who calls the API: the IAM identity API Gateway attaches to the event (no AWS SDK, no routes). */
import type { APIGatewayProxyEventV2 } from 'aws-lambda';

/** Every tenant. */
export const ALL_TENANTS = '*';

export interface CallerIdentity {
  readonly userArn: string;
  readonly accountId?: string;
  readonly callerId?: string;
}

/** The IAM identity API Gateway attached to the event, when the route uses IAM authorization. */
export function callerIdentity(event: APIGatewayProxyEventV2): CallerIdentity | undefined {
  const context = event.requestContext as { authorizer?: { iam?: Record<string, unknown> } } | undefined;
  const iam = context?.authorizer?.iam;
  if (!iam || typeof iam.userArn !== 'string' || iam.userArn === '') return undefined;
  return {
    userArn: iam.userArn,
    ...(typeof iam.accountId === 'string' ? { accountId: iam.accountId } : {}),
    ...(typeof iam.callerId === 'string' ? { callerId: iam.callerId } : {}),
  };
}

/** Decides whether the caller of `event` may act for `tenantId` (deployed stack: IAM caller → tenants). */
export type AuthorizeFn = (event: APIGatewayProxyEventV2, tenantId: string) => boolean | Promise<boolean>;
