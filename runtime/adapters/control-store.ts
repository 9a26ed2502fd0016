/**
 * Control items in the `control` table: tenant settings, leases (one active scheduler) and the
 * scheduler's published snapshot (what the API uses to explain waits).
 */
import { randomUUID } from 'node:crypto';
import { gunzipSync, gzipSync } from 'node:zlib';
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { DeleteCommand, type DynamoDBDocumentClient, GetCommand, PutCommand, ScanCommand } from '@aws-sdk/lib-dynamodb';
import type { CapacitySlices } from '../core/capacity-slices.ts';
import type { RotationState } from '../core/policy/types.ts';
import { PRIORITY_TIERS, type PriorityTier } from '../core/task.ts';
import {
  type PauseRecord,
  pickPause,
  pickTenantSettings,
  SETTINGS_RESCAN_MS,
  type TenantSettings,
} from '../core/tenant-settings.ts';

export type { PauseRecord };

import { FlowStore } from './flow-store.ts';
import type { QueueScanCursor } from './task-store.ts';

export type StoredTenant = TenantSettings &
  PauseRecord & {
    readonly tenantId: string;
    readonly updatedAt: string;
  };

export interface Lease {
  readonly name: string;
  readonly owner: string;
  /** Monotonic across holders: a new holder always gets a larger token. */
  readonly token: number;
  readonly expiresAt: number;
  /**
   * Set by an acquire that took the lease from another holder (or from an earlier, lapsed hold):
   * until when that holder may have written, its release or else its lease's expiry. Not stored.
   */
  readonly predecessorUntilMs?: number;
}

const tenantKey = (tenantId: string) => `tenant#${tenantId}`;
const taskTypeKey = (type: string) => `tasktype#${type}`;

/** A task type's stored settings: paused or not (PUT /v1/task-types/{type}), and who paused it. */
export type StoredTaskType = PauseRecord & {
  readonly type: string;
  readonly paused: boolean;
  readonly updatedAt: string;
};
/** The tier first: it holds no `#`, so any tenant id follows unambiguously. */
const intakeKey = (tenantId: string, tier: PriorityTier) => `intake#${tier}#${tenantId}`;

/**
 * A tenant-tier in the intake registry (docs/intake.md §4(a)): the scheduler reads its queued
 * work from `byTenantQueue` until it deregisters it. `token` changes on every registration, so a
 * deregistration decided on an older one cannot delete a newer registration.
 */
export interface IntakeRegistration {
  readonly tenantId: string;
  readonly tier: PriorityTier;
  readonly token: string;
  /**
   * The promise (epoch ms; 0: none): the scheduler reads this tenant-tier's index at least until
   * then, and G beyond, so a submit before it may skip its announcement. Every write of the item
   * is conditional on not lowering it.
   */
  readonly scanUntilMs: number;
}

/** Every write of an intake item keeps its promise: absent, or not later than the one written. */
const KEEPS_PROMISE = '(attribute_not_exists(scanUntilMs) OR scanUntilMs <= :scanUntilMs)';
const leaseKey = (name: string) => `lease#${name}`;
const SNAPSHOT_KEY = 'snapshot#scheduler';
/**
 * The scheduler's snapshot is read (eventually consistent) by every GET of a QUEUED task and every
 * status read. One item serves 3,000 read units a second: a 60 KB snapshot (gzipped) costs 7.5 units a read,
 * so one key would be hot above 400 reads a second. It is written as one copy per 24 KB (at most
 * 8; the first under the key older versions read), and readers go round the copies; on AWS each
 * API environment also keeps what it read for a second (`snapshotCacheMs`): at 1,000 environments
 * that is at most 1,000 reads a second, under 2,000 read units a second per copy. A small snapshot
 * stays one item, so an idle system writes no more than before.
 */
const SNAPSHOT_COPY_BYTES = 24 * 1024;
const SNAPSHOT_MAX_COPIES = 8;
/** A shard's own key for one of the scheduler's singletons (shard 0: the key a single scheduler used). */
const ofShard = (key: string, shard: number) => (shard === 0 ? key : `${key}#s${shard}`);
const snapshotKey = (copy: number, shard: number) =>
  ofShard(copy === 0 ? SNAPSHOT_KEY : `${SNAPSHOT_KEY}#${copy}`, shard);
