/**
 * Where the code the stack deploys comes from. In this repository: the TypeScript sources under
 * runtime/, bundled against the repository's lockfile. In a user's CDK app, which imports the
 * installed package (`serverless-task-scheduler/cdk`): the JavaScript compiled into the package's
 * dist/ (Node strips no types under node_modules), bundled from the user's project, whose
 * lockfile and node_modules resolve what the handlers import. Either way the user's task modules
 * are bundled into every function that runs or validates task types, and into the Fargate image,
 * through an esbuild `inject` file (runtime/task-types/installed.ts).
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = fileURLToPath(import.meta.url);
/** True when this file is the package's compiled JavaScript (dist/lib/*.js), not the repository's source. */
export const COMPILED = here.endsWith('.js');
/** The package's root: the repository, or node_modules/serverless-task-scheduler. */
export const PACKAGE_ROOT = path.resolve(path.dirname(here), COMPILED ? '../..' : '..');
/** Where the runtime's modules are: runtime/ in the repository, dist/runtime/ in the installed package. */
const RUNTIME_DIR = path.join(PACKAGE_ROOT, ...(COMPILED ? ['dist', 'runtime'] : ['runtime']));
const EXTENSION = COMPILED ? '.js' : '.ts';

/** Lockfiles NodejsFunction understands, in the order it looks for them. */
const LOCKFILES = ['package-lock.json', 'yarn.lock', 'pnpm-lock.yaml', 'bun.lockb', 'bun.lock'] as const;

/**
 * What the deployed functions import and a user's project must have installed for esbuild to
 * bundle them (the package's optional peer dependencies that the handlers reach); aws-cdk-lib,
 * constructs and esbuild are needed to synthesize at all.
 */
export const DEPLOY_PEERS = [
  '@aws-lambda-powertools/batch',
  '@aws-lambda-powertools/logger',
  '@aws-lambda-powertools/metrics',
  '@aws-sdk/client-dynamodb',
  '@aws-sdk/client-eventbridge',
  '@aws-sdk/client-lambda',
  '@aws-sdk/client-s3',
  '@aws-sdk/client-secrets-manager',
  '@aws-sdk/client-sqs',
  '@aws-sdk/lib-dynamodb',
  '@opentelemetry/api',
  '@opentelemetry/exporter-trace-otlp-http',
  '@opentelemetry/resources',
  '@opentelemetry/sdk-trace-base',
  '@smithy/node-http-handler',
  'cron-parser',
  'esbuild',
] as const;

/** Packages with native binaries the built-in example task types load on demand (photo-resize). */
const OPTIONAL_NATIVE_MODULES = ['sharp'] as const;

export interface RuntimeCodeOptions {
  /**
   * The project that bundles: holds the lockfile and the node_modules esbuild resolves from.
   * @default the repository (source), or the current directory (the installed package: where
   *   `cdk synth` runs the user's app)
   */
  readonly projectRoot?: string;
  /** The user's task modules, absolute or relative to projectRoot. @default none */
  readonly taskModules?: readonly string[];
}

/** The code settings every function and the Fargate image share. */
export interface RuntimeCode {
  readonly projectRoot: string;
  /** The lockfile in projectRoot (NodejsFunction's depsLockFilePath). */
  readonly depsLockFilePath: string;
  /** Absolute path of the handler `name`'s entry module. */
  handlerEntry(name: string): string;
  /** The worker image's Dockerfile. */
  readonly dockerfile: string;
  /** Native packages installed beside the workers' bundles (sharp when the project has it). */
  readonly nativeModules: readonly string[];
  /** The user's task modules, absolute paths (empty: none). */
  readonly taskModules: readonly string[];
}

/**
 * The code settings for `options`. Source mode keeps the layout the stack tests fake (handlers
 * and Dockerfile under projectRoot); the installed package reads them from itself.
 */
