/**
 * Stack test helpers: synthesize the stack (bench/stack-synth.ts, shared with the idle-cost
 * bench) and read grants back out of a template.
 */
import type { CfnElement, Stack } from 'aws-cdk-lib';
import type { Template } from 'aws-cdk-lib/assertions';
import type { IConstruct } from 'constructs';

export {
  cdkJsonContext,
  defaultConfigInput,
  missingHandlers,
  projectFixture,
  REPO_ROOT,
  type Synthesized,
  type SynthOptions,
  synthesize,
} from '../../bench/stack-synth.ts';

/** The CloudFormation logical id of a construct (or of its default child). */
export function logicalId(stack: Stack, construct: IConstruct): string {
  const element = (construct.node.defaultChild ?? construct) as CfnElement;
  return stack.resolve(stack.getLogicalId(element)) as string;
}

type Json = unknown;

/** Render a policy resource as a short string: `Fn::GetAtt [X, Arn]` → `X`, joins → `X/index/*`. */
function renderResource(value: Json): string {
  if (typeof value === 'string') return value;
  if (Array.isArray(value)) return value.map(renderResource).join('');
  if (value && typeof value === 'object') {
    const object = value as Record<string, Json>;
    if ('Fn::GetAtt' in object) return String((object['Fn::GetAtt'] as string[])[0]);
    if ('Ref' in object) return String(object.Ref);
    if ('Fn::Join' in object) return ((object['Fn::Join'] as [string, Json[]])[1] ?? []).map(renderResource).join('');
  }
  return JSON.stringify(value);
}

/**
 * Every `action resource` pair granted to a role through the policies attached to it, e.g.
 * `sqs:SendMessage QueuesTierHighABC123`, `dynamodb:Query TablesTasksXYZ/index/*`.
 */
export function grantsOf(template: Template, roleLogicalId: string): Set<string> {
  const grants = new Set<string>();
  const policies = template.findResources('AWS::IAM::Policy');
  for (const policy of Object.values(policies)) {
    const properties = policy.Properties as {
      Roles?: { Ref: string }[];
      PolicyDocument: { Statement: { Effect: string; Action: string | string[]; Resource: Json }[] };
    };
    if (!properties.Roles?.some((role) => role.Ref === roleLogicalId)) continue;
    for (const statement of properties.PolicyDocument.Statement) {
      if (statement.Effect !== 'Allow') continue;
      const actions = Array.isArray(statement.Action) ? statement.Action : [statement.Action];
      const resources = Array.isArray(statement.Resource) ? statement.Resource : [statement.Resource];
      for (const action of actions)
        for (const resource of resources) grants.add(`${action} ${renderResource(resource)}`);
    }
  }
  return grants;
}

/** The resources an action is granted on, from {@link grantsOf}. */
export function resourcesFor(grants: Set<string>, action: string): string[] {
  return [...grants]
    .filter((grant) => grant.startsWith(`${action} `))
    .map((grant) => grant.slice(action.length + 1))
    .sort();
}