/** The copies needed for a snapshot of this many bytes of JSON. */
export const snapshotCopies = (bytes: number): number =>
  Math.min(SNAPSHOT_MAX_COPIES, Math.max(1, Math.ceil(bytes / SNAPSHOT_COPY_BYTES)));
/** Snapshot reads in this process, to go round the copies (a counter: the simulation stays deterministic). */
let snapshotReads = 0;
const ROTATION_KEY = 'rotation#scheduler';
/** The rotation item's budget for its gzipped memory: DynamoDB refuses items over 400 KB. */
export const ROTATION_MAX_BYTES = 350_000;

/**
 * The rotation's memory gzipped, within `maxBytes`: when too large (tens of thousands of tenants
 * served in the last minutes, or long tenant ids), the tenants served longest ago are left out
 * first. Their memory matters least: a tenant's turn is the later of when it was last served and
 * when its work became due, and the older the serving, the likelier its due time is the later. A
 * write over the limit failed the scheduler's every upkeep.
 */
export function boundedRotation(state: RotationState, maxBytes: number): { gzipped: Uint8Array; dropped: number } {
  const whole = gzipSync(JSON.stringify(state));
  if (whole.byteLength <= maxBytes) return { gzipped: whole, dropped: 0 };
  // The waiting tenants' turns go first: without one, a tenant taken in again joins at the end.
  if (state.turns) {
    const { turns: _left, ...rest } = state;
    return boundedRotation(rest, maxBytes);
  }
  const served = (['lambda', 'fargate'] as const)
    .flatMap((pool) => Object.entries(state[pool]).map(([tenantId, atMs]) => ({ pool, tenantId, atMs })))
    .sort((a, b) => b.atMs - a.atMs);
  const keeping = (count: number): RotationState => {
    const kept = { lambda: [] as [string, number][], fargate: [] as [string, number][] };
    for (const entry of served.slice(0, count)) kept[entry.pool].push([entry.tenantId, entry.atMs]);
    return { ...state, lambda: Object.fromEntries(kept.lambda), fargate: Object.fromEntries(kept.fargate) };
  };
  // Shrink in proportion to the excess, then by a tenth until it fits (gzip's ratio varies little).
  let count = Math.floor((served.length * maxBytes) / whole.byteLength);
  for (;;) {
    const gzipped = gzipSync(JSON.stringify(keeping(count)));
    if (gzipped.byteLength <= maxBytes || count === 0) return { gzipped, dropped: served.length - count };
    count = Math.floor(count * 0.9);
  }
}
const SWEEP_MARKS_KEY = 'sweeps#reconciler';

/**
 * How far the registry backstop's scan of `byTenantQueue` has got, kept here because the
 * scheduler Lambda builds a new scheduler every minute: a fresh one goes on from it instead of
 * starting the pass over (runtime/scheduler/backstop.ts).
 */
export interface SweepMarks {
  /** Where the current pass goes on (the last page's LastEvaluatedKey); absent: from the start. */
  readonly backstopCursor?: QueueScanCursor;
}

/** The shards' allowances of one pool set (runtime/core/capacity-slices.ts), one item. */
const slicesKey = (poolSet: string) => `slices#${poolSet}`;

/** How a conditional write of the capacity slices ended, and the record stored after it. */
export interface SlicesWrite {
  /** True when the item now is the state written (by this call, or by an earlier attempt of it). */
  readonly written: boolean;
  /** Refused: the record as read consistently afterwards (undefined: no item). */
  readonly current?: CapacitySlices | undefined;
}

/** A token every tenant PUT replaces, so the scheduler learns of new settings with one small read. */
const TENANTS_VERSION_KEY = 'tenants#version';

/** Every stored tenant and task type (`ControlStore.listSettings`). */
export interface StoredSettings {
  readonly tenants: readonly StoredTenant[];
  readonly taskTypes: readonly StoredTaskType[];
}

export interface ControlStoreOptions {
  /** Keep a read snapshot this long and serve it again (0: read every time). */
  readonly snapshotCacheMs?: number;
  /** Epoch ms, for the snapshot cache. */
  readonly nowMs?: () => number;
  /**
   * The scheduler shard whose snapshot, rotation and sweep marks this store reads and writes
   * (runtime/core/shards.ts); 0 by default. Everything else in the table is shared.
   */
  readonly shard?: number;
}

