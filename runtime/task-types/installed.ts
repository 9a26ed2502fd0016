/**
 * The task modules bundled into a deployed function or the Fargate image. The CDK construct
 * bundles each function that runs or validates task types with an esbuild `inject` file that
 * imports the user's modules and installs them here before the handler's own code runs (an
 * injected file is evaluated first); `defaultRegistry()` then serves them beside the built-in
 * types. Nothing is installed in the local runtime, which passes its modules' types explicitly.
 */
import type { AnyTaskTypeDefinition } from './define.ts';
import { checkTaskModules, type ImportedTaskModule } from './modules.ts';

let installed: readonly AnyTaskTypeDefinition[] = [];

/**
 * Check `modules` (as the local runtime does at start) and serve their types from now on.
 * `builtIn`: the names they may not take.
 */
export function installTaskModules(modules: readonly ImportedTaskModule[], builtIn: readonly string[]): void {
  installed = checkTaskModules(modules, builtIn);
}

/** The types installed by {@link installTaskModules} (none unless a bundle installed some). */
export function installedTaskTypes(): readonly AnyTaskTypeDefinition[] {
  return installed;
}
