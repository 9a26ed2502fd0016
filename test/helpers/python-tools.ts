/**
 * The AWS tools some machines carry under pyenv's Python (cfn-lint, moto_server): on CI's machines
 * and this project's, not on a user's laptop. A test that needs one finds it here and, when it is
 * absent, says so in one line (the reason included) instead of skipping silently.
 *
 * Looked for, in order: on PATH (a pyenv shim counts only if it runs: a shim whose selected Python
 * lacks the tool fails), then every `$PYENV_ROOT/versions/<version>/bin/<name>` (PYENV_ROOT
 * defaults to ~/.pyenv), newest version first. Each candidate is run once (`--version`) to prove it runs.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { homedir } from 'node:os';
import * as path from 'node:path';

export type PythonTool =
  | { readonly found: true; readonly command: string; readonly version: string }
  | { readonly found: false; readonly reason: string };

export interface FindOptions {
  /** @default process.env */
  readonly env?: NodeJS.ProcessEnv;
  /** @default 60 s: a pyenv shim on a loaded machine is slow to start */
  readonly timeoutMs?: number;
  /** What proves the tool runs. @default ['--version'] (moto_server has only --help) */
  readonly probe?: readonly string[];
}

/** Compare `3.11.7` with `3.9.18` as versions, not strings; non-numeric names last. */
function byVersionDescending(a: string, b: string): number {
  const parts = (name: string) => name.split(/[.-]/).map((part) => Number.parseInt(part, 10));
  const [pa, pb] = [parts(a), parts(b)];
  for (let i = 0; i < Math.max(pa.length, pb.length); i++) {
    const [x, y] = [pa[i] ?? -1, pb[i] ?? -1];
    if (Number.isNaN(x) !== Number.isNaN(y)) return Number.isNaN(x) ? 1 : -1;
    if (x !== y) return y - x;
  }
  return b.localeCompare(a);
}

function candidates(name: string, env: NodeJS.ProcessEnv): string[] {
  const onPath = (env.PATH ?? '')
    .split(path.delimiter)
    .filter(Boolean)
    .map((dir) => path.join(dir, name))
    .filter((file) => existsSync(file));
  const pyenvRoot = env.PYENV_ROOT || path.join(env.HOME || homedir(), '.pyenv');
  const versionsDir = path.join(pyenvRoot, 'versions');
  const versions = existsSync(versionsDir) ? readdirSync(versionsDir).sort(byVersionDescending) : [];
  const underPyenv = versions.map((version) => path.join(versionsDir, version, 'bin', name)).filter(existsSync);
  return [...new Set([...onPath, ...underPyenv])];
}

export function findPythonTool(name: string, options: FindOptions = {}): PythonTool {
  const env = options.env ?? process.env;
  const found = candidates(name, env);
  const failures: string[] = [];
  for (const command of found) {
    const probe = options.probe ?? ['--version'];
    const run = spawnSync(command, [...probe], { env, encoding: 'utf8', timeout: options.timeoutMs ?? 60_000 });
    if (run.status === 0) {
      const version = `${run.stdout}${run.stderr}`.trim().split('\n')[0] ?? '';
      return { found: true, command, version };
    }
    const why = run.error ? run.error.message : `exit ${run.status ?? run.signal}`;
    failures.push(`${command} ${probe.join(' ')} failed (${why})`);
  }
  const pyenvRoot = env.PYENV_ROOT || '~/.pyenv';
  return {
    found: false,
    reason:
      failures.length > 0
        ? failures.join('; ')
        : `no ${name} on PATH or in ${pyenvRoot}/versions/*/bin (it comes with Python's ${name === 'moto_server' ? 'moto[server]' : name} package)`,
  };
}

/** The one line a test prints when it could not run for want of a tool. */
export function notRunLine(what: string, tool: Extract<PythonTool, { found: false }>): string {
  return `${what}: not run: ${tool.reason}`;
}
