/**
 * Local stand-in for DynamoDB's TTL on the tasks table. On AWS, finished tasks carry
 * `expiresAt` and DynamoDB deletes them in the background; dynalite has no TTL, so a local
 * runtime kept every task ever run (memory and the data folder grew without bound). This sweep
 * deletes finished tasks once they are older than the local retention.
 *
 * The local retention is shorter than AWS's (FINISHED_TASK_RETENTION_DAYS): a laptop keeps an
 * hour of history by default, enough for the dashboard, `tasks list` and debugging. Each delete
 * is conditional on the version the sweep saw, so a task retried in the meantime is kept.
 *
 * Items of the table that are not tasks (a batch's records: no `state`) get AWS's `expiresAt`
 * once their batch has ended (runtime/adapters/batch-store.ts); they go when the batch ended
 * longer ago than the local retention (expiresAt − AWS's retention), conditional on the
 * `expiresAt` the sweep saw.
 */
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { DeleteCommand, type DynamoDBDocumentClient, ScanCommand } from '@aws-sdk/lib-dynamodb';
import type { TaskLogger } from '../runtime/core/logger.ts';
import { TERMINAL_STATES } from '../runtime/core/task.ts';
import { FINISHED_TASK_RETENTION_DAYS } from '../runtime/infra/resources.ts';

/** Conditional deletes in flight at once during a sweep. */
const DELETE_CONCURRENCY = 8;

/** Default local retention of finished tasks. */
export const LOCAL_RETENTION_SECONDS = 3600;

export interface TaskExpiryOptions {
  readonly documents: DynamoDBDocumentClient;
  readonly tableName: string;
  /** Finished tasks are deleted this long after they finished. */
  readonly retentionSeconds: number;
  /** Between sweeps. Default: a tenth of the retention, between 1 s and 60 s. */
  readonly intervalMs?: number;
  readonly now?: () => Date;
  readonly logger?: TaskLogger;
}

export interface TaskExpiry {
  /** One sweep now; resolves to the number of tasks deleted. */
  sweep(): Promise<number>;
  stop(): Promise<void>;
}

export function startTaskExpiry(options: TaskExpiryOptions): TaskExpiry {
  const { documents, tableName, retentionSeconds } = options;
  const now = options.now ?? (() => new Date());
  const intervalMs = options.intervalMs ?? Math.min(60_000, Math.max(1000, retentionSeconds * 100));
  let sweeping: Promise<number> | undefined;
  let stopped = false;

  async function sweepOnce(): Promise<number> {
    const cutoffMs = now().getTime() - retentionSeconds * 1000;
    const cutoff = new Date(cutoffMs).toISOString();
    // A stateless item whose AWS expiry is before this ended before the cutoff.
    const statelessBefore = Math.floor(cutoffMs / 1000) + FINISHED_TASK_RETENTION_DAYS * 86_400;
    let deleted = 0;
    let startKey: Record<string, unknown> | undefined;
    do {
      const page = await documents.send(
        new ScanCommand({
          TableName: tableName,
          // A task whose events are not all delivered yet stays (its outbox is the only record).
          FilterExpression:
            '(#state IN (:s0, :s1, :s2) AND finishedAt < :cutoff AND attribute_not_exists(outbox)) OR (attribute_not_exists(#state) AND expiresAt < :statelessBefore)',
          ProjectionExpression: 'taskId, #version, #state, expiresAt',
          ExpressionAttributeNames: { '#state': 'state', '#version': 'version' },
          ExpressionAttributeValues: {
            ':s0': TERMINAL_STATES[0],
            ':s1': TERMINAL_STATES[1],
            ':s2': TERMINAL_STATES[2],
            ':cutoff': cutoff,
            ':statelessBefore': statelessBefore,
          },
          ExclusiveStartKey: startKey,
        }),
      );
      // Several deletes at a time: one by one, the sweep fell behind a busy runtime.
      const items = [...(page.Items ?? [])];
      await Promise.all(
        Array.from({ length: DELETE_CONCURRENCY }, async () => {
          for (let item = items.shift(); item && !stopped; item = items.shift()) {
            try {
              await documents.send(
                new DeleteCommand({
                  TableName: tableName,
                  Key: { taskId: item.taskId },
                  ...(item.state === undefined
                    ? {
                        ConditionExpression: 'attribute_not_exists(#state) AND expiresAt = :expiresAt',
                        ExpressionAttributeNames: { '#state': 'state' },
                        ExpressionAttributeValues: { ':expiresAt': item.expiresAt },
                      }
                    : {
                        ConditionExpression: '#version = :version AND attribute_not_exists(outbox)',
                        ExpressionAttributeNames: { '#version': 'version' },
                        ExpressionAttributeValues: { ':version': item.version },
                      }),
                }),
              );
              deleted++;
            } catch (error) {
              // Retried (or otherwise changed) since the scan: not expired any more.
              if (!(error instanceof ConditionalCheckFailedException)) throw error;
            }
          }
        }),
      );
      if (stopped) return deleted;
      startKey = page.LastEvaluatedKey;
    } while (startKey && !stopped);
    return deleted;
  }

  const sweep = () => {
    sweeping ??= sweepOnce().finally(() => {
      sweeping = undefined;
    });
    return sweeping;
  };

  const timer = setInterval(() => {
    sweep().catch((error) => options.logger?.warn('task expiry sweep failed', { error: String(error) }));
  }, intervalMs);
  timer.unref();

  return {
    sweep,
    async stop() {
      stopped = true;
      clearInterval(timer);
      await sweeping?.catch(() => undefined);
    },
  };
}
