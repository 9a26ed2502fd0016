/**
 * EventBridge Scheduler cron expressions, `cron(minutes hours day-of-month month day-of-week
 * year)`, evaluated locally (the CDK stack hands the same string to EventBridge on AWS).
 * cron-parser does the calendar and time-zone work; this module only maps AWS's dialect onto
 * it: day-of-week 1–7 means SUN–SAT (cron-parser: 0–6), and the sixth field is the year.
 */
import { CronExpressionParser } from 'cron-parser';

export class CronSyntaxError extends Error {
  constructor(expression: string, reason: string) {
    super(`Invalid schedule expression "${expression}": ${reason}`);
    this.name = 'CronSyntaxError';
  }
}

export interface CronSchedule {
  readonly expression: string;
  readonly timezone: string;
  /** The first firing strictly after `after`, or undefined when there is none (years exhausted). */
  nextAfter(after: Date): Date | undefined;
}

export function parseAwsCron(expression: string, timezone = 'UTC'): CronSchedule {
  const match = /^cron\((.+)\)$/.exec(expression.trim());
  if (!match) throw new CronSyntaxError(expression, 'expected cron(minutes hours day-of-month month day-of-week year)');
  const fields = match[1]!.trim().split(/\s+/);
  if (fields.length !== 6) throw new CronSyntaxError(expression, `expected 6 fields, got ${fields.length}`);
  const [minutes, hours, dayOfMonth, month, dayOfWeek, year] = fields as [
    string,
    string,
    string,
    string,
    string,
    string,
  ];
  if (dayOfMonth !== '?' && dayOfWeek !== '?') {
    // EventBridge's own rule: one of the two day fields must be "?".
    throw new CronSyntaxError(expression, 'one of day-of-month and day-of-week must be "?"');
  }
  const years = parseYears(expression, year);
  const standard = [minutes, hours, dayOfMonth, month, toZeroBasedWeekdays(dayOfWeek)].join(' ');
  try {
    // Parse once up front so a bad expression fails at configuration time, not at midnight.
    CronExpressionParser.parse(standard, { tz: timezone, currentDate: new Date(0) });
  } catch (error) {
    throw new CronSyntaxError(expression, (error as Error).message);
  }
  return {
    expression,
    timezone,
    nextAfter(after: Date): Date | undefined {
      const iterator = CronExpressionParser.parse(standard, { tz: timezone, currentDate: after });
      // Skip firings in years the expression excludes (bounded: at most a few years ahead).
      for (let i = 0; i < 5000; i++) {
        const next = iterator.next().toDate();
        if (years === undefined || years.has(next.getUTCFullYear())) return next;
        if (next.getUTCFullYear() > Math.max(...years)) return undefined;
      }
      return undefined;
    },
  };
}

/** AWS numbers weekdays 1 (SUN) … 7 (SAT); cron-parser 0 … 6. Names pass through. */
function toZeroBasedWeekdays(field: string): string {
  if (field === '?' || field === '*') return '*';
  return field.replace(/(^|[,\-/])(\d+)/g, (whole, separator: string, digits: string) => {
    // A step ("*/2") is a count, not a weekday.
    if (separator === '/') return whole;
    const day = Number(digits);
    if (day < 1 || day > 7) throw new CronSyntaxError(field, `day-of-week ${day} is outside 1-7`);
    return `${separator}${day - 1}`;
  });
}

function parseYears(expression: string, field: string): Set<number> | undefined {
  if (field === '*' || field === '?') return undefined;
  const years = new Set<number>();
  for (const part of field.split(',')) {
    const range = /^(\d{4})(?:-(\d{4}))?$/.exec(part);
    if (!range) throw new CronSyntaxError(expression, `year field "${field}" must be *, YYYY, YYYY-YYYY or a list`);
    const from = Number(range[1]);
    const to = Number(range[2] ?? range[1]);
    if (to < from) throw new CronSyntaxError(expression, `year range ${part} is reversed`);
    for (let y = from; y <= to; y++) years.add(y);
  }
  return years;
}
