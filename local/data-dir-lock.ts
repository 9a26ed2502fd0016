/**
 * One local runtime per data directory. Two processes on one DynamoDB (LevelDB) and SQS (SQLite)
 * store would corrupt it; LevelDB's own lock stops the second one only after it has started
 * repairing indexes, with a LEVEL_LOCKED stack trace. This lock is taken first and says who
 * holds it. It is a file holding the owner's pid: a process killed with -9 leaves it behind, and
 * the next start takes it over because that pid is gone.
 */
import { closeSync, mkdirSync, openSync, readFileSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';

const LOCK_FILE = 'runtime.pid';

/** Another live process runs the local runtime on this data directory. */
export class DataDirInUseError extends Error {
  readonly dataDir: string;
  readonly pid: number | undefined;

  constructor(dataDir: string, pid: number | undefined, options?: { cause?: unknown }) {
    super(
      `DATA_DIR ${dataDir} is in use by another npm start${pid ? ` (pid ${pid})` : ''}: stop it, or set DATA_DIR to another folder.`,
      options,
    );
    this.name = 'DataDirInUseError';
    this.dataDir = dataDir;
    this.pid = pid;
  }
}

export interface DataDirLock {
  release(): void;
  /**
   * Set when the lock was left by a process that is gone (killed, crashed, a second Ctrl-C):
   * the previous run did not stop cleanly, and whatever it held on this data is abandoned.
   */
  readonly abandonedBy?: { readonly pid: number | undefined };
}

export function lockDataDir(dataDir: string): DataDirLock {
  mkdirSync(dataDir, { recursive: true });
  const path = join(dataDir, LOCK_FILE);
  let abandonedBy: { pid: number | undefined } | undefined;
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fd = openSync(path, 'wx');
      writeSync(fd, `${process.pid}\n`);
      closeSync(fd);
      return { release: () => releaseIfOurs(path), ...(abandonedBy ? { abandonedBy } : {}) };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    const holder = readPid(path);
    if (holder !== undefined && holder !== process.pid && isAlive(holder)) throw new DataDirInUseError(dataDir, holder);
    // Left by a process that is gone (our own pid: an earlier process that had it): take it over.
    abandonedBy = { pid: holder };
    rmSync(path, { force: true });
  }
  throw new DataDirInUseError(dataDir, readPid(path));
}

/** LevelDB's lock, met when the holder runs in another pid namespace (a container) or raced us. */
export function isLevelLocked(error: unknown): boolean {
  for (let e = error as { code?: unknown; cause?: unknown } | undefined; e; e = e.cause as typeof e) {
    if (e.code === 'LEVEL_LOCKED') return true;
  }
  return false;
}

function releaseIfOurs(path: string): void {
  if (readPid(path) === process.pid) rmSync(path, { force: true });
}

function readPid(path: string): number | undefined {
  try {
    const pid = Number.parseInt(readFileSync(path, 'utf8'), 10);
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
