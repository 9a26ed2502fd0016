/**
 * Task modules (runtime/task-types/modules.ts): what a user's module may export, and the one
 * clear error for each mistake, found at load before anything starts.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { NonRetryableError } from '../../runtime/core/errors.ts';
import { defineTaskType, isTaskTypeDefinition } from '../../runtime/task-types/define.ts';
import { BUILT_IN_TASK_TYPE_NAMES, defaultRegistry } from '../../runtime/task-types/index.ts';
import { checkTaskModules, loadTaskModules, TaskModuleError } from '../../runtime/task-types/modules.ts';

const dir = mkdtempSync(join(tmpdir(), 'task-modules-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const define = (type: string) =>
  defineTaskType({ type, description: type, payload: z.strictObject({}), handler: async () => ({ type }) });

function problemsOf(action: () => unknown): string[] {
  try {
    action();
  } catch (error) {
    expect(error).toBeInstanceOf(TaskModuleError);
    return (error as TaskModuleError & { details: { problems: string[] } }).details.problems;
  }
  throw new Error('expected a TaskModuleError');
}

/** The module's source, written where Node can import it; `define.ts` is this repository's. */
function writeModule(name: string, body: string): string {
  const path = join(dir, name);
  const define = pathToFileURL(join(process.cwd(), 'runtime/task-types/define.ts')).href;
  writeFileSync(path, `import { defineTaskType } from ${JSON.stringify(define)};\n${body}\n`);
  return path;
}

describe('Function: checkTaskModules', () => {
  it('returns the types of every module, in order', () => {
    // Prepare
    const a = define('billing.invoice');
    const b = define('billing.refund');
    const c = define('media.thumbnail');

    // Act
    const types = checkTaskModules(
      [
        { source: 'a.ts', namespace: { default: [a, b] } },
        { source: 'b.ts', namespace: { default: [c] } },
      ],
      BUILT_IN_TASK_TYPE_NAMES,
    );

    // Assess
    expect(types.map((t) => t.type)).toEqual(['billing.invoice', 'billing.refund', 'media.thumbnail']);
    expect(defaultRegistry(types).names()).toEqual([...BUILT_IN_TASK_TYPE_NAMES, ...types.map((t) => t.type)].sort());
  });

  it.each([
    [
      'no default export',
      { thumbnail: define('media.thumbnail') },
      'm.ts has no default export; a task module ends with `export default [yourType, ...]` (it exports thumbnail)',
    ],
    [
      'a default export that is one type, not an array',
      { default: define('media.thumbnail') },
      'm.ts: the default export is an object with type "media.thumbnail", not an array of task types; write `export default [yourType]`',
    ],
    [
      'a function',
      { default: function makeTypes() {} },
      'm.ts: the default export is a function (makeTypes), not an array of task types; write `export default [yourType]`',
    ],
    [
      'an entry not made by defineTaskType',
      { default: [{ type: 'media.thumbnail', handler: async () => 1 }] },
      'm.ts [0] is an object with type "media.thumbnail", not a task type made by defineTaskType',
    ],
    [
      'a string entry',
      { default: ['media.thumbnail'] },
      'm.ts [0] is a string (media.thumbnail), not a task type made by defineTaskType',
    ],
    [
      'a built-in name',
      { default: [define('demo.echo')] },
      'm.ts [0]: "demo.echo" is the name of a built-in task type; choose another name',
    ],
  ])('refuses %s, naming the module', (_, namespace, problem) => {
    expect(problemsOf(() => checkTaskModules([{ source: 'm.ts', namespace }], BUILT_IN_TASK_TYPE_NAMES))).toEqual([
      problem,
    ]);
  });

  it('refuses a name defined twice, in one module or across two, and lists every problem at once', () => {
    const problems = problemsOf(() =>
      checkTaskModules(
        [
          { source: 'a.ts', namespace: { default: [define('x.one'), define('x.one')] } },
          { source: 'b.ts', namespace: { default: [define('x.two'), 42] } },
          { source: 'c.ts', namespace: { default: [define('x.two')] } },
        ],
        [],
      ),
    );

    expect(problems).toEqual([
      'a.ts [1]: task type "x.one" is defined twice (also a.ts [0])',
      'b.ts [1] is a number (42), not a task type made by defineTaskType',
      'c.ts [0]: task type "x.two" is defined twice (also b.ts [0])',
    ]);
  });
});

