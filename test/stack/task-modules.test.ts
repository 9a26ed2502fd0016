/**
 * The user's task modules in the deployed code (lib/runtime-code.ts): the inject file installs
 * them before the handler's own code runs, so the registry every handler builds serves them.
 * Bundled here with esbuild as the stack bundles a function, then imported.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { pathToFileURL } from 'node:url';
import { build } from 'esbuild';
import { afterAll, describe, expect, it } from 'vitest';
import { DEPLOY_PEERS, missingPackages, runtimeCode, writeTaskModulesInject } from '../../lib/runtime-code.ts';
import { REGISTRY_HANDLERS } from '../../lib/runtime-function.ts';
import { REPO_ROOT } from './helpers.ts';

const dir = mkdtempSync(path.join(tmpdir(), 'task-modules-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const taskModule = (name: string, type: string) => {
  const file = path.join(dir, name);
  writeFileSync(
    file,
    `import { defineTaskType, z } from ${JSON.stringify(path.join(REPO_ROOT, 'index.ts'))};
export default [defineTaskType({ type: ${JSON.stringify(type)}, description: 'd', payload: z.object({}), handler: async () => 'ran ${type}' })];
`,
  );
  return file;
};

/** An entry standing for a handler: what defaultRegistry() serves when its module is evaluated. */
async function bundleWith(modules: readonly string[]): Promise<{ atLoad: string[] }> {
  const entry = path.join(dir, `entry-${modules.length}.ts`);
  writeFileSync(
    entry,
    `import { defaultRegistry } from ${JSON.stringify(path.join(REPO_ROOT, 'runtime/task-types/index.ts'))};
export const atLoad = defaultRegistry().names();
`,
  );
  const inject = writeTaskModulesInject(modules, path.join(dir, `inject-${modules.length}`));
  const outfile = path.join(dir, `bundle-${modules.length}.mjs`);
  await build({
    entryPoints: [entry],
    outfile,
    bundle: true,
    platform: 'node',
    format: 'esm',
    external: ['sharp'],
    ...(inject ? { inject: [inject] } : {}),
    banner: { js: "import { createRequire } from 'node:module'; const require = createRequire(import.meta.url);" },
    logLevel: 'silent',
  });
  return (await import(pathToFileURL(outfile).href)) as { atLoad: string[] };
}

describe('Task modules in the deployed bundles', () => {
  it("installs every module's types before the handler's top-level code runs", async () => {
    // Arrange
    const modules = [taskModule('a.mjs', 'user.a'), taskModule('b.mjs', 'user.b')];

    // Act
    const { atLoad } = await bundleWith(modules);

    // Assert
    expect(atLoad).toEqual(expect.arrayContaining(['user.a', 'user.b', 'demo.echo']));
  });

  it('writes no inject file without modules, and the bundle serves the built-in types alone', async () => {
    expect(writeTaskModulesInject([], path.join(dir, 'none'))).toBeUndefined();
    const { atLoad } = await bundleWith([]);
    expect(atLoad).toContain('demo.echo');
    expect(atLoad.filter((name) => name.startsWith('user.'))).toEqual([]);
  });

  it('fails at load, naming the module, when a module takes a built-in name', async () => {
    const clash = taskModule('clash.mjs', 'demo.echo');
    await expect(bundleWith([clash])).rejects.toThrow(
      /clash\.mjs \[0\]: "demo\.echo" is the name of a built-in task type/,
    );
  });

  it('goes to every handler that builds the services (and so a registry), and only those', () => {
    // A handler that starts building services without being listed would run without the user's types.
    const handlers = path.join(REPO_ROOT, 'runtime', 'handlers');
    const building = readdirSync(handlers)
      .filter((file) => file.endsWith('.ts') && file !== 'task-worker.ts')
      .filter((file) =>
        /\b(servicesFromEnvironment|buildServicesFromEnvironment|defaultRegistry)\b/.test(
          readFileSync(path.join(handlers, file), 'utf8'),
        ),
      )
      .map((file) => file.replace(/\.ts$/, ''));
    // task-worker.ts is the worker library: its users pass their types themselves.
    expect(building.sort()).toEqual([...REGISTRY_HANDLERS].sort());
  });

  it('refuses a missing module and a project without a lockfile at synth, saying what to do', () => {
    expect(() => runtimeCode({ projectRoot: REPO_ROOT, taskModules: ['./nope/tasks.mjs'] })).toThrow(
      `TaskSchedulerStack: task module not found: ${path.join(REPO_ROOT, 'nope/tasks.mjs')}`,
    );
    expect(() => runtimeCode({ projectRoot: dir })).toThrow(
      /no lockfile in .*Run npm install there, or pass projectRoot/,
    );
    // From the installed package, the peers the handlers import are looked for in the project.
    expect(missingPackages(REPO_ROOT, [...DEPLOY_PEERS])).toEqual([]);
    expect(missingPackages(path.join(REPO_ROOT, 'lib'), ['esbuild', 'no-such-package-for-this-test'])).toEqual([
      'no-such-package-for-this-test',
    ]);
  });
});