export class ControlStore {
  readonly #documents: DynamoDBDocumentClient;
  readonly #tableName: string;
  /** The flow-control records (start-rate buckets, concurrency keys) in the same table. */
  readonly flow: FlowStore;
  readonly #options: ControlStoreOptions;
  /** Copies the last snapshot write left (unknown at first: any beyond the new count are deleted). */
  #snapshotCopiesWritten = SNAPSHOT_MAX_COPIES;
  /** Copies the last snapshot read said there are. */
  #snapshotCopiesKnown = 1;
  #snapshotCache: { readonly atMs: number; readonly value: unknown } | undefined;
  /** The last scan of the settings (`settings()`), and the version read before it. */
  #settingsCache:
    | { readonly version: string | undefined; readonly atMs: number; readonly settings: Promise<StoredSettings> }
    | undefined;
  readonly #shard: number;
  /** The other shards' views, made once (each keeps its own snapshot cache). */
  readonly #shardViews = new Map<number, ControlStore>();

  constructor(documents: DynamoDBDocumentClient, tableName: string, options: ControlStoreOptions = {}) {
    this.#documents = documents;
    this.#tableName = tableName;
    this.flow = new FlowStore(documents, tableName);
    this.#options = options;
    this.#shard = options.shard ?? 0;
  }

