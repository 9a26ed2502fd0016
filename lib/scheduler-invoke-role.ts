import { Stack } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import type { Construct } from 'constructs';

/**
 * A role EventBridge Scheduler assumes to invoke one function: the unqualified ARN only (the
 * generic grantInvoke also allows every version and alias), and only for schedules of this account
 * (confused-deputy guard).
 */
export function schedulerInvokeRole(scope: Construct, id: string, target: lambda.IFunction): iam.Role {
  const role = new iam.Role(scope, id, {
    assumedBy: new iam.ServicePrincipal('scheduler.amazonaws.com', {
      conditions: { StringEquals: { 'aws:SourceAccount': Stack.of(scope).account } },
    }),
    description: 'Lets EventBridge Scheduler invoke one task scheduler function',
  });
  role.addToPolicy(new iam.PolicyStatement({ actions: ['lambda:InvokeFunction'], resources: [target.functionArn] }));
  return role;
}
