/**
 * The installed package's optional peer dependencies. A project that only submits work or
 * defines task types installs the client alone; what runs the whole system locally (the
 * emulators and the AWS SDK clients the runtime calls them with) is installed by the first
 * `tasks dev`, into the user's project as devDependencies, at the version ranges this package's
 * `peerDependencies` name. (Prisma's CLI installs its client the same way.)
 */
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** What `tasks dev` imports beyond the client: the local runtime's emulators and AWS SDK clients. */
export const LOCAL_RUNTIME_PEERS = [
  '@aws-sdk/client-dynamodb',
  '@aws-sdk/client-lambda',
  '@aws-sdk/client-s3',
  '@aws-sdk/client-sqs',
  '@aws-sdk/lib-dynamodb',
  '@opentelemetry/api',
  '@smithy/node-http-handler',
  'cron-parser',
  'dynalite',
  'fauxqs',
  'level',
] as const;

/** What exports spans, loaded only when OTEL_EXPORTER_OTLP_ENDPOINT is set (runtime/telemetry/tracing.ts). */
export const TRACING_PEERS = [
  '@opentelemetry/exporter-trace-otlp-http',
  '@opentelemetry/resources',
  '@opentelemetry/sdk-trace-base',
] as const;

const PACKAGE_NAME = 'serverless-task-scheduler';

/** This package's package.json (found upward from this file, in the repository or under dist/). */
function ownManifest(): { peerDependencies?: Record<string, string> } {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    try {
      const manifest = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as {
        name?: string;
        peerDependencies?: Record<string, string>;
      };
      if (manifest.name === PACKAGE_NAME) return manifest;
    } catch {
      // no package.json here
    }
    const parent = dirname(dir);
    if (parent === dir) throw new Error(`Cannot find the package.json of ${PACKAGE_NAME} above ${import.meta.url}`);
    dir = parent;
  }
}

/**
 * The packages of `names` not installed where an import from here would look (a node_modules
 * of this directory or one above it). Looked up on disk, not by resolving them: Node remembers
 * a failed resolution for the rest of the process, so the imports after the install would fail.
 */
export function missingPeers(names: readonly string[]): string[] {
  const here = dirname(fileURLToPath(import.meta.url));
  return names.filter((name) => {
    for (let dir = here; ; dir = dirname(dir)) {
      if (existsSync(join(dir, 'node_modules', name, 'package.json'))) return false;
      if (dirname(dir) === dir) return true;
    }
  });
}

/** `name@range` for each of `names`, with the ranges of this package's peerDependencies. */
export function peerSpecs(names: readonly string[]): string[] {
  const ranges = ownManifest().peerDependencies ?? {};
  return names.map((name) => (ranges[name] ? `${name}@${ranges[name]}` : name));
}

/** The command that installs `specs` as devDependencies of the project in `cwd`. */
export function installCommand(specs: readonly string[]): string {
  return `npm install --save-dev ${specs.join(' ')}`;
}

/**
 * Install `specs` as devDependencies of the project in `cwd` with npm (the one running `npx`
 * when there is one); resolves with npm's exit code. npm's output goes to stderr.
 */
export function installPeers(specs: readonly string[], cwd: string): Promise<number> {
  const args = ['install', '--save-dev', '--no-audit', '--no-fund', ...specs];
  const npmCli = process.env.npm_execpath;
  const [command, argv] = npmCli && /\.c?js$/.test(npmCli) ? [process.execPath, [npmCli, ...args]] : ['npm', args];
  return new Promise((resolve) => {
    const child = spawn(command, argv, { cwd, stdio: ['ignore', 2, 2], shell: process.platform === 'win32' });
    child.once('error', () => resolve(127));
    child.once('exit', (code) => resolve(code ?? 1));
  });
}
