/**
 * A dependency's dependents live in 16 bucket items (adapters/dependents-store.ts). One item holds
 * at most 11,066 task ids before it is over DynamoDB's 400 KB (about 177,000 dependents of one
 * task, spread evenly). A registration past that used to fail for good (Item size has exceeded the
 * maximum allowed size): the dependent stayed held forever, and the change feed's step for it
 * failed at every retry. A full bucket now continues in pages of its own.
 */
import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BUCKET_MAX_IDS, DEPENDENT_BUCKETS, DependentsStore } from '../../runtime/adapters/dependents-store.ts';
import { taskIdHash } from '../../runtime/adapters/index-keys.ts';
import { TASKS_TABLE } from '../../runtime/infra/resources.ts';
import { startTestServices, type TestServices } from '../helpers/services.ts';

const id = (i: number) => `tsk_${i.toString(16).padStart(32, '0')}`;
/** The first ids from `from` on whose bucket is `bucket`. */
function idsInBucket(bucket: number, count: number, from: number): string[] {
  const ids: string[] = [];
  for (let i = from; ids.length < count; i++) if (taskIdHash(id(i)) % DEPENDENT_BUCKETS === bucket) ids.push(id(i));
  return ids;
}

let services: TestServices;
let store: DependentsStore;
beforeAll(async () => {
  services = await startTestServices();
  store = services.dependencies.dependentsStore;
});
afterAll(async () => {
  await services.stop();
});

describe('DependentsStore at its capacity', () => {
  it('registers a dependent whose bucket is full, and reads and clears every page', async () => {
    const dependencyId = id(1);
    const bucket = 5;
    // A bucket as full as one item may be (11,066 ids: 409,581 bytes).
    const full = idsInBucket(bucket, 11_067, 1_000_000);
    const put = (dependents: string[]) =>
      services.clients.documents.send(
        new PutCommand({
          TableName: services.emulators.tables[TASKS_TABLE.id]!,
          Item: {
            taskId: `dependents#${dependencyId}#${bucket}`,
            dependencyId,
            dependents,
            version: 1,
            expiresAt: 2_000_000_000,
          },
        }),
      );
    // One id more does not fit the item.
    await expect(put(full)).rejects.toThrow(/Item size has exceeded/);
    full.pop();
    await put(full);
    const [late, later] = idsInBucket(bucket, 2, 9_000_000);

    // Before: ValidationException (Item size has exceeded the maximum allowed size).
    await store.add(dependencyId, late!);
    await store.add(dependencyId, later!);
    await store.add(dependencyId, late!); // idempotent: found on its page

    const read = await store.of(dependencyId);
    expect(read.dependents).toHaveLength(11_068);
    expect(read.dependents).toContain(late);
    expect(read.dependents).toContain(later);
    await store.clear(read);
    expect((await store.of(dependencyId)).dependents).toHaveLength(0);
  });

  it('keeps pages of at most BUCKET_MAX_IDS ids', async () => {
    const small = new DependentsStore(
      services.clients.documents,
      services.emulators.tables[TASKS_TABLE.id]!,
      Date.now,
      {
        bucketMaxIds: 3,
      },
    );
    const dependencyId = id(2);
    const ids = idsInBucket(7, 10, 3_000_000);
    for (const dependent of ids) await small.add(dependencyId, dependent);
    for (const dependent of ids.slice(0, 4)) await small.add(dependencyId, dependent);
    const read = await small.of(dependencyId);
    expect(read.dependents).toEqual([...ids].sort());
    expect(read.buckets).toHaveLength(4); // 3 + 3 + 3 + 1
    expect(BUCKET_MAX_IDS).toBeLessThan(11_066);
    // Settled a bucket at a time (as a settle cut short at its time limit does), last page first:
    // what is left is still reached.
    expect(read.buckets.map((bucket) => bucket.key.split('#').slice(2).join('#'))).toEqual(['7#3', '7#2', '7#1', '7']);
    await small.clear({ buckets: read.buckets.slice(0, 2) });
    expect((await small.of(dependencyId)).dependents).toEqual([...ids.slice(0, 6)].sort());
    await small.clear(await small.of(dependencyId));
    expect((await small.of(dependencyId)).dependents).toHaveLength(0);
  });
});
