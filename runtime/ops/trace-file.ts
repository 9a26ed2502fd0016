/**
 * The arrival trace of `npm run sim -- replay` (pinned in PRODUCT.md) and of `tasks trace export`:
 *
 *   { "config": {configuration file}, "tenants": { "id": { "weight", "maxConcurrency" } },
 *     "tasks": [ { "id", "tenantId", "priority", "runtime", "resources", "submitSeconds",
 *                  "runSeconds", "timeoutSeconds" } ] }
 *
 * Other keys are ignored. A task's missing priority, resources and timeout take the
 * configuration's `taskDefaults`, and a missing runtime is chosen as a submit chooses it. Here so
 * the CLI (export) and the simulator (replay) share one definition; nothing deployed uses it.
 */
import { z } from 'zod';
import { type ConfigInput, parseConfig, type SchedulerConfig } from '../core/config.ts';
import {
  chooseRuntime,
  type PriorityTier,
  type Runtime,
  type TaskResources,
  type TenantSettings,
} from '../core/task.ts';
import { LAMBDA_WORKER } from '../infra/resources.ts';
import { traceTaskSchema } from './trace-export.ts';

const traceFileSchema = z.object({
  config: z.unknown().optional(),
  tenants: z
    .record(z.string(), z.object({ weight: z.number().positive(), maxConcurrency: z.number().int().min(0) }))
    .optional(),
  tasks: z.array(traceTaskSchema),
});

/** A trace task with every field resolved. */
export interface TraceTask {
  readonly id: string;
  readonly tenantId: string;
  readonly priority: PriorityTier;
  readonly runtime: Runtime;
  readonly resources: TaskResources;
  readonly submitSeconds: number;
  readonly runSeconds: number;
  readonly timeoutSeconds: number;
}

export interface TraceFile {
  readonly config: SchedulerConfig;
  /** Settings per tenant: the configuration's entry, else the trace's, else the defaults apply. */
  readonly tenants: Readonly<Record<string, TenantSettings>>;
  readonly tasks: readonly TraceTask[];
}

export class TraceFileError extends Error {
  readonly problems: readonly string[];
  constructor(message: string, problems: readonly string[]) {
    super(message);
    this.name = 'TraceFileError';
    this.problems = problems;
  }
}

/**
 * Validate a parsed trace; with `config`, that configuration replaces the trace's (a what-if: a
 * proposed configuration over recorded traffic), its tenant entries winning over the trace's.
 */
export function parseTraceFile(raw: unknown, source: string, config?: ConfigInput): TraceFile {
  const parsed = traceFileSchema.safeParse(raw);
  if (!parsed.success) {
    const problems = parsed.error.issues.map(
      (issue) => `${issue.path.length ? issue.path.map(String).join('.') : '(root)'}: ${issue.message}`,
    );
    throw new TraceFileError(`Invalid trace ${source}:\n  ${problems.join('\n  ')}`, problems);
  }
  const resolved = parseConfig(config ?? parsed.data.config ?? {}, config ? 'replay --config' : `${source} config`);
  const tenants: Record<string, TenantSettings> = {};
  for (const [tenantId, settings] of Object.entries(parsed.data.tenants ?? {})) tenants[tenantId] = settings;
  for (const [tenantId, settings] of Object.entries(resolved.tenants)) tenants[tenantId] = settings;
  const defaults = resolved.taskDefaults;
  const seen = new Set<string>();
  const problems: string[] = [];
  const tasks = parsed.data.tasks.map((task, i): TraceTask => {
    if (seen.has(task.id)) problems.push(`tasks.${i}.id: "${task.id}" appears twice`);
    seen.add(task.id);
    const resources = {
      vcpu: task.resources?.vcpu ?? defaults.vcpu,
      memoryMiB: task.resources?.memoryMiB ?? defaults.memoryMiB,
    };
    const timeoutSeconds = task.timeoutSeconds ?? defaults.timeoutSeconds;
    return {
      id: task.id,
      tenantId: task.tenantId,
      priority: task.priority ?? defaults.priority,
      runtime: task.runtime ?? chooseRuntime(resources, timeoutSeconds, LAMBDA_WORKER),
      resources,
      submitSeconds: task.submitSeconds,
      runSeconds: task.runSeconds,
      timeoutSeconds,
    };
  });
  if (problems.length > 0) throw new TraceFileError(`Invalid trace ${source}:\n  ${problems.join('\n  ')}`, problems);
  return { config: resolved, tenants, tasks };
}