export function runtimeCode(options: RuntimeCodeOptions = {}): RuntimeCode {
  const projectRoot = path.resolve(options.projectRoot ?? (COMPILED ? process.cwd() : PACKAGE_ROOT));
  const lockfile = LOCKFILES.find((name) => existsSync(path.join(projectRoot, name)));
  if (!lockfile) {
    throw new Error(
      `TaskSchedulerStack: no lockfile in ${projectRoot} (looked for ${LOCKFILES.join(', ')}); it pins what esbuild bundles. Run npm install there, or pass projectRoot`,
    );
  }
  const codeRoot = COMPILED ? PACKAGE_ROOT : projectRoot;
  const taskModules = (options.taskModules ?? []).map((module) => path.resolve(projectRoot, module));
  const absent = taskModules.filter((module) => !existsSync(module));
  if (absent.length > 0) throw new Error(`TaskSchedulerStack: task module not found: ${absent.join(', ')}`);
  if (COMPILED) {
    const missing = missingPackages(projectRoot, DEPLOY_PEERS);
    if (missing.length > 0) {
      throw new Error(
        `TaskSchedulerStack: ${projectRoot} lacks what the deployed functions import (bundled from there, without Docker): npm install --save-dev ${missing.join(' ')}`,
      );
    }
  }
  return {
    projectRoot,
    depsLockFilePath: path.join(projectRoot, lockfile),
    handlerEntry: (name) =>
      COMPILED
        ? path.join(RUNTIME_DIR, 'handlers', `${name}${EXTENSION}`)
        : path.join(projectRoot, 'runtime', 'handlers', `${name}.ts`),
    dockerfile: path.join(codeRoot, 'Dockerfile'),
    // The repository always ships sharp (its lockfile has it); a user's project only if it chose to.
    nativeModules: COMPILED
      ? OPTIONAL_NATIVE_MODULES.filter((name) => missingPackages(projectRoot, [name]).length === 0)
      : [...OPTIONAL_NATIVE_MODULES],
    taskModules,
  };
}

/** The packages of `names` not installed in `projectRoot`'s node_modules or one above it. */
export function missingPackages(projectRoot: string, names: readonly string[]): string[] {
  return names.filter((name) => {
    for (let dir = projectRoot; ; dir = path.dirname(dir)) {
      if (existsSync(path.join(dir, 'node_modules', name, 'package.json'))) return false;
      if (path.dirname(dir) === dir) return true;
    }
  });
}

/** The installed (else locked) version of `name` in `projectRoot`, so the image runs what the tests ran. */
export function installedVersion(projectRoot: string, name: string): string {
  const installed = path.join(projectRoot, 'node_modules', name, 'package.json');
  if (existsSync(installed)) return (JSON.parse(readFileSync(installed, 'utf8')) as { version: string }).version;
  const lock = path.join(projectRoot, 'package-lock.json');
  const version = existsSync(lock)
    ? (JSON.parse(readFileSync(lock, 'utf8')) as { packages?: Record<string, { version?: string }> }).packages?.[
        `node_modules/${name}`
      ]?.version
    : undefined;
  if (!version) throw new Error(`${name} is neither installed in ${projectRoot} nor in its package-lock.json`);
  return version;
}

/**
 * Write the esbuild `inject` file that installs the task modules into the bundle before the
 * handler's own code runs (an injected file is evaluated first); returns its path, or undefined
 * when there are no modules. Checked at cold start as the local runtime checks them at start.
 */
export function writeTaskModulesInject(taskModules: readonly string[], outDir: string): string | undefined {
  if (taskModules.length === 0) return undefined;
  const taskTypes = path.join(RUNTIME_DIR, 'task-types');
  const lines = [
    '// Generated by serverless-task-scheduler (lib/runtime-code.ts): the task modules of this deployment.',
    `import { installTaskModules } from ${JSON.stringify(path.join(taskTypes, `installed${EXTENSION}`))};`,
    `import { BUILT_IN_TASK_TYPE_NAMES } from ${JSON.stringify(path.join(taskTypes, `index${EXTENSION}`))};`,
    ...taskModules.map((module, i) => `import * as module${i} from ${JSON.stringify(module)};`),
    `installTaskModules([${taskModules
      .map((module, i) => `{ source: ${JSON.stringify(path.basename(module))}, namespace: module${i} }`)
      .join(', ')}], BUILT_IN_TASK_TYPE_NAMES);`,
    '',
  ];
  mkdirSync(outDir, { recursive: true });
  const file = path.join(outDir, 'task-modules.mjs');
  writeFileSync(file, lines.join('\n'));
  return file;
}
