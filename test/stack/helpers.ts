/**
 * Stack test helpers: synthesize the stack from a configuration, with bundling skipped (the
 * stack's shape does not depend on the handlers' code), and read grants back out of a template.
 */
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { App, type CfnElement, type Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import type { IConstruct } from 'constructs';
import { TaskSchedulerStack } from '../../lib/task-scheduler-stack.ts';
import { type ConfigInput, parseConfig, type SchedulerConfig } from '../../runtime/core/config.ts';

export const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/** Entry modules the stack wires up, under runtime/handlers/. */
export const HANDLERS = ['api', 'scheduler', 'worker', 'redrive', 'scheduled-submit', 'fargate-worker'] as const;

export const missingHandlers = (root = REPO_ROOT): string[] =>
  HANDLERS.filter((name) => !existsSync(path.join(root, 'runtime', 'handlers', `${name}.ts`)));

/** The shipped default configuration (config/default.json), validated. */
export function defaultConfigInput(): ConfigInput {
  return JSON.parse(readFileSync(path.join(REPO_ROOT, 'config', 'default.json'), 'utf8')) as ConfigInput;
}

/** The context cdk.json gives `cdk synth`, so tests see the same feature flags. */
export function cdkJsonContext(): Record<string, unknown> {
  const cdkJson = JSON.parse(readFileSync(path.join(REPO_ROOT, 'cdk.json'), 'utf8')) as {
    context: Record<string, unknown>;
  };
  return cdkJson.context;
}

let fixture: string | undefined;
/**
 * A project root whose handler entries exist. With bundling skipped NodejsFunction only checks
 * that the entry file exists, so these tests do not wait on (or break with) the runtime code;
 * the bundling test uses the real repository.
 */
export function projectFixture(): string {
  if (fixture) return fixture;
  const root = mkdtempSync(path.join(tmpdir(), 'stack-test-'));
  mkdirSync(path.join(root, 'runtime', 'handlers'), { recursive: true });
  for (const file of ['package.json', 'package-lock.json', 'Dockerfile', '.dockerignore']) {
    copyFileSync(path.join(REPO_ROOT, file), path.join(root, file));
  }
  for (const name of HANDLERS) {
    writeFileSync(path.join(root, 'runtime', 'handlers', `${name}.ts`), 'export const handler = async () => {};\n');
  }
  fixture = root;
  process.once('exit', () => rmSync(root, { recursive: true, force: true }));
  return root;
}

export interface Synthesized {
  readonly app: App;
  readonly stack: TaskSchedulerStack;
  readonly template: Template;
  readonly config: SchedulerConfig;
}

export interface SynthOptions {
  /** @default config/default.json */
  readonly config?: ConfigInput;
  /** Run esbuild (slow). @default false */
  readonly bundle?: boolean;
}

export function synthesize(options: SynthOptions = {}): Synthesized {
  const config = parseConfig(options.config ?? defaultConfigInput());
  const app = new App({
    context: {
      ...cdkJsonContext(),
      ...(options.bundle ? {} : { 'aws:cdk:bundling-stacks': [] }),
    },
  });
  const stack = new TaskSchedulerStack(app, config.deploy.stackName, {
    config,
    projectRoot: options.bundle ? REPO_ROOT : projectFixture(),
  });
  return { app, stack, template: Template.fromStack(stack), config };
}

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
