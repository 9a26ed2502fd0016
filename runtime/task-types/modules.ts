/**
 * Task modules: files of the user's project whose default export is an array of task types made
 * with `defineTaskType`. `npm start -- --task-types PATH`, `tasks dev --task-types PATH` and the
 * CDK construct load them beside the built-in types. Every mistake is found at load, before
 * anything starts, and named with the module it is in: a missing file, a module that does not
 * load, no default export, a default export that is not an array, an entry not made by
 * defineTaskType, a name defined twice or taken by a built-in type.
 */
import { existsSync } from 'node:fs';
import { extname, isAbsolute, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ConfigError } from '../core/errors.ts';
import { type AnyTaskTypeDefinition, isTaskTypeDefinition } from './define.ts';

/** Extensions a task module may have: JavaScript, or TypeScript run through Node's type stripping. */
export const TASK_MODULE_EXTENSIONS = ['.js', '.mjs', '.cjs', '.ts', '.mts', '.cts'] as const;

/** A task module refused at load; `problems` holds one line per mistake, each naming its module. */
export class TaskModuleError extends ConfigError {
  constructor(problems: string[]) {
    super(
      problems.length === 1
        ? `Task module: ${problems[0]}`
        : `Task modules: ${problems.length} problems:\n  ${problems.join('\n  ')}`,
      { problems },
    );
    this.name = 'TaskModuleError';
  }
}

/** One module's default export, as imported (the runtime checks it with {@link checkTaskModules}). */
export interface ImportedTaskModule {
  /** How the user named it (shown in errors). */
  readonly source: string;
  /** The module namespace object (what `import * as m` gives). */
  readonly namespace: Readonly<Record<string, unknown>>;
}

/**
 * The task types of `modules`, checked: each default export an array of defineTaskType results,
 * no name twice (across modules too), none a built-in name. Throws TaskModuleError listing every
 * problem found.
 */
export function checkTaskModules(
  modules: readonly ImportedTaskModule[],
  builtIn: readonly string[],
): AnyTaskTypeDefinition[] {
  const problems: string[] = [];
  const types: AnyTaskTypeDefinition[] = [];
  const seen = new Map<string, string>();
  const reserved = new Set(builtIn);
  for (const { source, namespace } of modules) {
    if (!('default' in namespace)) {
      const named = Object.keys(namespace).filter((key) => key !== 'default');
      problems.push(
        `${source} has no default export; a task module ends with \`export default [yourType, ...]\`${named.length > 0 ? ` (it exports ${named.slice(0, 5).join(', ')})` : ''}`,
      );
      continue;
    }
    const exported = namespace.default;
    if (!Array.isArray(exported)) {
      problems.push(
        `${source}: the default export is ${describe(exported)}, not an array of task types; write \`export default [yourType]\``,
      );
      continue;
    }
    exported.forEach((entry: unknown, index) => {
      const where = `${source} [${index}]`;
      if (!isTaskTypeDefinition(entry)) {
        problems.push(`${where} is ${describe(entry)}, not a task type made by defineTaskType`);
        return;
      }
      if (reserved.has(entry.type)) {
        problems.push(`${where}: "${entry.type}" is the name of a built-in task type; choose another name`);
        return;
      }
      const earlier = seen.get(entry.type);
      if (earlier !== undefined) {
        problems.push(`${where}: task type "${entry.type}" is defined twice (also ${earlier})`);
        return;
      }
      seen.set(entry.type, where);
      types.push(entry);
    });
  }
  if (problems.length > 0) throw new TaskModuleError(problems);
  return types;
}

/**
 * Import the modules at `paths` (relative to `cwd`) and check them as {@link checkTaskModules}
 * does. A `.ts` module needs a Node that strips types (22.18+, 23.6+, or
 * `--experimental-strip-types`); the error says so when it does not.
 */
export async function loadTaskModules(
  paths: readonly string[],
  builtIn: readonly string[],
  cwd: string = process.cwd(),
): Promise<AnyTaskTypeDefinition[]> {
  const problems: string[] = [];
  const imported: ImportedTaskModule[] = [];
  for (const source of paths) {
    const absolute = isAbsolute(source) ? source : resolve(cwd, source);
    const extension = extname(absolute);
    if (!existsSync(absolute)) {
      problems.push(`${source}: no such file (looked for ${absolute})`);
      continue;
    }
    if (!(TASK_MODULE_EXTENSIONS as readonly string[]).includes(extension)) {
      problems.push(`${source}: a task module is a ${TASK_MODULE_EXTENSIONS.join(', ')} file`);
      continue;
    }
    try {
      const namespace = (await import(pathToFileURL(absolute).href)) as Record<string, unknown>;
      imported.push({ source, namespace });
    } catch (error) {
      problems.push(`${source} failed to load: ${loadFailure(error, extension)}`);
    }
  }
  if (problems.length > 0) throw new TaskModuleError(problems);
  return checkTaskModules(imported, builtIn);
}

function loadFailure(error: unknown, extension: string): string {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  const message = error instanceof Error ? error.message.split('\n')[0] : String(error);
  if (code === 'ERR_UNKNOWN_FILE_EXTENSION' && ['.ts', '.mts', '.cts'].includes(extension)) {
    return `this Node (${process.version}) does not strip TypeScript types: use Node 22.18+ or 23.6+, or set NODE_OPTIONS=--experimental-strip-types, or give a .js/.mjs module`;
  }
  if (code === 'ERR_UNSUPPORTED_TYPESCRIPT_SYNTAX') {
    return `${message} (Node strips types but does not transform TypeScript: no enums, namespaces or parameter properties)`;
  }
  return message ?? String(error);
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'function') return `a function${value.name ? ` (${value.name})` : ''}`;
  if (typeof value === 'object') {
    const type = (value as { type?: unknown }).type;
    return typeof type === 'string' ? `an object with type "${type}"` : 'an object';
  }
  return `${typeof value === 'string' ? 'a string' : `a ${typeof value}`} (${String(value).slice(0, 40)})`;
}
