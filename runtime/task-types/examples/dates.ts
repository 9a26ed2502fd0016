/**
 * Calendar dates as the examples store them: `YYYY-MM-DD` strings, compared and stepped in UTC
 * so the result never depends on the worker's time zone.
 */
import { z } from 'zod';

const DAY_MS = 86_400_000;

export function isCalendarDate(value: string): boolean {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(value)) return false;
  const date = new Date(`${value}T00:00:00Z`);
  // Round-trip rejects 2026-02-30 and the like, which Date would roll over.
  return !Number.isNaN(date.getTime()) && date.toISOString().slice(0, 10) === value;
}

export function addDays(date: string, days: number): string {
  return new Date(Date.parse(`${date}T00:00:00Z`) + days * DAY_MS).toISOString().slice(0, 10);
}

export function isMonday(date: string): boolean {
  return new Date(`${date}T00:00:00Z`).getUTCDay() === 1;
}

export const calendarDate = z.string().refine(isCalendarDate, 'must be a calendar date YYYY-MM-DD');
