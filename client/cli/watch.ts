/**
 * `tasks watch`: a live terminal view of GET /v1/status, redrawn every second with plain ANSI
 * escapes (no curses library). `renderStatus` is pure, so the frame is testable as text.
 */
import type { SchedulerClient } from '../sdk/client.ts';
import type { SchedulerStatus } from '../sdk/types.ts';
import { bar, duration, pad, padStart, percent, type Style, truncate } from './format.ts';

export const CLEAR_SCREEN = '\x1b[H\x1b[2J';
export const HIDE_CURSOR = '\x1b[?25l';
export const SHOW_CURSOR = '\x1b[?25h';

export interface RenderOptions {
  readonly style: Style;
  /** Terminal width; lines are cut to fit. Undefined: not cut (output to a pipe or file). */
  readonly columns?: number | undefined;
  readonly endpoint: string;
  /** Rows of recent tasks at most. */
  readonly maxTasks?: number | undefined;
}

export function renderStatus(status: SchedulerStatus, options: RenderOptions): string {
  const { style } = options;
  const now = Date.parse(status.at);
  const out: string[] = [];
  const scheduler = status.scheduler
    ? `${status.scheduler.dispatchRate.toFixed(1)} dispatch/s · snapshot ${duration(status.scheduler.ageSeconds)} old` +
      (status.scheduler.ageSeconds > 30 ? style.state('FAILED', ' (stale: is the scheduler running?)') : '')
    : style.state('QUEUED', 'no snapshot yet: the scheduler has not published one');
  out.push(
    `${style.bold('Task scheduler')} ${options.endpoint} · policy ${status.policy} · aging ${status.agingSeconds}s · ${scheduler}`,
  );
  out.push('');

  // WAITING is the real backlog (a `+` where a tenant is over the count cap); HELD what the
  // scheduler has read of it into its windows.
  out.push(style.bold('TIERS     WAITING    HELD  OLDEST WAIT'));
  const maxWaiting = Math.max(1, ...status.tiers.map((tier) => tier.waiting));
  for (const tier of status.tiers) {
    out.push(
      `${pad(tier.tier, 9)} ${padStart(countText(tier.waiting, tier.waitingExact), 7)} ${padStart(String(tier.held), 7)}  ${pad(tier.waiting > 0 ? duration(tier.oldestWaitSeconds) : '-', 11)}  ${bar(tier.waiting / maxWaiting, 20)}`,
    );
  }
  out.push('');

  const { lambda, fargate } = status.pools;
  out.push(style.bold('POOLS'));
  out.push(`${pad('lambda', 9)} ${bar(lambda.used / lambda.capacity, 20)} ${lambda.used}/${lambda.capacity} slots`);
  out.push(
    `${pad('fargate', 9)} ${bar(fargate.vcpuUsed / fargate.vcpu, 20)} ${fargate.vcpuUsed}/${fargate.vcpu} vCPU  ` +
      `${bar(fargate.memoryMiBUsed / fargate.memoryMiB, 10)} ${fargate.memoryMiBUsed}/${fargate.memoryMiB} MiB`,
  );
  out.push('');

  out.push(
    style.bold(
      'TENANTS         RUNNING / QUOTA                QUEUED  SHARE (│ = ENTITLEMENT)               DONE 15 MIN',
    ),
  );
  if (status.tenants.length === 0) out.push(style.dim('(no tenants with work yet)'));
  for (const tenant of status.tenants) {
    const quota = tenant.running / tenant.maxConcurrency;
    const quotaText = `${tenant.running}/${tenant.maxConcurrency}`;
    out.push(
      `${pad(truncate(tenant.tenantId, 15), 15)} ${quota >= 1 ? style.state('FAILED', bar(quota, 16)) : bar(quota, 16)} ${pad(quotaText, 11)} ${padStart(countText(tenant.queued, tenant.queuedExact), 6)}  ${shareBar(tenant.dominantShare, tenant.entitlement, 16)} ${pad(`${percent(tenant.dominantShare)} of ${percent(tenant.entitlement)}`, 14)} ${finishedText(tenant.recentlyFinished)}`,
    );
  }
  out.push('');

  out.push(style.bold('RECENT TASKS'));
  const tasks = status.recentTasks.slice(0, options.maxTasks ?? 15);
  if (tasks.length === 0)
    out.push(style.dim('(no tasks yet: submit one with `tasks submit --tenant T --type demo.sleep`)'));
  const idWidth = Math.max(4, ...tasks.map((task) => task.taskId.length));
  for (const task of tasks) {
    let detail = '';
    if (task.state === 'RUNNING' && task.startedAt) {
      const elapsed = (now - Date.parse(task.startedAt)) / 1000;
      detail = `${bar(elapsed / task.timeoutSeconds, 10)} ${duration(elapsed)} of ${duration(task.timeoutSeconds)} timeout`;
    } else if (task.wait) {
      detail = `${task.wait.reason}: ${task.wait.message}`;
    } else if (task.state === 'FAILED' && task.error) {
      detail = `${task.error.name}: ${task.error.message}`;
    } else if (task.finishedAt) {
      detail = `finished ${duration((now - Date.parse(task.finishedAt)) / 1000)} ago`;
    }
    out.push(
      `${pad(task.taskId, idWidth)} ${pad(truncate(task.tenantId, 12), 12)} ${pad(truncate(task.type, 18), 18)} ${style.state(task.state, pad(task.state, 10))} ${pad(task.priority, 8)} ${detail}`,
    );
  }
  const columns = options.columns;
  return (columns === undefined ? out : out.map((line) => cut(line, columns))).join('\n');
}

