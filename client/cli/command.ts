/**
 * What every `tasks` command shares: the I/O it is given, its context (parsed flags, output,
 * the API client), usage errors, and the flag readers (node:util parseArgs parses; these
 * coerce and check values, each error naming its flag).
 */
import { readFile } from 'node:fs/promises';
import type { parseArgs } from 'node:util';
import type { SchedulerClient } from '../sdk/client.ts';
import type { Style } from './format.ts';

export interface CliIo {
  /** Standard output; text is written as given (lines end in `\n`). */
  readonly stdout: (text: string) => void;
  readonly stderr: (text: string) => void;
  /** @default process.env */
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** Colours and in-place redraw (`watch`) when true. @default false */
  readonly isTTY?: boolean;
  /** Terminal width (`watch` cuts lines to it); undefined for a pipe or a file. @default no limit */
  readonly columns?: () => number | undefined;
  /** Aborted on Ctrl-C: `watch` and `submit --wait` stop. */
  readonly signal?: AbortSignal;
  /** Where the API is when nothing says otherwise. @default DEFAULT_ENDPOINT */
  readonly defaultEndpoint?: string;
  /** Reads `--payload @file`. @default fs.readFile */
  readonly readFile?: (path: string) => Promise<string>;
}

export const DEFAULT_ENDPOINT = 'http://127.0.0.1:3000';

export class UsageError extends Error {
  readonly command: string | undefined;
  constructor(message: string, command?: string) {
    super(message);
    this.name = 'UsageError';
    this.command = command;
  }
}

export const GLOBAL_OPTIONS = {
  endpoint: { type: 'string' },
  region: { type: 'string' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const;

export const GLOBAL_HELP = `Global options:
  --endpoint URL   API base URL (default $SCHEDULER_ENDPOINT, else the local runtime running on
                   $DATA_DIR (default .data, from its runtime.json), else ${DEFAULT_ENDPOINT});
                   a non-local endpoint is signed with SigV4 using the standard AWS credentials
  --region R       signing region (default: from an execute-api URL, else $AWS_REGION)
  --json           machine-readable output (errors go to stderr as {"error":{...}})
  -h, --help       help for a command`;

export interface Command {
  readonly summary: string;
  readonly usage: string;
  readonly help: string;
  readonly options: NonNullable<Parameters<typeof parseArgs>[0]>['options'];
  run(context: CommandContext): Promise<number>;
}

export interface CommandContext {
  readonly name: string;
  readonly values: Record<string, string | boolean | undefined>;
  readonly positionals: string[];
  readonly json: boolean;
  readonly style: Style;
  readonly io: CliIo;
  client(): SchedulerClient;
  /**
   * When the API did not answer and nothing named it (no --endpoint, no SCHEDULER_ENDPOINT, no
   * local runtime found): how the CLI finds one and how to point it. Otherwise undefined.
   */
  unreachableHint(error: unknown): string | undefined;
  print(value: unknown, human: () => string): void;
}

// Argument helpers: each throws a UsageError naming the flag.

export function str(ctx: CommandContext, flag: string): string | undefined {
  const value = ctx.values[flag];
  return typeof value === 'string' ? value : undefined;
}

export function required(ctx: CommandContext, flag: string): string {
  const value = str(ctx, flag);
  if (value === undefined || value === '') throw new UsageError(`--${flag} is required`, ctx.name);
  return value;
}

export function number(ctx: CommandContext, flag: string): number | undefined {
  const value = str(ctx, flag);
  if (value === undefined) return undefined;
  const parsed = Number(value);
  if (value.trim() === '' || !Number.isFinite(parsed) || parsed <= 0) {
    throw new UsageError(`--${flag} must be a positive number, got "${value}"`, ctx.name);
  }
  return parsed;
}

export function integer(
  ctx: CommandContext,
  flag: string,
  min: number,
  max = Number.MAX_SAFE_INTEGER,
): number | undefined {
  const value = str(ctx, flag);
  if (value === undefined) return undefined;
  if (!/^[0-9]+$/.test(value) || Number(value) < min || Number(value) > max) {
    const range = max === Number.MAX_SAFE_INTEGER ? `>= ${min}` : `${min}-${max}`;
    throw new UsageError(`--${flag} must be an integer ${range}, got "${value}"`, ctx.name);
  }
  return Number(value);
}

export function oneOf(ctx: CommandContext, flag: string, allowed: readonly string[]): string | undefined {
  const value = str(ctx, flag);
  if (value !== undefined && !allowed.includes(value)) {
    throw new UsageError(`--${flag} must be one of ${allowed.join(', ')}, got "${value}"`, ctx.name);
  }
  return value;
}

export async function payloadOf(ctx: CommandContext): Promise<unknown> {
  const raw = str(ctx, 'payload');
  if (raw === undefined) return {};
  let text = raw;
  let source = '--payload';
  if (raw.startsWith('@')) {
    const path = raw.slice(1);
    source = path;
    try {
      text = await (ctx.io.readFile ?? ((p: string) => readFile(p, 'utf8')))(path);
    } catch (error) {
      throw new UsageError(`Cannot read payload file ${path}: ${(error as Error).message}`, ctx.name);
    }
  }
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new UsageError(`${source} is not valid JSON: ${(error as Error).message}`, ctx.name);
  }
}

export function onePositional(ctx: CommandContext, what: string): string {
  const [value, ...extra] = ctx.positionals;
  if (!value) throw new UsageError(`${what} is required`, ctx.name);
  if (extra.length > 0) throw new UsageError(`Unexpected argument "${extra[0]}"`, ctx.name);
  return value;
}

export function noPositionals(ctx: CommandContext): void {
  if (ctx.positionals.length > 0) throw new UsageError(`Unexpected argument "${ctx.positionals[0]}"`, ctx.name);
}