  /** This table as scheduler shard `shard` sees it: its own snapshot, rotation and sweep marks. */
  forShard(shard: number): ControlStore {
    if (shard === this.#shard) return this;
    let view = this.#shardViews.get(shard);
    if (!view) {
      view = new ControlStore(this.#documents, this.#tableName, { ...this.#options, shard });
      this.#shardViews.set(shard, view);
    }
    return view;
  }

  async getTenant(tenantId: string): Promise<StoredTenant | undefined> {
    const { Item } = await this.#documents.send(
      new GetCommand({ TableName: this.#tableName, Key: { pk: tenantKey(tenantId) }, ConsistentRead: true }),
    );
    return Item ? toTenant(Item) : undefined;
  }

  /**
   * Store a tenant's settings (all of them: a field left out is unset). A pause keeps who paused
   * it first and when (one consistent read of the item before), so changing the weight of a
   * paused tenant does not rewrite its pause.
   */
  async putTenant(tenantId: string, settings: TenantSettings, now: Date, by = 'local'): Promise<StoredTenant> {
    const previous = settings.paused ? await this.getTenant(tenantId) : undefined;
    const pause = settings.paused ? pauseRecord(previous, now, by) : {};
    const tenant: StoredTenant = {
      tenantId,
      ...pickTenantSettings(settings),
      ...pause,
      updatedAt: now.toISOString(),
    };
    await this.#documents.send(
      new PutCommand({ TableName: this.#tableName, Item: { pk: tenantKey(tenantId), kind: 'tenant', ...tenant } }),
    );
    // A fresh random token rather than a counter: only "changed" matters, and a plain put needs
    // no UpdateItem (which the simulation lacks).
    await this.#bumpSettingsVersion();
    return tenant;
  }

  /**
   * Remove a tenant's stored settings (its pause with them): it follows the configuration again.
   * The settings version moves as for a put, so a scheduler rebinds before the caller hears 200.
   */
  async deleteTenant(tenantId: string): Promise<void> {
    await this.#documents.send(new DeleteCommand({ TableName: this.#tableName, Key: { pk: tenantKey(tenantId) } }));
    await this.#bumpSettingsVersion();
  }

  /**
   * Replace the settings version token. After the settings, before the caller hears 200: a
   * scheduler that reads the new token (consistently) then finds the new settings.
   */
  async #bumpSettingsVersion(): Promise<void> {
    await this.#documents.send(
      new PutCommand({
        TableName: this.#tableName,
        Item: { pk: TENANTS_VERSION_KEY, kind: 'tenants-version', version: randomUUID() },
      }),
    );
  }

  /**
   * Pause or resume a task type (in every tenant). As for tenants, the settings version moves
   * before the caller hears 200, so nothing of a type paused then starts after.
   */
  async putTaskType(type: string, settings: { paused: boolean }, now: Date, by = 'local'): Promise<StoredTaskType> {
    const previous = settings.paused ? await this.getTaskType(type) : undefined;
    const stored: StoredTaskType = {
      type,
      paused: settings.paused,
      ...(settings.paused ? pauseRecord(previous, now, by) : {}),
      updatedAt: now.toISOString(),
    };
    await this.#documents.send(
      new PutCommand({ TableName: this.#tableName, Item: { pk: taskTypeKey(type), kind: 'task-type', ...stored } }),
    );
    await this.#bumpSettingsVersion();
    return stored;
  }

  /**
   * Forget a task type's stored settings (a lifted pause of a type no task module defines), moving
   * the settings version as a put does.
   */
  async deleteTaskType(type: string): Promise<void> {
    await this.#documents.send(new DeleteCommand({ TableName: this.#tableName, Key: { pk: taskTypeKey(type) } }));
    await this.#bumpSettingsVersion();
  }

  async getTaskType(type: string): Promise<StoredTaskType | undefined> {
    const { Item } = await this.#documents.send(
      new GetCommand({ TableName: this.#tableName, Key: { pk: taskTypeKey(type) }, ConsistentRead: true }),
    );
    return Item ? toTaskType(Item) : undefined;
  }

  /** The tenant settings version: changes whenever a tenant's or a task type's settings were stored (none yet: undefined). */
  async tenantsVersion(): Promise<string | undefined> {
    const { Item } = await this.#documents.send(
      new GetCommand({ TableName: this.#tableName, Key: { pk: TENANTS_VERSION_KEY }, ConsistentRead: true }),
    );
    return Item?.version as string | undefined;
  }

  /**
   * Every stored tenant and task type, in one scan of the whole control table: it reads every
   * item (a filter does not lower the bill), 674.5 read units at 10,000 tenant-tiers (the limits
   * helper's run), so the scheduler does it only when the settings version moved (and every
   * `SETTINGS_RESCAN_MS` as a fallback), the API through `settings()`.
   */
  async listSettings(): Promise<StoredSettings> {
    const items = await this.#scanKind('tenant', 'task-type');
    return {
      tenants: items.filter((item) => item.kind === 'tenant').map(toTenant),
      taskTypes: items.filter((item) => item.kind === 'task-type').map(toTaskType),
    };
  }

  /**
   * The stored settings as the API reads them (GET /v1/status, /v1/task-types, /v1/tenants): one
   * consistent read of the settings version, and the whole settings from the last scan of this
   * store while the version has not moved since and the scan is younger than
   * `SETTINGS_RESCAN_MS`; else a scan. Every PUT and DELETE of a tenant or task type moves the
   * version before it answers, so a read after the answer scans again and sees the write. What
   * the rescan covers: a write whose version bump failed (its caller got an error, not a 200).
   * The version is read before the scan: a write between the two moves it again, and the next
   * read scans. Calls that find a scan under way for the same version wait for it.
   */
  async settings(): Promise<StoredSettings> {
    const version = await this.tenantsVersion();
    const nowMs = this.#options.nowMs?.() ?? Date.now();
    const cached = this.#settingsCache;
    if (cached && cached.version === version && nowMs - cached.atMs >= 0 && nowMs - cached.atMs < SETTINGS_RESCAN_MS) {
      return cached.settings;
    }
    const scan = this.listSettings();
    const entry = { version, atMs: nowMs, settings: scan };
    this.#settingsCache = entry;
    try {
      return await scan;
    } catch (error) {
      // A failed scan is not kept: the next read scans again.
      if (this.#settingsCache === entry) this.#settingsCache = undefined;
      throw error;
    }
  }

  /** Every item of the given kinds, read consistently over all pages of the control table. */
  async #scanKind(...kinds: string[]): Promise<Record<string, unknown>[]> {
    const items: Record<string, unknown>[] = [];
    let startKey: Record<string, unknown> | undefined;
    const values = Object.fromEntries(kinds.map((kind, i) => [`:kind${i}`, kind]));
    do {
      const response = await this.#documents.send(
        new ScanCommand({
          TableName: this.#tableName,
          FilterExpression: `kind IN (${Object.keys(values).join(', ')})`,
          ExpressionAttributeValues: values,
          ExclusiveStartKey: startKey,
          ConsistentRead: true,
        }),
      );
      items.push(...(response.Items ?? []));
      startKey = response.LastEvaluatedKey;
    } while (startKey);
    return items;
  }

  /**
   * Register a tenant-tier (again): a fresh token on every call, so a deregistration decided on
   * an earlier one is refused. Written before the announcement that caused it is deleted. The
   * promise stored (or `scanUntilMs`, the one the caller knows, if later) is kept: a promise only
   * grows while the item exists.
   */
  async registerIntake(tenantId: string, tier: PriorityTier, now: Date, scanUntilMs = 0): Promise<IntakeRegistration> {
    let keep = scanUntilMs;
    // A refusal means the item carries a later promise: read it and write again keeping it.
    for (let attempt = 0; ; attempt++) {
      const registration: IntakeRegistration = { tenantId, tier, token: randomUUID(), scanUntilMs: keep };
      if (await this.#putIntake(registration, now)) return registration;
      const stored = await this.getIntake(tenantId, tier);
      if (attempt >= 4) {
        throw new Error(
          `Could not register intake ${tier}/${tenantId}: its promise kept moving (last ${stored?.scanUntilMs})`,
        );
      }
      keep = Math.max(keep, stored?.scanUntilMs ?? 0);
    }
  }

  /**
   * Make or extend the promise of a registration that still carries `registration.token`.
   * Returns what the item carries afterwards: the new promise, or, when refused (another token,
   * or a later promise already), the item as read consistently; undefined when it is gone.
   */
  async promiseIntake(registration: IntakeRegistration, now: Date): Promise<IntakeRegistration | undefined> {
    if (await this.#putIntake(registration, now, registration.token)) return registration;
    return this.getIntake(registration.tenantId, registration.tier);
  }

  /** One intake item, read consistently. */
  async getIntake(tenantId: string, tier: PriorityTier): Promise<IntakeRegistration | undefined> {
    const { Item } = await this.#documents.send(
      new GetCommand({ TableName: this.#tableName, Key: { pk: intakeKey(tenantId, tier) }, ConsistentRead: true }),
    );
    return Item ? toRegistration(Item) : undefined;
  }

  /**
   * The promise of a tenant-tier as the submit path reads it: eventually consistent (half the
   * read cost), so it may be an older version of the item, whose promise is never later than the
   * current one (promises only grow while the item exists, and a deleted item's had ended).
   * 0: no promise, or no registration.
   */
  async intakePromise(tenantId: string, tier: PriorityTier): Promise<number> {
    const { Item } = await this.#documents.send(
      new GetCommand({
        TableName: this.#tableName,
        Key: { pk: intakeKey(tenantId, tier) },
        ProjectionExpression: 'scanUntilMs',
      }),
    );
    return typeof Item?.scanUntilMs === 'number' ? Item.scanUntilMs : 0;
  }

  async #putIntake(registration: IntakeRegistration, now: Date, expectedToken?: string): Promise<boolean> {
    try {
      await this.#documents.send(
        new PutCommand({
          TableName: this.#tableName,
          Item: {
            pk: intakeKey(registration.tenantId, registration.tier),
            kind: 'intake',
            ...registration,
            writtenAt: now.toISOString(),
          },
          ConditionExpression: expectedToken === undefined ? KEEPS_PROMISE : `#token = :token AND ${KEEPS_PROMISE}`,
          ...(expectedToken === undefined ? {} : { ExpressionAttributeNames: { '#token': 'token' } }),
          ExpressionAttributeValues: {
            ':scanUntilMs': registration.scanUntilMs,
            ...(expectedToken === undefined ? {} : { ':token': expectedToken }),
          },
        }),
      );
      return true;
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) return false;
      throw error;
    }
  }

  /**
   * Deregister a tenant-tier whose registration still carries `token` and whose promise ended
   * before `promiseEndedBeforeMs` (the caller passes now − G: a submit that skipped its
   * announcement under the promise must be visible to the index reads before the item goes).
   * False when it does not (registered or promised again meanwhile) or is gone already.
   */
  async deregisterIntake(
    registration: Pick<IntakeRegistration, 'tenantId' | 'tier' | 'token'>,
    promiseEndedBeforeMs: number,
  ): Promise<boolean> {
    try {
      await this.#documents.send(
        new DeleteCommand({
          TableName: this.#tableName,
          Key: { pk: intakeKey(registration.tenantId, registration.tier) },
          ConditionExpression: '#token = :token AND (attribute_not_exists(scanUntilMs) OR scanUntilMs <= :ended)',
          ExpressionAttributeNames: { '#token': 'token' },
          ExpressionAttributeValues: { ':token': registration.token, ':ended': promiseEndedBeforeMs },
        }),
      );
      return true;
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) return false;
      throw error;
    }
  }

  /** Every registered tenant-tier (a scan of the small control table, as for tenants). */
  async listIntake(): Promise<IntakeRegistration[]> {
    return (await this.#scanKind('intake')).flatMap((item) => toRegistration(item) ?? []);
  }

  /**
   * Take or renew a lease. Succeeds when the lease is free, expired, or already ours; the
   * token grows on every change of holder (a fencing token for the holder's writes).
   *
   *   holder A (token 4) ── crashes ── lease expires ──▶ B acquires (token 5)
   *   A wakes up, renews: condition owner = A fails ──▶ A learns it lost the lease
   */
  async acquireLease(name: string, owner: string, nowMs: number, ttlMs: number): Promise<Lease | undefined> {
    const current = await this.getLease(name);
    const ours = current?.owner === owner && current.expiresAt > nowMs;
    const token = current ? (ours ? current.token : current.token + 1) : 1;
    const lease: Lease = { name, owner, token, expiresAt: nowMs + ttlMs };
    try {
      await this.#documents.send(
        new PutCommand({
          TableName: this.#tableName,
          Item: { pk: leaseKey(name), kind: 'lease', ...lease },
          ConditionExpression: current
            ? '#token = :token AND (#owner = :owner OR expiresAt < :now)'
            : 'attribute_not_exists(pk)',
          ...(current
            ? {
                ExpressionAttributeNames: { '#token': 'token', '#owner': 'owner' },
                ExpressionAttributeValues: { ':token': current.token, ':owner': owner, ':now': nowMs },
              }
            : {}),
        }),
      );
    } catch (error) {
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
      // A write that landed with its answer lost is refused on the SDK's retry by itself (its token
      // moved on): read the lease back, and it is ours if it is this very write. Otherwise the
      // taker would leave a lease held by itself for its TTL, and no scheduler would run meanwhile.
      const stored = await this.getLease(name);
      if (stored?.owner !== owner || stored.token !== token || stored.expiresAt !== lease.expiresAt) return undefined;
    }
    if (!current || ours) return lease;
    return { ...lease, predecessorUntilMs: current.releasedAtMs ?? current.expiresAt };
  }

  /** Give the lease up early (clean shutdown) so a successor need not wait for expiry. */
  async releaseLease(lease: Lease, nowMs = Date.now()): Promise<void> {
    const { name, owner, token } = lease;
    try {
      await this.#documents.send(
        new PutCommand({
          TableName: this.#tableName,
          Item: { pk: leaseKey(name), kind: 'lease', name, owner, token, expiresAt: 0, releasedAtMs: nowMs },
          ConditionExpression: '#token = :token AND #owner = :owner',
          ExpressionAttributeNames: { '#token': 'token', '#owner': 'owner' },
          ExpressionAttributeValues: { ':token': lease.token, ':owner': lease.owner },
        }),
      );
    } catch (error) {
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
    }
  }

