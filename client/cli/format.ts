/**
 * Human-readable output of the command line: tasks, tenants, tables and bars. Pure functions
 * of the API's data; `--json` bypasses all of this.
 */

import { formatTable } from '../../report/table.ts';
import type { StoredTenantSettings, Task, TaskDetail, TaskTypeView, Tenant } from '../sdk/types.ts';

export interface Style {
  bold(text: string): string;
  dim(text: string): string;
  state(state: string, text?: string): string;
}

const wrap = (open: number, close: number) => (text: string) => `\x1b[${open}m${text}\x1b[${close}m`;

const STATE_COLORS: Record<string, number> = {
  QUEUED: 33, // yellow
  DISPATCHED: 36, // cyan
  RUNNING: 34, // blue
  SUCCEEDED: 32, // green
  FAILED: 31, // red
  CANCELLED: 35, // magenta
};

export const plainStyle: Style = { bold: (t) => t, dim: (t) => t, state: (_s, t) => t ?? _s };
export const ansiStyle: Style = {
  bold: wrap(1, 22),
  dim: wrap(2, 22),
  state: (state, text = state) => (STATE_COLORS[state] ? wrap(STATE_COLORS[state]!, 39)(text) : text),
};

/** Visible width, ignoring ANSI escapes. */
export function visibleLength(text: string): number {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: matching ANSI escapes is the point
  return text.replace(/\x1b\[[0-9;?]*[A-Za-z]/g, '').length;
}

export function pad(text: string, width: number): string {
  return text + ' '.repeat(Math.max(0, width - visibleLength(text)));
}

export function padStart(text: string, width: number): string {
  return ' '.repeat(Math.max(0, width - visibleLength(text))) + text;
}

export function truncate(text: string, width: number): string {
  return text.length <= width ? text : `${text.slice(0, Math.max(0, width - 1))}…`;
}

/** `[█████░░░░░]`: fraction clamped to 0–1, with eighths for a smooth edge. */
export function bar(fraction: number, width: number): string {
  const clamped = Number.isFinite(fraction) ? Math.min(1, Math.max(0, fraction)) : 0;
  const eighths = Math.round(clamped * width * 8);
  const full = Math.floor(eighths / 8);
  const partial = eighths % 8;
  const partials = ['', '▏', '▎', '▍', '▌', '▋', '▊', '▉'];
  const body = '█'.repeat(full) + (partial > 0 ? partials[partial] : '');
  return `[${body}${'░'.repeat(Math.max(0, width - full - (partial > 0 ? 1 : 0)))}]`;
}

/** 0.5 → `50%`. */
export const percent = (fraction: number): string => `${Math.round(fraction * 100)}%`;

/** Seconds as `42s`, `3m05s`, `2h10m`. */
export function duration(seconds: number): string {
  const s = Math.max(0, Math.round(seconds));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
  return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`;
}

export function table(headers: readonly string[], rows: readonly (readonly string[])[], style: Style): string {
  const [head = '', ...body] = formatTable(headers, rows, { width: visibleLength }).split('\n');
  return [style.bold(head), ...body].join('\n');
}

const json = (value: unknown) => JSON.stringify(value);

export function formatTask(task: Task | TaskDetail, style: Style): string {
  const lines: [string, string][] = [
    ['task', task.taskId],
    ['state', style.state(task.state) + (task.cancelRequested ? ' (cancel requested)' : '')],
    ['tenant', task.tenantId],
    ['type', task.type],
    ['priority', task.priority],
    ['attempts', `${task.attempts} of ${task.maxAttempts}`],
    [
      'runtime',
      `${task.runtime} (${task.resources.vcpu} vCPU, ${task.resources.memoryMiB} MiB, timeout ${task.timeoutSeconds}s)`,
    ],
    ['payload', json(task.payload)],
  ];
  if (task.idempotencyKey) lines.push(['idempotency', task.idempotencyKey]);
  if (task.dependsOn) lines.push(['depends on', task.dependsOn.join(', ')]);
  // Held: out of the queue until these succeed (one that fails cancels it, DEPENDENCY_FAILED).
  if (task.waitingOn) lines.push(['held on', `${task.waitingOn.join(', ')} (not yet SUCCEEDED)`]);
  lines.push(['submitted', task.submittedAt]);
  if (task.runAt !== task.submittedAt) lines.push(['run at', task.runAt]);
  if (task.startedAt) lines.push(['started', task.startedAt]);
  if (task.finishedAt) lines.push(['finished', task.finishedAt]);
  if (task.result !== null && task.result !== undefined) lines.push(['result', json(task.result)]);
  if (task.error) {
    const code = task.error.code && task.error.code !== task.error.name ? ` [${task.error.code}]` : '';
    lines.push([
      'error',
      `${task.error.name}${code}: ${task.error.message}${task.error.retryable ? '' : ' (not retryable)'}`,
    ]);
  }
  const wait = 'wait' in task ? task.wait : undefined;
  if (wait) {
    // On the pool's pace or headroom the guarantee without that assumption is shown beside it (wait.worstCaseSeconds).
    const worstCase =
      wait.worstCaseSeconds === undefined
        ? ''
        : wait.assumedHeadroom
          ? ` while the pool has a free slot (${duration(Math.ceil(wait.worstCaseSeconds))} however full it gets)`
          : ` at the pool's pace (${duration(Math.ceil(wait.worstCaseSeconds))} however slowly slots free)`;
    // A bound is shown rounded up, never down.
    const bound =
      wait.maxWaitSeconds === null
        ? `no bound: ${wait.noBound?.message ?? 'none given'}`
        : `at most ${duration(Math.ceil(wait.maxWaitSeconds))} more${worstCase}`;
    lines.push(['waiting', `${wait.reason}: ${wait.message}`]);
    lines.push(['', `waited ${duration(wait.waitedSeconds)}, competing as ${wait.effectiveTier}, ${bound}`]);
  }
  return lines.map(([label, value]) => `${style.dim(pad(label, 12))}${value}`).join('\n');
}

