/**
 * The Fargate worker's Docker build context, built the way the Lambdas are: an esbuild bundle of
 * `runtime/handlers/fargate-worker.ts` (AWS SDK and every pure-JS dependency inside it) plus the
 * native packages the task types load on demand (sharp, for the photo example), installed from
 * the lockfile's versions for the image's platform. The repository's `Dockerfile` is copied in
 * and builds only from this directory, so the image carries no aws-cdk-lib, TypeScript,
 * emulators or test code.
 *
 * Runs at synth with the local esbuild and npm (no Docker; npm only needs its cache once sharp
 * has been fetched). `node bin/fargate-image.ts DIR` writes the same context for a manual
 * `docker build DIR`.
 */
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { buildSync } from 'esbuild';
import { installedVersion, type RuntimeCode } from './runtime-code.ts';

/** Native packages the worker may import at run time; esbuild cannot bundle their binaries. */
export const WORKER_NATIVE_MODULES = ['sharp'] as const;

export type ImagePlatform = 'linux/arm64' | 'linux/amd64';

export interface FargateWorkerContextOptions {
  /** Where the worker's entry and the Dockerfile are, and the project that bundles it. */
  readonly code: RuntimeCode;
  /** The inject file installing the user's task modules (lib/runtime-code.ts). @default - none */
  readonly taskModulesInject?: string | undefined;
  /** Where to write the context; emptied first. */
  readonly outDir: string;
  /** @default 'linux/arm64' (the service's default Graviton workers) */
  readonly platform?: ImagePlatform;
  /**
   * The program the image runs as index.mjs: a file of runtime/handlers. The scheduler service's
   * image runs `scheduler-container` and needs no native modules.
   * @default 'fargate-worker'
   */
  readonly entry?: string;
  /** Install the native packages task types load (sharp). @default true */
  readonly nativeModules?: boolean;
}

/** Write the build context and return its size in bytes (what the image adds to its base). */
export function buildFargateWorkerContext(options: FargateWorkerContextOptions): number {
  const { code, outDir } = options;
  // npm names Docker's amd64 `x64`.
  const cpu = (options.platform ?? 'linux/arm64') === 'linux/arm64' ? 'arm64' : 'x64';
  rmSync(outDir, { recursive: true, force: true });
  mkdirSync(outDir, { recursive: true });

  // The same esbuild settings as the Lambda functions (lib/runtime-function.ts).
  buildSync({
    entryPoints: [code.handlerEntry(options.entry ?? 'fargate-worker')],
    // Resolve the handler's imports (the AWS SDK, Powertools) from the project that bundles.
    absWorkingDir: code.projectRoot,
    ...(options.taskModulesInject ? { inject: [options.taskModulesInject] } : {}),
    outfile: path.join(outDir, 'index.mjs'),
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node24',
    mainFields: ['module', 'main'],
    minify: true,
    sourcemap: true,
    sourcesContent: false,
    external: [...WORKER_NATIVE_MODULES],
    // CommonJS dependencies inside an ESM bundle still call require().
    banner: { js: "import { createRequire } from 'node:module'; const require = createRequire(import.meta.url);" },
    logLevel: 'warning',
  });

  const nativeModules = (options.nativeModules ?? true) ? code.nativeModules : [];
  const versions = Object.fromEntries(nativeModules.map((name) => [name, installedVersion(code.projectRoot, name)]));
  writeFileSync(
    path.join(outDir, 'package.json'),
    `${JSON.stringify({ name: 'task-scheduler-fargate-worker', private: true, type: 'module', dependencies: versions }, null, 2)}\n`,
  );
  if (nativeModules.length > 0) installNativeModules(outDir, cpu);
  copyFileSync(code.dockerfile, path.join(outDir, 'Dockerfile'));
  return directorySize(outDir);
}

/** The native packages named in outDir's package.json, for the image's platform. */
function installNativeModules(outDir: string, cpu: 'arm64' | 'x64'): void {
  execFileSync('npm', ['install', '--omit=dev', '--ignore-scripts', '--no-package-lock', '--no-audit', '--no-fund'], {
    cwd: outDir,
    stdio: ['ignore', 'ignore', 'inherit'],
    env: {
      ...process.env,
      // npm picks the optional per-platform binaries (e.g. @img/sharp-linux-arm64) by these.
      npm_config_os: 'linux',
      npm_config_cpu: cpu,
      npm_config_libc: 'glibc',
      // Once cached, synth needs no network.
      npm_config_prefer_offline: 'true',
      npm_config_update_notifier: 'false',
    },
  });
}

export function directorySize(dir: string): number {
  let bytes = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) bytes += directorySize(full);
    else if (entry.isFile()) bytes += statSync(full).size;
  }
  return bytes;
}
