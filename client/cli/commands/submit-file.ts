/**
 * `tasks submit --file tasks.ndjson`: every line a task (a POST /v1/tasks body), submitted in
 * batch requests of up to 1,000 (SchedulerClient.submitBatch), with a progress bar on a terminal
 * and a plain line per request otherwise. Results keep the file's order; a refused line is named
 * by its number.
 */
import { readFile } from 'node:fs/promises';
import type { SubmitTaskInput } from '../../sdk/types.ts';
import { type CommandContext, integer, str, UsageError } from '../command.ts';

/** Parse NDJSON: one JSON object a line (blank lines skipped); `defaults` fill what a line leaves out. */
export function parseTaskLines(
  text: string,
  source: string,
  defaults: Partial<SubmitTaskInput>,
  command: string,
): { tasks: SubmitTaskInput[]; lines: number[] } {
  const tasks: SubmitTaskInput[] = [];
  const lines: number[] = [];
  text.split('\n').forEach((line, i) => {
    if (line.trim() === '') return;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch (error) {
      throw new UsageError(`${source}:${i + 1} is not valid JSON: ${(error as Error).message}`, command);
    }
    if (typeof value !== 'object' || value === null || Array.isArray(value)) {
      throw new UsageError(`${source}:${i + 1} is not a JSON object (a task)`, command);
    }
    tasks.push({ ...defaults, ...(value as object) } as SubmitTaskInput);
    lines.push(i + 1);
  });
  if (tasks.length === 0) throw new UsageError(`${source} holds no task`, command);
  return { tasks, lines };
}

/** `[#######.............]  350/1000` for a terminal; a plain line otherwise. */
export function progressLine(done: number, total: number, tty: boolean): string {
  if (!tty) return `submitted ${done}/${total}\n`;
  const width = 30;
  const filled = Math.round((width * done) / total);
  return `\r[${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${String(done).padStart(String(total).length)}/${total}`;
}

export async function submitFile(ctx: CommandContext, path: string): Promise<number> {
  let text: string;
  try {
    text = await (ctx.io.readFile ?? ((p: string) => readFile(p, 'utf8')))(path);
  } catch (error) {
    throw new UsageError(`Cannot read ${path}: ${(error as Error).message}`, ctx.name);
  }
  const defaults: Partial<SubmitTaskInput> = {
    ...(str(ctx, 'tenant') === undefined ? {} : { tenantId: str(ctx, 'tenant')! }),
    ...(str(ctx, 'type') === undefined ? {} : { type: str(ctx, 'type')! }),
  };
  const { tasks, lines } = parseTaskLines(text, path, defaults, ctx.name);
  const thenText = str(ctx, 'then');
  let then: SubmitTaskInput | undefined;
  if (thenText !== undefined) {
    const raw = thenText.startsWith('@')
      ? await (ctx.io.readFile ?? ((p: string) => readFile(p, 'utf8')))(thenText.slice(1))
      : thenText;
    try {
      then = { ...defaults, ...(JSON.parse(raw) as object) } as SubmitTaskInput;
    } catch (error) {
      throw new UsageError(`--then is not valid JSON: ${(error as Error).message}`, ctx.name);
    }
  }
  const tty = ctx.io.isTTY === true && !ctx.json;
  const result = await ctx.client().submitBatch(tasks, {
    ...(then ? { thenTask: then } : {}),
    idempotencyKey: str(ctx, 'idempotency-key'),
    chunkSize: integer(ctx, 'chunk', 1) ?? 1000,
    signal: ctx.io.signal,
    onProgress: ctx.json ? undefined : (done, total) => ctx.io.stderr(progressLine(done, total, tty)),
  });
  if (tty) ctx.io.stderr('\n');
  const refused = result.results.flatMap((item, i) => ('error' in item ? [{ line: lines[i]!, ...item.error }] : []));
  const created = result.results.filter((item) => 'created' in item && item.created).length;
  ctx.print(result, () =>
    [
      result.batches.length === 0
        ? `No batch: all ${tasks.length} tasks were refused, nothing was written${then ? ' (--then not submitted)' : ''}`
        : `Submitted ${tasks.length} tasks in ${result.batches.length} batch${result.batches.length === 1 ? '' : 'es'} (${result.batches.map((b) => b.batchId).join(', ')}): ${created} created, ${tasks.length - created - refused.length} already there, ${refused.length} refused`,
      ...refused.map((item) => `  line ${item.line}: ${item.code}: ${item.message}`),
    ].join('\n'),
  );
  return refused.length > 0 ? 1 : 0;
}