export function formatTaskRows(tasks: readonly Task[], style: Style, now = Date.now()): string {
  if (tasks.length === 0) return style.dim('(no tasks)');
  return table(
    ['TASK', 'STATE', 'TYPE', 'PRIORITY', 'ATTEMPTS', 'SUBMITTED'],
    tasks.map((task) => [
      task.taskId,
      style.state(task.state),
      task.type,
      task.priority,
      `${task.attempts}/${task.maxAttempts}`,
      `${duration((now - Date.parse(task.submittedAt)) / 1000)} ago`,
    ]),
    style,
  );
}

export function formatTenant(tenant: Tenant, style: Style): string {
  const active = tenant.counts.running + tenant.counts.dispatched;
  const lines: [string, string][] = [
    ['tenant', tenant.tenantId],
    ['weight', `${tenant.weight} (${tenant.source})`],
    ['quota', `${bar(active / tenant.maxConcurrency, 20)} ${active} of ${tenant.maxConcurrency} running`],
    ['queued', `${tenant.counts.queued}${tenant.counts.queuedExact === false ? '+' : ''}`],
    ['start rate', startRateText(tenant)],
    ['paused', pauseText(tenant)],
  ];
  if (tenant.share) {
    lines.push([
      'share',
      `${bar(tenant.share.dominantShare, 20)} ${percent(tenant.share.dominantShare)} held, entitled to ${percent(tenant.share.entitlement)}`,
    ]);
  }
  return lines.map(([label, value]) => `${style.dim(pad(label, 12))}${value}`).join('\n');
}

export function formatStoredTenant(tenant: StoredTenantSettings, style: Style): string {
  return [
    `${style.dim(pad('tenant', 12))}${tenant.tenantId}`,
    `${style.dim(pad('weight', 12))}${tenant.weight}`,
    `${style.dim(pad('quota', 12))}${tenant.maxConcurrency} running at most`,
    `${style.dim(pad('start rate', 12))}${startRateText(tenant)}`,
    `${style.dim(pad('paused', 12))}${pauseText(tenant)}`,
    `${style.dim(pad('updated', 12))}${tenant.updatedAt}`,
  ].join('\n');
}

type FlowSettings = Pick<Tenant, 'maxStartsPerSecond' | 'burst' | 'paused' | 'pausedBy' | 'pausedAt'>;

function startRateText(settings: FlowSettings): string {
  if (settings.maxStartsPerSecond === undefined) return 'unlimited';
  const burst = settings.burst ?? Math.max(1, Math.ceil(settings.maxStartsPerSecond));
  return `${settings.maxStartsPerSecond} starts/s, burst ${burst}`;
}

function pauseText(settings: FlowSettings): string {
  if (!settings.paused) return 'no';
  return `yes${settings.pausedBy ? `, by ${settings.pausedBy}` : ''}${settings.pausedAt ? ` at ${settings.pausedAt}` : ''}`;
}

export function formatTaskTypes(types: readonly TaskTypeView[], style: Style): string {
  if (types.length === 0) return style.dim('(no task types)');
  return table(
    ['TYPE', 'PAUSED', 'BY', 'SINCE', 'PARKED'],
    types.map((type) => [
      type.type,
      type.paused ? 'yes' : 'no',
      type.paused ? (type.pausedBy ?? '') : '',
      type.paused ? (type.pausedAt ?? '') : '',
      String(type.counts.parked),
    ]),
    style,
  );
}