  async getLease(name: string): Promise<(Lease & { readonly releasedAtMs?: number | undefined }) | undefined> {
    const { Item } = await this.#documents.send(
      new GetCommand({ TableName: this.#tableName, Key: { pk: leaseKey(name) }, ConsistentRead: true }),
    );
    if (!Item) return undefined;
    return {
      name,
      owner: Item.owner as string,
      token: Item.token as number,
      expiresAt: Item.expiresAt as number,
      releasedAtMs: typeof Item.releasedAtMs === 'number' ? Item.releasedAtMs : undefined,
    };
  }

  /** The shards' capacity slices of a pool set, read consistently (none yet: undefined). */
  async getCapacitySlices(poolSet = 'pools'): Promise<CapacitySlices | undefined> {
    const { Item } = await this.#documents.send(
      new GetCommand({ TableName: this.#tableName, Key: { pk: slicesKey(poolSet) }, ConsistentRead: true }),
    );
    return Item ? toSlices(Item) : undefined;
  }

  /**
   * Replace the capacity slices if the item is still at `expectedVersion` (0: no item yet), as a
   * PutItem with a condition (the simulated DynamoDB has no UpdateItem). The record is stored as
   * JSON text, so a refusal can tell whether the item is this very write:
   *
   *   put v7→v8 ── applied, answer lost ──▶ SDK retries ── condition v7 fails ──▶ read: item is our v8
   *
   * A refusal with another record means another shard wrote first: the caller reads it (here:
   * `current`) and computes again.
   */
  async putCapacitySlices(state: CapacitySlices, expectedVersion: number, poolSet = 'pools'): Promise<SlicesWrite> {
    const slicesJson = JSON.stringify(state);
    try {
      await this.#documents.send(
        new PutCommand({
          TableName: this.#tableName,
          Item: { pk: slicesKey(poolSet), kind: 'capacity-slices', version: state.version, slicesJson },
          ConditionExpression: expectedVersion === 0 ? 'attribute_not_exists(pk)' : '#version = :expected',
          ...(expectedVersion === 0
            ? {}
            : {
                ExpressionAttributeNames: { '#version': 'version' },
                ExpressionAttributeValues: { ':expected': expectedVersion },
              }),
        }),
      );
      return { written: true };
    } catch (error) {
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
    }
    const { Item } = await this.#documents.send(
      new GetCommand({ TableName: this.#tableName, Key: { pk: slicesKey(poolSet) }, ConsistentRead: true }),
    );
    if (Item?.slicesJson === slicesJson) return { written: true };
    return { written: false, current: Item ? toSlices(Item) : undefined };
  }

  /** The cursor is kept as JSON text: one opaque attribute, replaced whole. */
  async getSweepMarks(): Promise<SweepMarks> {
    const { Item } = await this.#documents.send(
      new GetCommand({
        TableName: this.#tableName,
        Key: { pk: ofShard(SWEEP_MARKS_KEY, this.#shard) },
        ConsistentRead: true,
      }),
    );
    const cursor = typeof Item?.backstopCursor === 'string' ? parseCursor(Item.backstopCursor) : undefined;
    return cursor ? { backstopCursor: cursor } : {};
  }

  /** Written by the scheduler, or an idle tick (a lost or crossed write only repeats or skips part of a pass). */
  async putSweepMarks(marks: SweepMarks): Promise<void> {
    await this.#documents.send(
      new PutCommand({
        TableName: this.#tableName,
        Item: {
          pk: ofShard(SWEEP_MARKS_KEY, this.#shard),
          kind: 'sweeps',
          ...(marks.backstopCursor ? { backstopCursor: JSON.stringify(marks.backstopCursor) } : {}),
        },
      }),
    );
  }

  /** The snapshot, gzipped, as one copy per 24 KB of it (see SNAPSHOT_COPY_BYTES); copies no longer needed are deleted. */
  async putSnapshot(snapshot: unknown): Promise<void> {
    // Gzipped: its JSON (tenant ids, the same keys in every entry) shrinks about tenfold, and the
    // write every 2 s and each API read are paid per KB (a 10,000-tenant snapshot was 8 copies of
    // ~210 KB, about 1,700 write units every 2 s). Readers of the release before read only
    // `snapshotJson`: during the deploy they find none and answer without one.
    const snapshotGz = gzipSync(JSON.stringify(snapshot));
    const copies = snapshotCopies(snapshotGz.byteLength);
    const stale = Array.from({ length: Math.max(0, this.#snapshotCopiesWritten - copies) }, (_, i) => copies + i);
    await Promise.all([
      ...Array.from({ length: copies }, (_, copy) =>
        this.#documents.send(
          new PutCommand({
            TableName: this.#tableName,
            Item: { pk: snapshotKey(copy, this.#shard), kind: 'snapshot', copies, snapshotGz },
          }),
        ),
      ),
      ...stale.map((copy) =>
        this.#documents.send(
          new DeleteCommand({ TableName: this.#tableName, Key: { pk: snapshotKey(copy, this.#shard) } }),
        ),
      ),
    ]);
    this.#snapshotCopiesWritten = copies;
  }

  /**
   * The fair-share rotation's memory (SchedulingPolicy.rotationState), so a scheduler that starts
   * afresh (every invocation, on AWS) keeps the order. Last writer wins: only the lease holder
   * writes it, and a late write from a predecessor only repeats an older state.
   */
  async putRotation(state: RotationState, at: Date): Promise<{ readonly dropped: number }> {
    const { gzipped, dropped } = boundedRotation(state, ROTATION_MAX_BYTES);
    await this.#documents.send(
      new PutCommand({
        TableName: this.#tableName,
        Item: {
          pk: ofShard(ROTATION_KEY, this.#shard),
          kind: 'rotation',
          at: at.toISOString(),
          rotationGz: gzipped,
          ...(dropped > 0 ? { dropped } : {}),
        },
      }),
    );
    return { dropped };
  }

  async getRotation(): Promise<RotationState | undefined> {
    const { Item } = await this.#documents.send(
      new GetCommand({
        TableName: this.#tableName,
        Key: { pk: ofShard(ROTATION_KEY, this.#shard) },
        ConsistentRead: true,
      }),
    );
    // Gzipped since the memory of thousands of tenants outgrew the item; JSON as older versions wrote it.
    const json =
      Item?.rotationGz instanceof Uint8Array
        ? gunzipSync(Item.rotationGz).toString('utf8')
        : typeof Item?.rotationJson === 'string'
          ? Item.rotationJson
          : undefined;
    if (json === undefined) return undefined;
    const parsed = JSON.parse(json) as Partial<RotationState> | null;
    return {
      lambda: parsed?.lambda ?? {},
      fargate: parsed?.fargate ?? {},
      ...(parsed?.turns ? { turns: parsed.turns } : {}),
      ...(parsed?.freed ? { freed: parsed.freed } : {}),
      ...(parsed?.occupancy ? { occupancy: parsed.occupancy } : {}),
    };
  }

  /**
   * The scheduler's latest snapshot (eventually consistent): one of its copies in turn (a copy
   * since deleted: the first), or what this store read less than `snapshotCacheMs` ago.
   */
  async getSnapshot<T>(): Promise<T | undefined> {
    const cacheMs = this.#options.snapshotCacheMs ?? 0;
    const nowMs = this.#options.nowMs?.() ?? Date.now();
    const cached = this.#snapshotCache;
    if (cached && cacheMs > 0 && nowMs - cached.atMs >= 0 && nowMs - cached.atMs < cacheMs) return cached.value as T;
    const copy = snapshotReads++ % this.#snapshotCopiesKnown;
    let item = await this.#snapshotItem(copy);
    if (!item && copy !== 0) item = await this.#snapshotItem(0);
    const copies = item?.copies;
    this.#snapshotCopiesKnown =
      typeof copies === 'number' && Number.isInteger(copies) ? Math.min(SNAPSHOT_MAX_COPIES, Math.max(1, copies)) : 1;
    const value =
      item?.snapshotGz instanceof Uint8Array
        ? JSON.parse(gunzipSync(item.snapshotGz).toString('utf8'))
        : typeof item?.snapshotJson === 'string'
          ? JSON.parse(item.snapshotJson)
          : item?.snapshot;
    if (cacheMs > 0) this.#snapshotCache = { atMs: nowMs, value };
    return value as T | undefined;
  }

  async #snapshotItem(copy: number): Promise<Record<string, unknown> | undefined> {
    const { Item } = await this.#documents.send(
      new GetCommand({ TableName: this.#tableName, Key: { pk: snapshotKey(copy, this.#shard) } }),
    );
    return Item;
  }
}

function toSlices(item: Record<string, unknown>): CapacitySlices | undefined {
  if (typeof item.slicesJson !== 'string') return undefined;
  const parsed = JSON.parse(item.slicesJson) as CapacitySlices;
  // The item's version is what writes are conditioned on: it wins over the text's.
  return { ...parsed, version: typeof item.version === 'number' ? item.version : parsed.version };
}

function toRegistration(item: Record<string, unknown>): IntakeRegistration | undefined {
  const tier = item.tier as PriorityTier;
  if (!PRIORITY_TIERS.includes(tier)) return undefined;
  return {
    tenantId: item.tenantId as string,
    tier,
    token: item.token as string,
    scanUntilMs: typeof item.scanUntilMs === 'number' ? item.scanUntilMs : 0,
  };
}

function toTaskType(item: Record<string, unknown>): StoredTaskType {
  return {
    type: item.type as string,
    paused: item.paused === true,
    ...pickPause(item),
    updatedAt: item.updatedAt as string,
  };
}

function toTenant(item: Record<string, unknown>): StoredTenant {
  return {
    tenantId: item.tenantId as string,
    ...pickTenantSettings(item),
    ...pickPause(item),
    updatedAt: item.updatedAt as string,
  };
}

/** The pause of a write that pauses: the earlier one when it was paused already, else this one. */
function pauseRecord(previous: object | undefined, now: Date, by: string): PauseRecord {
  const earlier = previous ? pickPause(previous) : {};
  if (earlier.pausedAt) return earlier;
  return { pausedBy: by, pausedAt: now.toISOString() };
}

/** A stored cursor: an object of strings, else none (the pass starts over). */
function parseCursor(text: string): QueueScanCursor | undefined {
  try {
    const value: unknown = JSON.parse(text);
    if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
    const entries = Object.entries(value);
    return entries.length > 0 && entries.every(([, v]) => typeof v === 'string')
      ? (value as QueueScanCursor)
      : undefined;
  } catch {
    return undefined;
  }
}
