/**
 * The stack synthesized from a configuration, with bundling skipped by default (the stack's
 * shape does not depend on the handlers' code): the stack tests and the idle-cost bench read
 * the template it gives.
 */
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { App, type Environment } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import * as ecs from 'aws-cdk-lib/aws-ecs';
import { TaskSchedulerStack } from '../lib/task-scheduler-stack.ts';
import { type ConfigInput, parseConfig, type SchedulerConfig } from '../runtime/core/config.ts';

export const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/** Entry modules the stack wires up, under runtime/handlers/. */
export const HANDLERS = [
  'api',
  'scheduler',
  'worker',
  'redrive',
  'scheduled-submit',
  'fargate-worker',
  'task-events',
  'webhook-delivery',
] as const;

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
  /** The account and region, as bin/app.ts passes them when the CLI knows them. @default environment-agnostic */
  readonly env?: Environment;
  /** An image name for the Fargate workers instead of the Dockerfile (bin/app.ts's context fargateWorkerImage). */
  readonly fargateWorkerImage?: string;
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
    ...(options.env ? { env: options.env } : {}),
    ...(options.fargateWorkerImage
      ? { fargateWorkerImage: ecs.ContainerImage.fromRegistry(options.fargateWorkerImage) }
      : {}),
  });
  return { app, stack, template: Template.fromStack(stack), config };
}
