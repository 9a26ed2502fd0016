/**
 * The submit `npm start` / `tasks dev` print at start ("try: curl …") works as printed: with a
 * task module whose type needs payload fields it used to print `"payload":{}`, which the API
 * refuses with 400 invalid_payload.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { tryCommand } from '../../local/start.ts';
import { defineTaskType, TaskTypeRegistry } from '../../runtime/task-types/define.ts';
import { DEMO_TASK_TYPES } from '../../runtime/task-types/demo.ts';

const invoice = defineTaskType({
  type: 'billing.invoice',
  description: 'Needs fields',
  payload: z.strictObject({ invoiceId: z.string(), lines: z.array(z.number()) }),
  handler: async () => ({}),
});
const ping = defineTaskType({
  type: 'ops.ping',
  description: 'Takes an empty payload',
  payload: z.strictObject({ note: z.string().optional() }),
  handler: async () => ({}),
});

/** The body of the printed curl, and whether a submit of it passes the registry's payload check. */
function printed(types: Parameters<typeof tryCommand>[1]) {
  const command = tryCommand('http://127.0.0.1:3000', types);
  const body = JSON.parse(/-d '(.*)'$/.exec(command)![1]!) as { tenantId: string; type: string; payload: unknown };
  const registry = new TaskTypeRegistry([...DEMO_TASK_TYPES, ...types]);
  registry.parsePayload(body.type, body.payload);
  return { command, body };
}

describe('Function: tryCommand', () => {
  it('prints a demo.sleep submit without task modules', () => {
    const { command, body } = printed([]);
    expect(command).toMatch(
      /^curl -s -X POST http:\/\/127\.0\.0\.1:3000\/v1\/tasks -H 'content-type: application\/json'/,
    );
    expect(body).toEqual({ tenantId: 'acme', type: 'demo.sleep', payload: { ms: 500 } });
  });

  it("prints a submit the API accepts when the first module type's payload needs fields", () => {
    expect(printed([invoice]).body.type).toBe('demo.sleep');
  });

  it('prints the first module type that takes an empty payload', () => {
    expect(printed([invoice, ping]).body).toEqual({ tenantId: 'acme', type: 'ops.ping', payload: {} });
  });
});
