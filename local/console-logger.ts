/**
 * Human-readable log lines for the local runtime: `HH:MM:SS.mmm LEVEL message key=value ...`.
 * (Deployed functions log structured JSON through Powertools instead.)
 */
import type { TaskLogger } from '../runtime/core/logger.ts';

const LEVELS = { info: 'INFO ', warn: 'WARN ', error: 'ERROR' } as const;

export function consoleLogger(options: { quiet?: boolean; write?: (line: string) => void } = {}): TaskLogger {
  const write = options.write ?? ((line: string) => process.stdout.write(`${line}\n`));
  const line = (level: keyof typeof LEVELS, message: string, extra?: Record<string, unknown>) => {
    if (options.quiet && level === 'info') return;
    const time = new Date().toISOString().slice(11, 23);
    const fields = extra
      ? Object.entries(extra)
          .filter(([, v]) => v !== undefined)
          .map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`)
          .join(' ')
      : '';
    write(`${time} ${LEVELS[level]} ${message}${fields ? ` ${fields}` : ''}`);
  };
  return {
    info: (message, extra) => line('info', message, extra),
    warn: (message, extra) => line('warn', message, extra),
    error: (message, extra) => line('error', message, extra),
  };
}
