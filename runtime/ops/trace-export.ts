/**
 * The task entries of the trace format (runtime/ops/trace-file.ts) and `tasks trace export`'s
 * making of a trace from recorded tasks. Apart from trace-file.ts, which checks a trace against
 * a configuration, so the command line exports without loading the configuration's checks (and
 * their cron parser, an optional peer dependency of a client-only install).
 */
import { z } from 'zod';
import { PRIORITY_TIERS, RUNTIMES, type Task, type TenantSettings } from '../core/task.ts';

export const traceTaskSchema = z.object({
  id: z.string().min(1),
  tenantId: z.string().min(1),
  priority: z.enum(PRIORITY_TIERS).optional(),
  runtime: z.enum(RUNTIMES).optional(),
  resources: z
    .object({ vcpu: z.number().positive().optional(), memoryMiB: z.number().positive().optional() })
    .optional(),
  submitSeconds: z.number().min(0).max(1e9),
  runSeconds: z.number().min(0).max(1e9),
  timeoutSeconds: z.number().positive().max(1e9).optional(),
});

/** A task as the API returns it (the fields a trace keeps). */
export type RecordedTask = Pick<
  Task,
  'taskId' | 'tenantId' | 'priority' | 'runtime' | 'resources' | 'submittedAt' | 'runAt' | 'timeoutSeconds'
> & { readonly startedAt?: string | null | undefined; readonly finishedAt?: string | null | undefined };

/**
 * A trace from recorded tasks (`tasks trace export`): each task that ran, from when it became
 * due (submitted, or its runAt if later) to how long its last attempt ran; times from the earliest.
 */
export function traceOfTasks(
  tasks: readonly RecordedTask[],
  extra: { readonly config?: unknown; readonly tenants?: Readonly<Record<string, TenantSettings>> } = {},
): { config?: unknown; tenants: Record<string, TenantSettings>; tasks: z.input<typeof traceTaskSchema>[] } {
  const ran = tasks.filter((task) => task.startedAt && task.finishedAt);
  const dueMs = (task: (typeof ran)[number]) => Math.max(Date.parse(task.submittedAt), Date.parse(task.runAt));
  const originMs = Math.min(...ran.map(dueMs));
  const round = (seconds: number) => Math.round(seconds * 1000) / 1000;
  return {
    ...(extra.config === undefined ? {} : { config: extra.config }),
    tenants: { ...extra.tenants },
    tasks: ran
      .map((task) => ({
        id: task.taskId,
        tenantId: task.tenantId,
        priority: task.priority,
        runtime: task.runtime,
        resources: task.resources,
        submitSeconds: round((dueMs(task) - originMs) / 1000),
        runSeconds: round(
          Math.max(0, Date.parse(task.finishedAt as string) - Date.parse(task.startedAt as string)) / 1000,
        ),
        timeoutSeconds: task.timeoutSeconds,
      }))
      .sort((a, b) => a.submitSeconds - b.submitSeconds || (a.id < b.id ? -1 : 1)),
  };
}
