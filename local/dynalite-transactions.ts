/**
 * TransactWriteItems for dynalite, which (4.x) answers it UnknownOperationException. The task
 * store writes a batch's tasks with it (adapters/task-store.ts `createMany`): up to 100 conditional
 * creates in one call, all or none, which BatchWriteItem (no conditions) cannot do.
 *
 * What is emulated, as DynamoDB documents it: `Put` actions (with or without a condition; the
 * other actions are refused with a ValidationException naming them); at most 100 actions, one per
 * item; every condition checked with the items locked, then every put applied, or none when one
 * fails: TransactionCanceledException with a `CancellationReasons` entry per action
 * (`ConditionalCheckFailed`, with the item when `ReturnValuesOnConditionCheckFailure` is
 * `ALL_OLD`, else `None`); a `ClientRequestToken` seen in the last 10 minutes answers success
 * again without writing (the SDK's retry of a lost answer), or IdempotentParameterMismatchException
 * for other actions. Each put is validated and written by dynalite's own PutItem code (item
 * checks, condition expressions, index updates). Not emulated: conflicts with concurrent
 * transactions (the locks serialise them), capacity, and the 4 MB request limit.
 */

import {
  type Answer,
  compare,
  type DynaliteStore,
  db,
  existingItem,
  lockItem,
  type PlannedPut,
  planPut,
  validation,
  writePut,
} from './dynalite-shim.ts';

const MAX_ACTIONS = 100;
/** How long DynamoDB remembers a ClientRequestToken. */
const TOKEN_MS = 10 * 60_000;
const ACTIONS = ['Put', 'ConditionCheck', 'Update', 'Delete'] as const;
/** The ClientRequestTokens each emulator (its store) has seen. */
const tokensOf = new WeakMap<DynaliteStore, Map<string, { readonly actions: string; readonly atMs: number }>>();

/** TransactWriteItems, for local/dynalite-shim.ts `withOperations`. */
export function transactWriteItems(store: DynaliteStore, body: unknown): Promise<Answer> {
  const tokens = tokensOf.get(store) ?? new Map();
  tokensOf.set(store, tokens);
  return transactWrite(store, tokens, body);
}

async function transactWrite(
  store: DynaliteStore,
  tokens: Map<string, { readonly actions: string; readonly atMs: number }>,
  body: unknown,
): Promise<Answer> {
  const request = (body ?? {}) as { TransactItems?: unknown; ClientRequestToken?: unknown };
  const actions = request.TransactItems;
  if (!Array.isArray(actions) || actions.length === 0 || actions.length > MAX_ACTIONS) {
    return validation(`TransactItems must hold 1 to ${MAX_ACTIONS} actions`);
  }
  const nowMs = Date.now();
  for (const [token, seen] of tokens) if (nowMs - seen.atMs > TOKEN_MS) tokens.delete(token);
  const token = typeof request.ClientRequestToken === 'string' ? request.ClientRequestToken : undefined;
  const fingerprint = JSON.stringify(actions);
  const seen = token === undefined ? undefined : tokens.get(token);
  if (seen) {
    if (seen.actions === fingerprint) return { status: 200, body: {} };
    return {
      status: 400,
      body: {
        __type: 'com.amazonaws.dynamodb.v20120810#IdempotentParameterMismatchException',
        message: 'The request uses the same client token as a previous, but non-identical request.',
      },
    };
  }

  const planned: (PlannedPut & { readonly returnOld: boolean })[] = [];
  const keys = new Set<string>();
  for (const [index, action] of actions.entries()) {
    const kinds = ACTIONS.filter((kind) => (action as Record<string, unknown> | null)?.[kind] !== undefined);
    if (kinds.length !== 1) return validation(`TransactItems[${index}] must name exactly one of ${ACTIONS.join(', ')}`);
    if (kinds[0] !== 'Put') return validation(`TransactItems[${index}]: only Put is emulated, not ${kinds[0]}`);
    const { ReturnValuesOnConditionCheckFailure: returnValues, ...put } = (action as { Put: Record<string, unknown> })
      .Put;
    const plan = await planPut(store, put);
    if (!('key' in plan)) return plan;
    const key = plan.key;
    const data = plan.data;
    const lockName = `${data.TableName}\u0000${key}`;
    if (keys.has(lockName)) return validation('Transaction request cannot include multiple operations on one item');
    keys.add(lockName);
    planned.push({ ...plan, returnOld: returnValues === 'ALL_OLD' });
  }

  // Locked in one order (table, key) so that two transactions over the same items cannot deadlock.
  const order = [...planned].sort((a, b) =>
    compare(`${a.data.TableName}\u0000${a.key}`, `${b.data.TableName}\u0000${b.key}`),
  );
  const releases: (() => void)[] = [];
  try {
    for (const put of order) {
      releases.push(await lockItem(put));
    }
    const existing = await Promise.all(planned.map(existingItem));
    const failed = planned.map((put, i) => db.checkConditional(put.data, existing[i]) != null);
    if (failed.some(Boolean)) {
      const reasons = planned.map((put, i) =>
        failed[i]
          ? {
              Code: 'ConditionalCheckFailed',
              Message: 'The conditional request failed',
              ...(put.returnOld && existing[i] ? { Item: existing[i] } : {}),
            }
          : { Code: 'None' },
      );
      return {
        status: 400,
        body: {
          __type: 'com.amazonaws.dynamodb.v20120810#TransactionCanceledException',
          message: `Transaction cancelled, please refer cancellation reasons for specific reasons [${reasons.map((reason) => reason.Code).join(', ')}]`,
          CancellationReasons: reasons,
        },
      };
    }
    for (const [i, put] of planned.entries()) {
      await writePut(store, put, existing[i]);
    }
    if (token !== undefined) tokens.set(token, { actions: fingerprint, atMs: nowMs });
    return { status: 200, body: {} };
  } finally {
    for (const release of releases) release();
  }
}
