/**
 * A workload trace: struct-of-arrays so a million tasks cost a few typed arrays, not a million
 * objects. Tasks are sorted by arrival.
 */
import type { Pools } from '../runtime/core/policy/types.ts';
import { PRIORITY_TIERS, type TenantSettings } from '../runtime/core/task.ts';

export interface Trace {
  readonly scenario: string;
  readonly description: string;
  readonly size: number;
  readonly tenantIds: readonly string[];
  readonly tenantSettings: readonly TenantSettings[];
  readonly pools: Pools;
  readonly agingSeconds: number;
  /** Per task: */
  readonly tenant: Int32Array;
  readonly tier: Uint8Array;
  /** 0 = lambda, 1 = fargate. */
  readonly runtime: Uint8Array;
  readonly vcpu: Float32Array;
  readonly memoryMiB: Int32Array;
  readonly arriveMs: Float64Array;
  readonly holdMs: Float64Array;
  /**
   * The longest each task may hold its pool (its timeout, ms; ≥ its hold). Scenarios that do not
   * set one get their pool's longest hold, the cap every task keeps (the wait bound rests on it).
   */
  readonly timeoutMs: Float64Array;
}

export interface TaskSpec {
  tenant: number;
  tier: number;
  fargate: boolean;
  vcpu: number;
  memoryMiB: number;
  arriveMs: number;
  holdMs: number;
  /** Its timeout (ms); default: the pool's longest hold in the trace. */
  timeoutMs?: number;
}

/** Collects tasks in any order and freezes them into a Trace sorted by arrival. */
export class TraceBuilder {
  readonly #capacity: number;
  readonly #tenant: Int32Array;
  readonly #tier: Uint8Array;
  readonly #runtime: Uint8Array;
  readonly #vcpu: Float32Array;
  readonly #memoryMiB: Int32Array;
  readonly #arriveMs: Float64Array;
  readonly #holdMs: Float64Array;
  readonly #timeoutMs: Float64Array;
  #size = 0;

  constructor(capacity: number) {
    this.#capacity = capacity;
    this.#tenant = new Int32Array(capacity);
    this.#tier = new Uint8Array(capacity);
    this.#runtime = new Uint8Array(capacity);
    this.#vcpu = new Float32Array(capacity);
    this.#memoryMiB = new Int32Array(capacity);
    this.#arriveMs = new Float64Array(capacity);
    this.#holdMs = new Float64Array(capacity);
    this.#timeoutMs = new Float64Array(capacity);
  }

  push(task: TaskSpec): void {
    if (this.#size >= this.#capacity) return;
    const i = this.#size++;
    this.#tenant[i] = task.tenant;
    this.#tier[i] = task.tier;
    this.#runtime[i] = task.fargate ? 1 : 0;
    this.#vcpu[i] = task.vcpu;
    this.#memoryMiB[i] = task.memoryMiB;
    this.#arriveMs[i] = Math.round(task.arriveMs);
    this.#holdMs[i] = Math.max(1, Math.round(task.holdMs));
    this.#timeoutMs[i] =
      task.timeoutMs === undefined ? Number.NaN : Math.max(this.#holdMs[i] as number, Math.ceil(task.timeoutMs));
  }

  build(
    meta: Pick<Trace, 'scenario' | 'description' | 'tenantIds' | 'tenantSettings' | 'pools' | 'agingSeconds'>,
  ): Trace {
    const n = this.#size;
    const order = new Uint32Array(n);
    for (let i = 0; i < n; i++) order[i] = i;
    const arrive = this.#arriveMs;
    // Stable by arrival: ties keep submission order.
    const sorted = Array.from(order).sort((a, b) => (arrive[a] as number) - (arrive[b] as number) || a - b);
    const pick = <T extends Int32Array | Uint8Array | Float32Array | Float64Array>(source: T, target: T): T => {
      for (let i = 0; i < n; i++) target[i] = source[sorted[i] as number] as number;
      return target;
    };
    // A task without a timeout gets its pool's longest hold, in whole seconds.
    const cap = [0, 0];
    for (let i = 0; i < n; i++) {
      const pool = this.#runtime[i] as number;
      cap[pool] = Math.max(cap[pool] as number, Math.ceil((this.#holdMs[i] as number) / 1000) * 1000);
    }
    for (let i = 0; i < n; i++) {
      if (Number.isNaN(this.#timeoutMs[i])) this.#timeoutMs[i] = cap[this.#runtime[i] as number] as number;
    }
    return {
      ...meta,
      size: n,
      tenant: pick(this.#tenant, new Int32Array(n)),
      tier: pick(this.#tier, new Uint8Array(n)),
      runtime: pick(this.#runtime, new Uint8Array(n)),
      vcpu: pick(this.#vcpu, new Float32Array(n)),
      memoryMiB: pick(this.#memoryMiB, new Int32Array(n)),
      arriveMs: pick(this.#arriveMs, new Float64Array(n)),
      holdMs: pick(this.#holdMs, new Float64Array(n)),
      timeoutMs: pick(this.#timeoutMs, new Float64Array(n)),
    };
  }
}

export const tierName = (tier: number) => PRIORITY_TIERS[tier] ?? 'normal';

/** The longest timeout of each pool's tasks in the trace (the pools' caps), whole seconds (at least 1). */
export function maxHoldSeconds(trace: Trace): { lambda: number; fargate: number } {
  let lambda = 0;
  let fargate = 0;
  for (let i = 0; i < trace.size; i++) {
    const timeout = trace.timeoutMs[i] as number;
    if (trace.runtime[i] === 0) lambda = Math.max(lambda, timeout);
    else fargate = Math.max(fargate, timeout);
  }
  return { lambda: Math.max(1, Math.ceil(lambda / 1000)), fargate: Math.max(1, Math.ceil(fargate / 1000)) };
}
