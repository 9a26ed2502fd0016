/**
 * Closes the LevelDB iterators dynalite opens for every Query and Scan.
 *
 * dynalite (4.x) turns `level`'s iterators into Node streams whose `destroy` closes the iterator
 * by calling `iterator.return()`, the async-iterator method; abstract-level 3's iterators have
 * `close()` and no `return()`, and do not close themselves at their end. So every Query and Scan
 * left a native iterator open for the life of the process, and each open iterator pins the LevelDB
 * version it read: obsolete table files were never deleted, stayed memory-mapped, and the local
 * runtime's RSS and data folder grew with every task (issue 15: 2.2 GB RSS and a 1.0 GB folder
 * after ~28,000 tasks; a 1,500-task `bench/local-memory.ts --store-only` run opened 30 iterators
 * and closed none).
 *
 * The fix gives the iterators the `return()` dynalite calls, as an alias of their own `close()`:
 * no behaviour of either library changes beyond that, and the streams close their iterator when
 * they end (Readable's autoDestroy) or are cut short (a Query's Limit). It is installed on the
 * abstract-level copy that dynalite's `level` resolves, and only if that copy lacks `return()`,
 * so a fixed release of either library makes it a no-op.
 */
import { createRequire } from 'node:module';

interface ClosableIterator {
  close(): Promise<void>;
  return?: () => Promise<IteratorReturnResult<undefined>>;
}

let installed = false;

/** Idempotent; call before dynalite opens its store. Returns whether the alias was added now. */
export function closeDynaliteIterators(): boolean {
  if (installed) return false;
  installed = true;
  // Resolve abstract-level as classic-level (dynalite's `level` on disk) sees it.
  const fromDynalite = createRequire(createRequire(import.meta.url).resolve('dynalite'));
  const fromClassicLevel = createRequire(fromDynalite.resolve('classic-level'));
  const { AbstractIterator } = fromClassicLevel('abstract-level') as {
    AbstractIterator: { prototype: ClosableIterator };
  };
  // The common base of entry, key and value iterators (`close()` is defined there).
  const base = Object.getPrototypeOf(AbstractIterator.prototype) as ClosableIterator;
  if (typeof base.return === 'function') return false;
  Object.defineProperty(base, 'return', {
    configurable: true,
    writable: true,
    value: async function closeOnReturn(this: ClosableIterator) {
      await this.close();
      return { done: true, value: undefined };
    },
  });
  return true;
}
