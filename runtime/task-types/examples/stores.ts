/**
 * How an example handler finds its data stores: the runtime's AWS clients and the physical
 * names in `TaskServices.resources`. Kept apart from resources.ts so handlers (and the Lambda
 * bundles that carry them) never import the local emulators.
 */
import { NonRetryableError } from '../../core/errors.ts';
import { EXAMPLE_RESOURCE_IDS, EXAMPLE_RESOURCES_ENV, type ExampleResourceId } from '../../infra/example-resources.ts';
import type { TaskServices } from '../define.ts';

/** Physical names by logical id: what goes into `TaskServices.resources`. */
export type ExampleResourceNames = Readonly<Record<ExampleResourceId, string>>;

/** The AWS clients and the physical names a handler needs; a clear, permanent error when absent. */
export function exampleStores<const Ids extends readonly ExampleResourceId[]>(
  ctx: { readonly type: string; readonly services: TaskServices },
  ids: Ids,
): { aws: NonNullable<TaskServices['aws']>; names: Record<Ids[number], string> } {
  const aws = ctx.services.aws;
  if (!aws) {
    // Retrying cannot help: the runtime was started without AWS clients for handlers.
    throw new NonRetryableError(
      `${ctx.type} needs AWS clients (services.aws), but this runtime provides none; start it with the example resources configured`,
    );
  }
  const names = {} as Record<Ids[number], string>;
  const missing: string[] = [];
  for (const id of ids as readonly Ids[number][]) {
    const name = ctx.services.resources?.[id];
    if (name) names[id] = name;
    else missing.push(id);
  }
  if (missing.length > 0) {
    throw new NonRetryableError(
      `${ctx.type} needs the example resources ${missing.join(', ')} (services.resources), which this runtime does not name`,
    );
  }
  return { aws, names };
}

/**
 * The names map on AWS: the stack puts it in `EXAMPLE_RESOURCES` as JSON (id → physical name).
 * Undefined when unset, so a deployment without the examples simply provides no names.
 */
export function exampleResourcesFromEnvironment(
  env: Readonly<Record<string, string | undefined>> = process.env,
): ExampleResourceNames | undefined {
  const json = env[EXAMPLE_RESOURCES_ENV];
  if (!json) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(json);
  } catch {
    throw new Error(`${EXAMPLE_RESOURCES_ENV} must be a JSON object of resource id to name`);
  }
  const names = (parsed ?? {}) as Record<string, unknown>;
  const missing = EXAMPLE_RESOURCE_IDS.filter((id) => typeof names[id] !== 'string' || names[id] === '');
  if (missing.length > 0) throw new Error(`${EXAMPLE_RESOURCES_ENV} lacks ${missing.join(', ')}`);
  return Object.fromEntries(EXAMPLE_RESOURCE_IDS.map((id) => [id, names[id] as string])) as ExampleResourceNames;
}
