/**
 * The local runtime's log lines (local/console-logger.ts): LOG_LEVEL, and the per-task lines
 * thinned out under load (issue 28: 5,000 tasks wrote 20,000 lines).
 */
import { describe, expect, it } from 'vitest';
import {
  consoleLogger,
  type LogLevel,
  LogLevelError,
  logLevelFrom,
  TASK_LINES_PER_SECOND,
  taskLineThrottle,
} from '../../local/console-logger.ts';

function recording(level: LogLevel) {
  const lines: string[] = [];
  const logger = consoleLogger({ level, write: (line) => lines.push(line.slice(13)) });
  return { logger, lines };
}

describe('Function: logLevelFrom', () => {
  it.each([
    [undefined, 'info'],
    ['', 'info'],
    ['DEBUG', 'debug'],
    [' warn ', 'warn'],
    ['silent', 'silent'],
  ])('reads %j as %s', (value, level) => {
    expect(logLevelFrom(value)).toBe(level);
  });

  it('refuses anything else, naming the levels', () => {
    expect(() => logLevelFrom('verbose')).toThrow(new LogLevelError('verbose').message);
    expect(new LogLevelError('verbose').message).toBe(
      'LOG_LEVEL must be one of debug, info, warn, error, silent, got "verbose".',
    );
  });
});

describe('Function: consoleLogger', () => {
  it('prints each level at or above its own', () => {
    // Prepare
    const { logger, lines } = recording('warn');

    // Act
    logger.debug?.('d');
    logger.info('i', { taskId: 't1' });
    logger.warn('w', { n: 2, skipped: undefined });
    logger.error('e');

    // Assess
    expect(lines).toEqual(['WARN  w n=2', 'ERROR e']);
  });

  it('prints debug lines only at debug, and nothing when silent', () => {
    const debug = recording('debug');
    const silent = recording('silent');
    for (const { logger } of [debug, silent]) {
      logger.debug?.('task DISPATCHED', { taskId: 't1' });
      logger.error('boom');
    }
    expect(debug.lines).toEqual(['DEBUG task DISPATCHED taskId=t1', 'ERROR boom']);
    expect(silent.lines).toEqual([]);
  });
});

describe('Function: taskLineThrottle', () => {
  it('shows the first lines of each second and one count line for the rest', () => {
    // Prepare: 5,000 tasks finishing within two seconds.
    const { logger, lines } = recording('info');
    let nowMs = 10_000;
    const throttled = taskLineThrottle(logger, { nowMs: () => nowMs });

    // Act
    for (let i = 0; i < 2_500; i++) throttled.info('task SUCCEEDED', { taskId: `a${i}` });
    throttled.info('task CANCELLED', { taskId: 'c' });
    nowMs += 1_000;
    for (let i = 0; i < 2_499; i++) throttled.info('task SUCCEEDED', { taskId: `b${i}` });
    throttled.warn('task FAILED', { taskId: 'f' });
    throttled.flush();

    // Assess
    expect(lines).toHaveLength(2 * TASK_LINES_PER_SECOND + 3);
    expect(lines[TASK_LINES_PER_SECOND]).toBe(
      'INFO  2491 more task lines not shown (2490 SUCCEEDED, 1 CANCELLED); LOG_LEVEL=debug shows every state change',
    );
    expect(lines).toContain('WARN  task FAILED taskId=f');
    expect(lines.at(-1)).toBe(
      'INFO  2489 more task lines not shown (2489 SUCCEEDED); LOG_LEVEL=debug shows every state change',
    );
  });

  it('passes debug through and prints no count line when nothing was held back', () => {
    const { logger, lines } = recording('debug');
    const throttled = taskLineThrottle(logger, { nowMs: () => 0 });

    throttled.debug?.('task RUNNING');
    throttled.info('task SUCCEEDED');
    throttled.flush();

    expect(lines).toEqual(['DEBUG task RUNNING', 'INFO  task SUCCEEDED']);
  });
});
