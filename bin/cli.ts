#!/usr/bin/env node
/**
 * `tasks`: the command line (`npx tasks --help`, or `npm run cli -- --help`). The logic is in
 * client/cli/run.ts; this file only connects it to the process.
 */
import { runCli } from '../client/cli/run.ts';

// `tasks list --all --json | head`: the reader has gone, nothing is left to say; end quietly
// (as a Unix tool killed by SIGPIPE would) instead of an unhandled EPIPE with a stack trace.
for (const stream of [process.stdout, process.stderr]) {
  stream.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code === 'EPIPE') process.exit(0);
    throw error;
  });
}

const stopping = new AbortController();
// First Ctrl-C stops `watch` / `submit --wait` cleanly (cursor restored); a second one exits.
// `tasks dev` handles Ctrl-C itself, as `npm start` does (local/start.ts).
if (process.argv[2] !== 'dev') {
  process.on('SIGINT', () => {
    if (stopping.signal.aborted) process.exit(130);
    stopping.abort(new Error('interrupted'));
  });
}

const code = await runCli(process.argv.slice(2), {
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
  env: process.env,
  isTTY: process.stdout.isTTY === true,
  // A terminal's width; none for a pipe or a file, whose lines are kept whole (`watch --once > f`).
  columns: () => (process.stdout.isTTY ? process.stdout.columns || 100 : undefined),
  signal: stopping.signal,
});
process.exitCode = code;
