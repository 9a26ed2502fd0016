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
import { copyFileSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { buildSync } from 'esbuild';

/** Native packages the worker may import at run time; esbuild cannot bundle their binaries. */
export const WORKER_NATIVE_MODULES = ['sharp'] as const;

export type ImagePlatform = 'linux/arm64' | 'linux/amd64';

export interface FargateWorkerContextOptions {
  /** Repository root: `runtime/`, `Dockerfile` and `package-lock.json`. */
  readonly projectRoot: string;
  /** Where to write the context; emptied first. */
  readonly outDir: string;
  /** @default 'linux/arm64' (the service's default Graviton workers) */
  readonly platform?: ImagePlatform;
}

/** Write the build context and return its size in bytes (what the image adds to its base). */
export function buildFargateWorkerContext(options: FargateWorkerContextOptions): number {
  const { projectRoot, outDir } = options;
  // npm names Docker's amd64 `x64`.
  const cpu = (options.platform ?? 'linux/arm64') === 'linux/arm64' ? 'arm64' : 'x64';
  rmSync(outDir, { recursive: true, force: true });
  mkdirSync(outDir, { recursive: true });

  // The same esbuild settings as the Lambda functions (lib/runtime-function.ts).
  buildSync({
    entryPoints: [path.join(projectRoot, 'runtime', 'handlers', 'fargate-worker.ts')],
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

  const versions = lockedVersions(projectRoot, WORKER_NATIVE_MODULES);
  writeFileSync(
    path.join(outDir, 'package.json'),
    `${JSON.stringify({ name: 'task-scheduler-fargate-worker', private: true, type: 'module', dependencies: versions }, null, 2)}\n`,
  );
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
  copyFileSync(path.join(projectRoot, 'Dockerfile'), path.join(outDir, 'Dockerfile'));
  return directorySize(outDir);
}

/** Exact versions of `names` from the lockfile, so the image runs what the tests ran. */
function lockedVersions(projectRoot: string, names: readonly string[]): Record<string, string> {
  const lock = JSON.parse(readFileSync(path.join(projectRoot, 'package-lock.json'), 'utf8')) as {
    packages: Record<string, { version?: string }>;
  };
  return Object.fromEntries(
    names.map((name) => {
      const version = lock.packages[`node_modules/${name}`]?.version;
      if (!version) throw new Error(`Fargate worker image: ${name} is not in package-lock.json`);
      return [name, version];
    }),
  );
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
