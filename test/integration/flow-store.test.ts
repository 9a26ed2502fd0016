/**
 * The flow-control records against the emulators when a write lands and its answer is lost
 * (`ambiguous`: the request applied, then the caller sees an error): a grant is not taken twice,
 * a key's place is held once, and a release whose answer was lost still released.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TaskTypeRegistry } from '../../runtime/task-types/define.ts';
import { type FaultKind, faultyComponent, type SdkCall } from '../helpers/faults.ts';
import { startTestServices, type TestServices } from '../helpers/services.ts';

let services: TestServices;
beforeAll(async () => {
  services = await startTestServices();
});
afterAll(async () => {
  await services.stop();
});

/** A component whose writes to items with this key prefix land and lose their answer, `times` times. */
function losing(prefix: string, times: number) {
  let left = times;
  return faultyComponent({
    name: `losing-${prefix}`,
    emulators: services.emulators,
    config: services.config,
    registry: new TaskTypeRegistry([]),
    now: () => new Date(),
    decide: (call: SdkCall): FaultKind | undefined => {
      const pk =
        (call.input.Item as { pk?: string } | undefined)?.pk ?? (call.input.Key as { pk?: string } | undefined)?.pk;
      if (
        (call.command === 'PutItemCommand' || call.command === 'DeleteItemCommand') &&
        pk?.startsWith(prefix) &&
        left > 0
      ) {
        left--;
        return 'ambiguous';
      }
      return undefined;
    },
  });
}

describe('Class: FlowStore (lost answers)', () => {
  it('grants starts once when the write landed and its answer was lost', async () => {
    // Prepare: 1 start a second, burst 3
    const component = losing('rate#', 1);
    const rate = { perSecond: 1, burst: 3 };
    const nowMs = Date.parse('2026-12-02T08:00:00.000Z');
    // Act
    const first = await component.control.flow.grant('lost', rate, nowMs, 2);
    const second = await services.control.flow.grant('lost', rate, nowMs, 5);
    // Assess: the lost write counted as ours (2 granted), so only 1 of the burst is left
    expect(first.granted).toBe(2);
    expect(second.granted).toBe(1);
    await component.dispose();
  });

  it('holds one place for an attempt whose acquire answer was lost, and takes it again idempotently', async () => {
    // Prepare
    const component = losing('ckey#', 1);
    const none = async () => [];
    const nowMs = Date.now();
    // Act
    const lost = await component.control.flow
      .acquireKey('shop', 'store-1', 1, 'tsk_a', 1, nowMs, none)
      .then((outcome) => outcome.acquired)
      .catch(() => 'unknown');
    const again = await services.control.flow.acquireKey('shop', 'store-1', 1, 'tsk_a', 1, nowMs, none);
    const other = await services.control.flow.acquireKey('shop', 'store-1', 1, 'tsk_b', 1, nowMs, none);
    // Assess
    expect(lost).toBe('unknown');
    expect(again).toEqual({ acquired: true, holders: 1 });
    expect(other).toEqual({ acquired: false, holders: 1 });
    await component.dispose();
  });

  it('releases a place whose release answer was lost, and a stale holder is removed when the key is full', async () => {
    // Prepare
    const component = losing('ckey#', 1);
    const nowMs = Date.now();
    await services.control.flow.acquireKey('shop', 'store-2', 1, 'tsk_c', 1, nowMs, async () => []);
    // Act
    await component.control.flow.releaseKey('shop', 'store-2', 'tsk_c', 1).catch(() => undefined);
    const holders = await services.control.flow.keyHolders('shop', 'store-2');
    await services.control.flow.acquireKey('shop', 'store-2', 1, 'tsk_d', 1, nowMs, async () => []);
    const repaired = await services.control.flow.acquireKey('shop', 'store-2', 1, 'tsk_e', 1, nowMs, async (h) =>
      Object.keys(h),
    );
    // Assess
    expect(holders).toEqual({});
    expect(repaired).toEqual({ acquired: true, holders: 1 });
    expect(Object.keys(await services.control.flow.keyHolders('shop', 'store-2'))).toEqual(['tsk_e']);
    await component.dispose();
  });
});