describe('Function: defineTaskType', () => {
  it('marks what it makes, so a copy-pasted object literal is told apart', () => {
    const made = define('x.made');

    expect(isTaskTypeDefinition(made)).toBe(true);
    expect(isTaskTypeDefinition({ ...made })).toBe(false);
    expect(Object.isFrozen(made)).toBe(true);
  });

  it('refuses a handler that is not a function', () => {
    expect(() =>
      defineTaskType({ type: 'x.bad', description: '', payload: z.object({}), handler: 'nope' as never }),
    ).toThrow('Task type "x.bad": handler must be a function');
  });
});

describe('Function: loadTaskModules', () => {
  it('imports .mjs and .ts modules and returns their types', async () => {
    // Prepare
    const mjs = writeModule(
      'tasks.mjs',
      `export default [defineTaskType({ type: 'user.hello', description: 'd', payload: { safeParse: (v) => ({ success: true, data: v }) }, handler: async () => 'hi' })];`,
    );
    const ts = writeModule(
      'tasks.ts',
      `const payload: { safeParse(v: unknown): { success: true; data: unknown } } = { safeParse: (v) => ({ success: true, data: v }) };
export default [defineTaskType({ type: 'user.typed', description: 'd', payload: payload as never, handler: async (): Promise<string> => 'typed' })];`,
    );

    // Act
    const types = await loadTaskModules([mjs, ts], BUILT_IN_TASK_TYPE_NAMES);

    // Assess
    expect(types.map((t) => t.type)).toEqual(['user.hello', 'user.typed']);
  });

  it('names a missing file, a wrong extension and a module that throws, all at once', async () => {
    // Prepare
    const throwing = writeModule('throws.mjs', `throw new Error('no database URL');`);
    const text = join(dir, 'tasks.txt');
    writeFileSync(text, '');

    // Act
    const error = await loadTaskModules(['./missing.ts', text, throwing], [], dir).catch((e: unknown) => e);

    // Assess
    expect(error).toBeInstanceOf(TaskModuleError);
    expect((error as TaskModuleError).message).toBe(
      [
        'Task modules: 3 problems:',
        `  ./missing.ts: no such file (looked for ${join(dir, 'missing.ts')})`,
        `  ${text}: a task module is a .js, .mjs, .cjs, .ts, .mts, .cts file`,
        `  ${throwing} failed to load: no database URL`,
      ].join('\n'),
    );
  });
});

describe('Class: NonRetryableError', () => {
  it('is recognised by instanceof whichever copy of the package made it', () => {
    // Prepare: an error from another copy carries the same process-wide mark, not the same class.
    class OtherCopy extends Error {
      constructor() {
        super('from the installed package');
        Object.defineProperty(this, Symbol.for('serverless-task-scheduler.NonRetryableError'), { value: true });
      }
    }
    class Subclass extends NonRetryableError {}

    // Act / Assess
    expect(new OtherCopy()).toBeInstanceOf(NonRetryableError);
    expect(new NonRetryableError('x')).toBeInstanceOf(NonRetryableError);
    expect(new Error('x')).not.toBeInstanceOf(NonRetryableError);
    expect(new Subclass('x')).toBeInstanceOf(Subclass);
    expect(new NonRetryableError('x')).not.toBeInstanceOf(Subclass);
  });
});

describe('Function: installTaskModules', () => {
  it("serves a bundle's modules from defaultRegistry() beside the built-in types, checked as at load", async () => {
    // Prepare: what the construct's injected file does before a deployed handler runs.
    const { installTaskModules, installedTaskTypes } = await import('../../runtime/task-types/installed.ts');
    const mine = define('user.bundled');

    // Act
    expect(() => installTaskModules([{ source: 'bad.ts', namespace: { default: [mine, mine] } }], [])).toThrow(
      'Task module: bad.ts [1]: task type "user.bundled" is defined twice (also bad.ts [0])',
    );
    installTaskModules([{ source: 'src/tasks.ts', namespace: { default: [mine] } }], BUILT_IN_TASK_TYPE_NAMES);

    // Assess
    expect(installedTaskTypes()).toEqual([mine]);
    expect(defaultRegistry().has('user.bundled')).toBe(true);
    expect(defaultRegistry().has('demo.echo')).toBe(true);
  });
});
