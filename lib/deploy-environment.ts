/**
 * The account and region bin/app.ts builds the stack for.
 *
 * The CDK CLI sets CDK_DEFAULT_ACCOUNT and CDK_DEFAULT_REGION for the app itself: the account
 * from the credentials, the region from AWS_REGION / AWS_DEFAULT_REGION / the profile, else
 * us-east-1, replacing any value given by hand. CDK_DEPLOY_ACCOUNT and CDK_DEPLOY_REGION (the CDK
 * guide's names for an explicit target) reach the app as given and win. With no account the
 * stack is environment-agnostic, so `cdk synth` works offline; with one, nothing in the stack
 * looks AWS up at synth either (the one lookup, availability zones, is left to CloudFormation:
 * TaskSchedulerStack.availabilityZones).
 */
export interface DeployEnvironment {
  /** Absent: environment-agnostic. */
  readonly env?: { readonly account: string; readonly region: string };
  /** One line for the person deploying, when the region was not chosen by anything the app can see. */
  readonly notice?: string;
}

export function deployEnvironment(variables: NodeJS.ProcessEnv, stackName: string): DeployEnvironment {
  const account = variables.CDK_DEPLOY_ACCOUNT || variables.CDK_DEFAULT_ACCOUNT;
  const region = variables.CDK_DEPLOY_REGION || variables.CDK_DEFAULT_REGION;
  if (!account || !region) return {};
  const env = { account, region };
  if (variables.CDK_DEPLOY_REGION || variables.AWS_REGION || variables.AWS_DEFAULT_REGION) return { env };
  // The CLI took the region from the profile or fell back to us-east-1; a CDK_DEFAULT_REGION typed
  // by hand never reaches the app, so say which region this is and how to choose another.
  return {
    env,
    notice:
      `${stackName}: building for region ${region}, the CDK CLI's (the profile's region, else us-east-1); ` +
      'choose one with AWS_REGION or CDK_DEPLOY_REGION (the CLI replaces CDK_DEFAULT_REGION)',
  };
}
