import { CfnResource, Stack, Token } from 'aws-cdk-lib';
import type { IConstruct } from 'constructs';

/** Lambda allows 4 KB of environment per function, names and values together. */
export const LAMBDA_ENVIRONMENT_LIMIT = 4096;

/** Longest region name (`ap-southeast-N`) and an account id, for URLs and ARNs known only at deploy. */
const REGION_ALLOWANCE = 14;
const ACCOUNT_ALLOWANCE = 12;
/** CloudFormation names resources `${stackName}-${logicalId}-${suffix}`, with a 12-to-13 character suffix. */
const GENERATED_SUFFIX = 13;

/** Longest physical name CloudFormation may generate for a resource type (its service's limit). */
const NAME_LIMITS: Readonly<Record<string, number>> = {
  'AWS::SQS::Queue': 80,
  'AWS::DynamoDB::Table': 255,
  'AWS::S3::Bucket': 63,
};

/** The L1 property holding a resource's physical name, where one may be given. */
const PHYSICAL_NAME: Readonly<Record<string, string>> = {
  'AWS::SQS::Queue': 'queueName',
  'AWS::DynamoDB::Table': 'tableName',
  'AWS::S3::Bucket': 'bucketName',
};

/**
 * An upper bound of the bytes a Lambda environment takes once deployed: literal text counts as
 * is; a reference to a resource counts the longest name (or queue URL) CloudFormation can give it.
 * Lets a stack fail at synth, naming the cause, instead of at deploy with "exceeded 4KB".
 */
export function estimateEnvironmentBytes(scope: IConstruct, environment: Readonly<Record<string, string>>): number {
  const stack = Stack.of(scope);
  const resources = new Map<string, { type: string; name?: string }>();
  for (const construct of stack.node.findAll()) {
    if (!(construct instanceof CfnResource)) continue;
    // A physical name given in the template is used as is.
    const given = (construct as unknown as Record<string, unknown>)[PHYSICAL_NAME[construct.cfnResourceType] ?? ''];
    resources.set(stack.resolve(stack.getLogicalId(construct)) as string, {
      type: construct.cfnResourceType,
      ...(typeof given === 'string' && !Token.isUnresolved(given) ? { name: given } : {}),
    });
  }
  const stackNameLength = stack.stackName.length;
  const referenceSize = (logicalId: string): number => {
    const resource = resources.get(logicalId);
    const type = resource?.type ?? '';
    const limit = NAME_LIMITS[type] ?? 255;
    const name =
      resource?.name?.length ?? Math.min(limit, stackNameLength + 1 + logicalId.length + 1 + GENERATED_SUFFIX);
    // A queue's Ref is its URL: https://sqs.<region>.amazonaws.com/<account>/<name>
    return type === 'AWS::SQS::Queue'
      ? 'https://sqs..amazonaws.com//'.length + REGION_ALLOWANCE + ACCOUNT_ALLOWANCE + name
      : name;
  };
  const size = (value: unknown): number => {
    if (typeof value === 'string') return Buffer.byteLength(value);
    if (typeof value === 'number' || typeof value === 'boolean') return String(value).length;
    if (Array.isArray(value)) return value.reduce((sum: number, item) => sum + size(item), 0);
    if (value && typeof value === 'object') {
      const object = value as Record<string, unknown>;
      if (typeof object.Ref === 'string') {
        if (object.Ref === 'AWS::Region') return REGION_ALLOWANCE;
        if (object.Ref === 'AWS::AccountId') return ACCOUNT_ALLOWANCE;
        if (object.Ref === 'AWS::URLSuffix') return 'amazonaws.com.cn'.length;
        if (object.Ref === 'AWS::StackName') return stackNameLength;
        return referenceSize(object.Ref);
      }
      if (Array.isArray(object['Fn::Join'])) {
        const [separator, parts] = object['Fn::Join'] as [string, unknown[]];
        return parts.reduce((sum: number, part) => sum + size(part), 0) + separator.length * (parts.length - 1);
      }
      if (Array.isArray(object['Fn::GetAtt'])) return 255;
    }
    return 255;
  };
  return Object.entries(environment).reduce(
    (sum, [name, value]) => sum + Buffer.byteLength(name) + size(stack.resolve(value)),
    0,
  );
}
