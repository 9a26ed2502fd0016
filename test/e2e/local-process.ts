/**
 * `npm start` as a child process (the same command line as package.json's start script), for
 * tests of what a user sees: its output, its exit, its sockets.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';

export interface LocalProcess {
  readonly child: ChildProcess;
  output(): string;
  /** Resolves with the exit code (or 128 + signal number), whenever it exits. */
  readonly exited: Promise<number>;
  /** Waits until `pattern` appears in the output; fails if the process exits first. */
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<RegExpMatchArray>;
  kill(signal?: NodeJS.Signals): void;
}

const SIGNALS: Record<string, number> = { SIGINT: 2, SIGKILL: 9, SIGTERM: 15 };

export function spawnLocal(options: { env?: Record<string, string>; args?: string[] } = {}): LocalProcess {
  const child = spawn(
    process.execPath,
    [
      '--experimental-strip-types',
      '--experimental-sqlite',
      '--no-warnings=ExperimentalWarning',
      'bin/local.ts',
      ...(options.args ?? []),
    ],
    {
      cwd: process.cwd(),
      env: { ...process.env, PORT: '0', ...options.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let text = '';
  child.stdout!.on('data', (chunk: Buffer) => {
    text += chunk.toString();
  });
  child.stderr!.on('data', (chunk: Buffer) => {
    text += chunk.toString();
  });
  const exited = new Promise<number>((resolve) =>
    child.once('exit', (code, signal) => resolve(code ?? 128 + (SIGNALS[signal ?? ''] ?? 0))),
  );
  let done = false;
  void exited.then(() => {
    done = true;
  });
  return {
    child,
    output: () => text,
    exited,
    async waitFor(pattern, timeoutMs = 60_000) {
      const deadline = Date.now() + timeoutMs;
      while (Date.now() < deadline) {
        const match = text.match(pattern);
        if (match) return match;
        if (done) throw new Error(`exited before ${pattern}:\n${text}`);
        await sleep(50);
      }
      throw new Error(`no ${pattern} within ${timeoutMs} ms:\n${text}`);
    },
    kill(signal = 'SIGTERM') {
      if (!done) child.kill(signal);
    },
  };
}

/** Starts and waits for "scheduler running at URL". */
export async function startLocal(
  options: { env?: Record<string, string>; args?: string[]; startTimeoutMs?: number } = {},
) {
  const local = spawnLocal(options);
  const [, url] = await local.waitFor(/scheduler running at (http:\/\/\S+)/, options.startTimeoutMs);
  return { ...local, url: url! };
}

export interface ListeningSocket {
  readonly address: string;
  readonly port: number;
}

/** TCP sockets listening in process `pid` (Linux /proc): its socket inodes matched to the kernel's tables. */
export function listeningSockets(pid: number): ListeningSocket[] {
  const inodes = new Set<string>();
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      const match = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
      if (match) inodes.add(match[1]!);
    } catch {
      // closed meanwhile
    }
  }
  const sockets: ListeningSocket[] = [];
  for (const table of ['tcp', 'tcp6'] as const) {
    for (const line of readFileSync(`/proc/${pid}/net/${table}`, 'utf8').split('\n').slice(1)) {
      const fields = line.trim().split(/\s+/);
      // local_address is fields[1], st is fields[3] (0A = LISTEN), inode is fields[9].
      if (fields.length < 10 || fields[3] !== '0A' || !inodes.has(fields[9]!)) continue;
      const [hex, port] = fields[1]!.split(':');
      sockets.push({ address: decodeAddress(hex!), port: Number.parseInt(port!, 16) });
    }
  }
  return sockets;
}

function decodeAddress(hex: string): string {
  if (hex.length === 8) {
    // IPv4, little-endian
    return [3, 2, 1, 0].map((i) => Number.parseInt(hex.slice(i * 2, i * 2 + 2), 16)).join('.');
  }
  // IPv6: four little-endian 32-bit words
  const bytes: number[] = [];
  for (let word = 0; word < 4; word++) {
    const chunk = hex.slice(word * 8, word * 8 + 8);
    for (const i of [3, 2, 1, 0]) bytes.push(Number.parseInt(chunk.slice(i * 2, i * 2 + 2), 16));
  }
  const groups: string[] = [];
  for (let i = 0; i < 16; i += 2) groups.push(((bytes[i]! << 8) | bytes[i + 1]!).toString(16));
  const full = groups.join(':');
  return full === '0:0:0:0:0:0:0:0' ? '::' : full === '0:0:0:0:0:0:0:1' ? '::1' : full;
}
