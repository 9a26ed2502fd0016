/**
 * The command line of `npm run bench` (bench/run.ts): which benchmarks to run, `--quick`,
 * `--tasks N`, and `--help`. A word that is neither a benchmark's name nor the value of a flag
 * is refused: a misspelt name used to be dropped silently, and the whole default suite ran
 * (minutes of it) in place of the one benchmark asked for; `--help` did the same.
 */

/** Flags some benchmark reads with a value after it (bench/*.ts read their own from process.argv). */
const FLAGS_WITH_VALUE = new Set(['--tasks', '--flood', '--pool', '--task-ms', '--step', '--retention']);

export interface BenchArgs {
  readonly help: boolean;
  readonly quick: boolean;
  readonly tasks?: number;
  /** The benchmarks named, in the order given; none: the default suite. */
  readonly named: readonly string[];
}

/** `args` is process.argv.slice(2); `names` the benchmarks bench/run.ts knows. */
export function parseBenchArgs(args: readonly string[], names: readonly string[]): BenchArgs {
  const named: string[] = [];
  let tasks: number | undefined;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (FLAGS_WITH_VALUE.has(arg)) {
      const value = args[++i];
      if (arg === '--tasks') {
        tasks = Number(value);
        if (!(Number.isInteger(tasks) && tasks > 0)) {
          throw new Error(`--tasks wants a positive whole number, not ${value}`);
        }
      }
      continue;
    }
    if (arg.startsWith('-')) continue;
    if (!names.includes(arg)) {
      throw new Error(`no benchmark named ${JSON.stringify(arg)}; the benchmarks: ${names.join(', ')}`);
    }
    named.push(arg);
  }
  return {
    help: args.includes('--help') || args.includes('-h'),
    quick: args.includes('--quick'),
    ...(tasks === undefined ? {} : { tasks }),
    named,
  };
}