/** Share held as a bar, with the entitlement marked by `▏` (or `|` past the fill). */
function shareBar(share: number, entitlement: number, width: number): string {
  const cells = bar(share, width).slice(1, -1).split('');
  const mark = Math.min(width - 1, Math.max(0, Math.round(entitlement * width)));
  if (entitlement > 0) cells[mark] = '│';
  return `[${cells.join('')}]`;
}

/** Cut a line to the terminal width without breaking an ANSI escape. */
function cut(line: string, columns: number): string {
  let visible = 0;
  let result = '';
  for (let i = 0; i < line.length; i++) {
    if (line[i] === '\x1b') {
      const end = line.indexOf('m', i);
      if (end !== -1) {
        result += line.slice(i, end + 1);
        i = end;
        continue;
      }
    }
    if (visible >= columns) continue;
    result += line[i];
    visible++;
  }
  return result;
}

export interface WatchOptions {
  readonly client: SchedulerClient;
  readonly render: Omit<RenderOptions, 'columns'> & { readonly columns?: (() => number | undefined) | undefined };
  readonly intervalMs: number;
  readonly once: boolean;
  readonly json: boolean;
  /** Redraw in place (terminal); otherwise frames are printed one after another. */
  readonly redraw: boolean;
  readonly recent?: number | undefined;
  readonly tenants?: readonly string[] | undefined;
  readonly write: (text: string) => void;
  readonly signal?: AbortSignal | undefined;
  /** A line shown under a failure to read the status (how to point the CLI at the API). */
  readonly hint?: ((error: unknown) => string | undefined) | undefined;
}

/** Returns the exit code: 0, or 1 when `--once` could not read the status. */
export async function watch(options: WatchOptions): Promise<number> {
  const { write, signal } = options;
  if (options.redraw && !options.json) write(HIDE_CURSOR);
  try {
    while (!signal?.aborted) {
      let frame: string;
      let failed = false;
      try {
        const status = await options.client.status(
          {
            recent: options.recent,
            tenants: options.tenants,
          },
          { signal },
        );
        frame = options.json
          ? JSON.stringify(status)
          : renderStatus(status, {
              style: options.render.style,
              endpoint: options.render.endpoint,
              maxTasks: options.render.maxTasks,
              columns: options.render.columns?.(),
            });
      } catch (error) {
        if (signal?.aborted) break;
        failed = true;
        const message = error instanceof Error ? error.message : String(error);
        const hint = options.hint?.(error);
        frame = options.json
          ? JSON.stringify({ error: { message, ...(hint ? { hint } : {}) } })
          : `${options.render.style.state('FAILED', 'cannot read status')}: ${message}\n${hint ? `${hint}\n` : ''}(retrying every ${duration(options.intervalMs / 1000)}; Ctrl-C to quit)`;
      }
      write(`${options.redraw && !options.json ? CLEAR_SCREEN : ''}${frame}\n`);
      if (options.once) return failed ? 1 : 0;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(done, options.intervalMs);
        signal?.addEventListener('abort', done, { once: true });
        function done() {
          clearTimeout(timer);
          signal?.removeEventListener('abort', done);
          resolve();
        }
      });
    }
    return 0;
  } finally {
    if (options.redraw && !options.json) write(SHOW_CURSOR);
  }
}

/** A count, with `+` when it is a cap (more are queued). */
function countText(count: number, exact: boolean | undefined): string {
  return `${count}${exact === false ? '+' : ''}`;
}

/** What finished lately: `✓ 1500 ✗ 2` (succeeded, failed; cancelled when any). */
function finishedText(finished: { succeeded: number; failed: number; cancelled: number } | null | undefined): string {
  if (!finished) return '-';
  return `✓ ${finished.succeeded} ✗ ${finished.failed}${finished.cancelled > 0 ? ` ⊘ ${finished.cancelled}` : ''}`;
}
