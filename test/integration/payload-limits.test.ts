/**
 * The payload limit (MAX_PAYLOAD_BYTES) holds for what is stored, not only for what was sent: a
 * task type's schema may add defaults or transform the payload, and the parsed payload is what
 * the task item keeps. Bigger than the limit, the task would crowd out its result (or, past
 * 400 KB, the create write itself fails: a 500).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { MAX_PAYLOAD_BYTES } from '../../runtime/core/storable.ts';
import { defineTaskType, TaskTypeRegistry } from '../../runtime/task-types/define.ts';
import { DEMO_TASK_TYPES } from '../../runtime/task-types/demo.ts';
import { startTestServices, type TestServices } from '../helpers/services.ts';

/** Pads its payload to `size` characters: what a schema default or transform can do. */
const padded = defineTaskType({
  type: 'test.padded',
  description: 'Pads its payload',
  payload: z.object({ size: z.number().int() }).transform(({ size }) => ({ size, pad: 'p'.repeat(size) })),
  async handler() {
    return null;
  },
});

let services: TestServices;
beforeAll(async () => {
  services = await startTestServices({ registry: new TaskTypeRegistry([...DEMO_TASK_TYPES, padded]) });
});
afterAll(async () => {
  await services.stop();
});

const listed = async (tenantId: string) => (await services.store.list({ tenantId, limit: 10 })).items.length;

describe('The payload limit, after the task type parsed it', () => {
  it('refuses a payload its schema grows past the limit with a 400 invalid_payload, writing nothing', async () => {
    // Before: 300,000 bytes were stored (over the 204,800 a result is sized beside); 500,000 made
    // the create itself fail (Item size has exceeded the maximum allowed size), a 500.
    for (const size of [300_000, 500_000]) {
      await expect(
        services.tasks.submit({ tenantId: `pad-${size}`, type: 'test.padded', payload: { size } }),
      ).rejects.toMatchObject({ name: 'ValidationError', code: 'invalid_payload' });
      expect(await listed(`pad-${size}`)).toBe(0);
    }
  });

  it('accepts one that stays within it', async () => {
    const { task } = await services.tasks.submit({
      tenantId: 'pad-ok',
      type: 'test.padded',
      payload: { size: MAX_PAYLOAD_BYTES - 100 },
    });
    expect(task.state).toBe('QUEUED');
  });
});
