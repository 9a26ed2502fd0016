/**
 * Scheduled submits (EventBridge Scheduler on AWS, the local schedule runner on a laptop) share
 * this: the idempotency key is the schedule name plus the scheduled instant, so however often a
 * firing is delivered, one task exists per firing. `{{date}}` in string payload values becomes the
 * scheduled date (YYYY-MM-DD, UTC), so a nightly job knows which night it covers.
 */
import type { PriorityTier } from '../core/task.ts';
import type { SubmitInput } from './task-service.ts';

export interface ScheduledFiring {
  readonly scheduleName: string;
  readonly scheduledTime: string;
  readonly task: {
    readonly tenantId: string;
    readonly type: string;
    readonly payload?: unknown;
    readonly priority?: PriorityTier | undefined;
    readonly timeoutSeconds?: number | undefined;
    readonly maxAttempts?: number | undefined;
  };
}

export function scheduledSubmitInput(firing: ScheduledFiring): SubmitInput {
  const at = new Date(firing.scheduledTime);
  // Minute granularity (EventBridge Scheduler's): redeliveries of one firing share the key.
  const minute = at.toISOString().slice(0, 16);
  const date = at.toISOString().slice(0, 10);
  return {
    ...firing.task,
    payload: substitute(firing.task.payload ?? {}, date),
    idempotencyKey: `schedule:${firing.scheduleName}:${minute}`,
  };
}

function substitute(value: unknown, date: string): unknown {
  if (typeof value === 'string') return value.replaceAll('{{date}}', date);
  if (Array.isArray(value)) return value.map((item) => substitute(item, date));
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, substitute(v, date)]));
  }
  return value;
}
