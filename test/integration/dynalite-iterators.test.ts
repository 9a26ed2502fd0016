/**
 * dynalite reads every Query and Scan through a LevelDB iterator and never closed it (issue 15):
 * each open iterator pins the files it read, so the local runtime's memory and data folder grew
 * with every task. local/dynalite-iterators.ts gives the iterators the `return()` dynalite
 * calls when its stream ends. Here: after Queries and Scans (whole, paged and cut short by a
 * Limit), every iterator they opened has been closed.
 */
import { createRequire } from 'node:module';
import { PutCommand, QueryCommand, ScanCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Emulators, startEmulators } from '../../local/emulators.ts';

interface Iterator {
  next(...args: unknown[]): Promise<unknown>;
  nextv(...args: unknown[]): Promise<unknown>;
  close(): Promise<void>;
}

// The iterator base class of the abstract-level copy dynalite's `level` uses.
const fromDynalite = createRequire(createRequire(import.meta.url).resolve('dynalite'));
const { AbstractIterator } = createRequire(fromDynalite.resolve('classic-level'))('abstract-level') as {
  AbstractIterator: { prototype: Iterator };
};
const iteratorBase = Object.getPrototypeOf(AbstractIterator.prototype) as Iterator;
const original = { next: iteratorBase.next, nextv: iteratorBase.nextv, close: iteratorBase.close };

/** Iterators that have been read and not closed. */
const open = new Set<Iterator>();
let emulators: Emulators;

beforeAll(async () => {
  iteratorBase.next = function next(this: Iterator, ...args: unknown[]) {
    open.add(this);
    return original.next.apply(this, args);
  };
  iteratorBase.nextv = function nextv(this: Iterator, ...args: unknown[]) {
    open.add(this);
    return original.nextv.apply(this, args);
  };
  iteratorBase.close = function close(this: Iterator) {
    open.delete(this);
    return original.close.apply(this);
  };
  emulators = await startEmulators();
});
afterAll(async () => {
  await emulators.stop();
  Object.assign(iteratorBase, original);
});

describe('Function: closeDynaliteIterators', () => {
  it('leaves no LevelDB iterator open after Queries and Scans', async () => {
    // Prepare
    const tableName = emulators.tables.tasks!;
    const { documents } = emulators.clients;
    for (let n = 0; n < 5; n++) {
      await documents.send(
        new PutCommand({
          TableName: tableName,
          Item: {
            taskId: `t-${n}`,
            tenantId: 'acme',
            tenantState: 'acme#SUCCEEDED',
            listKey: `k-${n}`,
            state: 'SUCCEEDED',
          },
        }),
      );
    }

    // Act
    const scanned = await documents.send(new ScanCommand({ TableName: tableName }));
    const firstPage = await documents.send(new ScanCommand({ TableName: tableName, Limit: 2 }));
    const queried = await documents.send(
      new QueryCommand({
        TableName: tableName,
        IndexName: 'byTenantState',
        KeyConditionExpression: 'tenantState = :key',
        ExpressionAttributeValues: { ':key': 'acme#SUCCEEDED' },
        Limit: 3,
      }),
    );
    // The streams close their iterator once the response is written: let those callbacks run.
    await new Promise((resolve) => setImmediate(resolve));

    // Assess
    expect(scanned.Count).toBe(5);
    expect(firstPage.Count).toBe(2);
    expect(queried.Count).toBe(3);
    expect(open.size).toBe(0);
  });
});
