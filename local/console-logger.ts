/**
 * Human-readable log lines for the local runtime: `HH:MM:SS.mmm LEVEL message key=value ...`,
 * filtered by LOG_LEVEL. (Deployed functions log structured JSON through Powertools instead.)
 *
 * What each level shows of a task: `debug` every state change (queued, dispatched, running,
 * finished: four lines a task); `info` (the default) one line when it finishes, at most
 * TASK_LINES_PER_SECOND a second, the others counted in one line a second (`taskLineThrottle`),
 * so a burst of thousands of tasks does not bury the terminal; a failed task is a warning,
 * always shown.
 */
import type { TaskLogger } from '../runtime/core/logger.ts';

export const LOG_LEVELS = ['debug', 'info', 'warn', 'error', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

const LABELS = { debug: 'DEBUG', info: 'INFO ', warn: 'WARN ', error: 'ERROR' } as const;

/** Finished-task lines shown per second at `info`; the rest are counted. */
export const TASK_LINES_PER_SECOND = 10;

/** The level LOG_LEVEL names (any case); unset or empty means `info`. Throws on anything else. */
export function logLevelFrom(value: string | undefined): LogLevel {
  if (value === undefined || value.trim() === '') return 'info';
  const level = value.trim().toLowerCase();
  if (!(LOG_LEVELS as readonly string[]).includes(level)) {
    throw new LogLevelError(value);
  }
  return level as LogLevel;
}

export class LogLevelError extends Error {
  constructor(value: string) {
    super(`LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}, got "${value}".`);
    this.name = 'LogLevelError';
  }
}

export function consoleLogger(
  options: { quiet?: boolean; level?: LogLevel; write?: (line: string) => void } = {},
): TaskLogger & { readonly level: LogLevel } {
  const write = options.write ?? ((line: string) => process.stdout.write(`${line}\n`));
  const level: LogLevel = options.level ?? (options.quiet ? 'warn' : 'info');
  const threshold = LOG_LEVELS.indexOf(level);
  const line = (at: keyof typeof LABELS, message: string, extra?: Record<string, unknown>) => {
    if (LOG_LEVELS.indexOf(at) < threshold) return;
    const time = new Date().toISOString().slice(11, 23);
    const fields = extra
      ? Object.entries(extra)
          .filter(([, v]) => v !== undefined)
          .map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`)
          .join(' ')
      : '';
    write(`${time} ${LABELS[at]} ${message}${fields ? ` ${fields}` : ''}`);
  };
  return {
    level,
    debug: (message, extra) => line('debug', message, extra),
    info: (message, extra) => line('info', message, extra),
    warn: (message, extra) => line('warn', message, extra),
    error: (message, extra) => line('error', message, extra),
  };
}

/**
 * A logger for per-task lines: `info` lines beyond `perSecond` in one second are not printed
 * but counted by message, and the count is printed as one line when the next second begins
 * (or at `flush()`). Other levels pass through. Time is passed in (`nowMs`).
 */
export function taskLineThrottle(
  base: TaskLogger,
  options: { perSecond?: number; nowMs?: () => number } = {},
): TaskLogger & { flush(): void } {
  const perSecond = options.perSecond ?? TASK_LINES_PER_SECOND;
  const nowMs = options.nowMs ?? Date.now;
  let second = -1;
  let shown = 0;
  const hidden = new Map<string, number>();
  const flush = () => {
    if (hidden.size === 0) return;
    const total = [...hidden.values()].reduce((sum, count) => sum + count, 0);
    const byMessage = [...hidden].map(([message, count]) => `${count} ${message.replace(/^task /, '')}`).join(', ');
    hidden.clear();
    base.info(
      `${total} more task line${total === 1 ? '' : 's'} not shown (${byMessage}); LOG_LEVEL=debug shows every state change`,
    );
  };
  return {
    flush,
    ...(base.debug
      ? { debug: (message: string, extra?: Record<string, unknown>) => base.debug?.(message, extra) }
      : {}),
    info(message, extra) {
      const current = Math.floor(nowMs() / 1000);
      if (current !== second) {
        flush();
        second = current;
        shown = 0;
      }
      if (shown < perSecond) {
        shown++;
        base.info(message, extra);
        return;
      }
      hidden.set(message, (hidden.get(message) ?? 0) + 1);
    },
    warn: (message, extra) => base.warn(message, extra),
    error: (message, extra) => base.error(message, extra),
  };
}
