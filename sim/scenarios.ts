/**
 * Workload scenarios. Each builds a deterministic trace from (tasks, tenants, seed). Quotas are
 * set out of the way (maxConcurrency far above any pool) so the comparison with peers' orderings
 * is about order, not about a limit only our policy enforces.
 */
import type { Pools } from '../runtime/core/policy/types.ts';
import type { TenantSettings } from '../runtime/core/task.ts';
import { Prng } from './prng.ts';
import { type Trace, TraceBuilder } from './trace.ts';

export interface ScenarioOptions {
  readonly tasks: number;
  readonly tenants: number;
  readonly seed: number;
}

interface Scenario {
  readonly description: string;
  readonly defaults: { readonly tasks: number; readonly tenants: number };
  build(options: ScenarioOptions): Trace;
}

const NO_QUOTA = 1_000_000;
const POOLS: Pools = { lambda: { concurrency: 50 }, fargate: { vcpu: 16, memoryMiB: 32_768 } };
const LAMBDA = { vcpu: 0.25, memoryMiB: 512 };
const CRITICAL = 0;
const NORMAL = 2;
const LOW = 3;

const tenantIds = (count: number, name: (i: number) => string) => Array.from({ length: count }, (_, i) => name(i));
const evenSettings = (count: number): TenantSettings[] =>
  Array.from({ length: count }, () => ({ weight: 1, maxConcurrency: NO_QUOTA }));

export const SCENARIOS: Record<string, Scenario> = {
  'priority-flood': {
    description:
      'Critical work arrives 10% faster than the Lambda pool drains it; 1% low-tier batch tasks arrive meanwhile. ' +
      'Strict priority starves the low tier for the whole flood; aging bounds its wait.',
    defaults: { tasks: 20_000, tenants: 5 },
    build({ tasks, tenants, seed }) {
      const rng = new Prng(seed);
      const meanHoldMs = 10_000;
      const slots = POOLS.lambda.concurrency;
      const lowCount = Math.max(10, Math.round(tasks * 0.01));
      const criticalCount = tasks - lowCount;
      const interArrivalMs = meanHoldMs / slots / 1.1;
      const trace = new TraceBuilder(tasks);
      const floodTenants = Math.max(1, tenants - 1);
      let t = 0;
      for (let i = 0; i < criticalCount; i++) {
        t += rng.exponential(interArrivalMs);
        trace.push({
          tenant: 1 + (i % floodTenants),
          tier: CRITICAL,
          fargate: false,
          ...LAMBDA,
          arriveMs: t,
          holdMs: rng.exponential(meanHoldMs),
        });
      }
      const floodEndMs = t;
      for (let i = 0; i < lowCount; i++) {
        const arriveMs = rng.next() * floodEndMs * 0.5;
        trace.push({ tenant: 0, tier: LOW, fargate: false, ...LAMBDA, arriveMs, holdMs: rng.exponential(meanHoldMs) });
      }
      return trace.build({
        scenario: 'priority-flood',
        description: this.description,
        tenantIds: tenantIds(floodTenants + 1, (i) => (i === 0 ? 'batch' : `online-${i}`)),
        tenantSettings: evenSettings(floodTenants + 1),
        pools: POOLS,
        agingSeconds: 60,
      });
    },
  },

  'noisy-neighbour': {
    description:
      'Tenant "noisy" submits 60% of all tasks in a 10 s burst; the other tenants submit steadily at half the ' +
      "pool's rate. FIFO makes everyone queue behind the burst; fair share serves the quiet tenants at once.",
    defaults: { tasks: 20_000, tenants: 10 },
    build({ tasks, tenants, seed }) {
      const rng = new Prng(seed);
      const meanHoldMs = 5_000;
      const slots = POOLS.lambda.concurrency;
      const burst = Math.round(tasks * 0.6);
      const steady = tasks - burst;
      const drainMs = (tasks * meanHoldMs) / slots;
      const trace = new TraceBuilder(tasks);
      for (let i = 0; i < burst; i++) {
        trace.push({
          tenant: 0,
          tier: NORMAL,
          fargate: false,
          ...LAMBDA,
          arriveMs: rng.next() * 10_000,
          holdMs: rng.exponential(meanHoldMs),
        });
      }
      const quiet = Math.max(1, tenants - 1);
      for (let i = 0; i < steady; i++) {
        trace.push({
          tenant: 1 + rng.int(quiet),
          tier: NORMAL,
          fargate: false,
          ...LAMBDA,
          arriveMs: rng.next() * drainMs,
          holdMs: rng.exponential(meanHoldMs),
        });
      }
      return trace.build({
        scenario: 'noisy-neighbour',
        description: this.description,
        tenantIds: tenantIds(quiet + 1, (i) => (i === 0 ? 'noisy' : `quiet-${i}`)),
        tenantSettings: evenSettings(quiet + 1),
        pools: POOLS,
        agingSeconds: 300,
      });
    },
  },

  crowd: {
    description:
      'As many backlogged tenants as Lambda slots (each a burst at once), and quiet tenants submitting steadily ' +
      "at a tenth of the pool's rate. Each crowd tenant holds about one slot; when its task ends it is back at " +
      'share 0, level with the quiet tenants, and under fair-share the tie goes to the older head: FIFO across ' +
      'tenants (docs/policy.md, Limits). Round-robin rotates.',
    defaults: { tasks: 20_000, tenants: 60 },
    build({ tasks, tenants, seed }) {
      const rng = new Prng(seed);
      const meanHoldMs = 5_000;
      const slots = POOLS.lambda.concurrency;
      const crowd = Math.min(slots, Math.max(1, tenants - 1));
      const quiet = Math.max(1, tenants - crowd);
      const steady = Math.max(quiet, Math.round(tasks * 0.05));
      const burst = tasks - steady;
      const drainMs = (tasks * meanHoldMs) / slots;
      const trace = new TraceBuilder(tasks);
      for (let i = 0; i < burst; i++) {
        trace.push({
          tenant: i % crowd,
          tier: NORMAL,
          fargate: false,
          ...LAMBDA,
          arriveMs: rng.next() * 1_000,
          holdMs: rng.exponential(meanHoldMs),
        });
      }
      for (let i = 0; i < steady; i++) {
        trace.push({
          tenant: crowd + (i % quiet),
          tier: NORMAL,
          fargate: false,
          ...LAMBDA,
          arriveMs: rng.next() * drainMs,
          holdMs: rng.exponential(meanHoldMs),
        });
      }
      return trace.build({
        scenario: 'crowd',
        description: this.description,
        tenantIds: tenantIds(crowd + quiet, (i) => (i < crowd ? `crowd-${i}` : `quiet-${i - crowd}`)),
        tenantSettings: evenSettings(crowd + quiet),
        pools: POOLS,
        agingSeconds: 300,
      });
    },
  },

  'mixed-sizes': {
    description:
      'Many small Lambda tasks, many small Fargate tasks (0.25 vCPU) and few big Fargate tasks (4 vCPU, 8 GiB) ' +
      'from different tenants, the Fargate pool 10% overloaded. Big tasks are common (72% of Fargate demand): ' +
      'one that ends hands its capacity to the next, so reservations buy nothing here (compare *-backfill).',
    defaults: { tasks: 20_000, tenants: 6 },
    build({ tasks, tenants, seed }) {
      const rng = new Prng(seed);
      const groups = Math.max(3, tenants);
      // Tenants cycle through the three kinds: lambda, small fargate, big fargate.
      const kindOf = (tenant: number) => tenant % 3;
      const tenantsOfKind = (kind: number) =>
        Array.from({ length: groups }, (_, i) => i).filter((i) => kindOf(i) === kind);
      const lambdaTenants = tenantsOfKind(0);
      const smallTenants = tenantsOfKind(1);
      const bigTenants = tenantsOfKind(2);
      // Holds are 0.5–1.5 × holdMs; the timeout is the top of that range.
      const big = { vcpu: 4, memoryMiB: 8192, holdMs: 30_000 };
      const small = { vcpu: 0.25, memoryMiB: 512, holdMs: 10_000 };
      // Fargate demand: big tasks are 5% of Fargate tasks by count.
      const vcpuSecondsPerFargateTask =
        0.05 * big.vcpu * (big.holdMs / 1000) + 0.95 * small.vcpu * (small.holdMs / 1000);
      const fargateRatePerSecond = (1.1 * POOLS.fargate.vcpu) / vcpuSecondsPerFargateTask;
      const fargateCount = Math.round(tasks * 0.5);
      const horizonMs = (fargateCount / fargateRatePerSecond) * 1000;
      const trace = new TraceBuilder(tasks);
      const pick = (list: number[]) => list[rng.int(list.length)] as number;
      for (let i = 0; i < fargateCount; i++) {
        const isBig = rng.next() < 0.05;
        const size = isBig ? big : small;
        trace.push({
          tenant: pick(isBig ? bigTenants : smallTenants),
          tier: NORMAL,
          fargate: true,
          vcpu: size.vcpu,
          memoryMiB: size.memoryMiB,
          arriveMs: rng.next() * horizonMs,
          holdMs: size.holdMs * (0.5 + rng.next()),
          timeoutMs: size.holdMs * 1.5,
        });
      }
      for (let i = fargateCount; i < tasks; i++) {
        trace.push({
          tenant: pick(lambdaTenants),
          tier: NORMAL,
          fargate: false,
          ...LAMBDA,
          arriveMs: rng.next() * horizonMs,
          holdMs: rng.exponential(((horizonMs / (tasks - fargateCount)) * POOLS.lambda.concurrency) / 1.1),
        });
      }
      const names = ['fn', 'small-ft', 'big-ft'];
      return trace.build({
        scenario: 'mixed-sizes',
        description: this.description,
        tenantIds: tenantIds(groups, (i) => `${names[kindOf(i)]}-${Math.floor(i / 3)}`),
        tenantSettings: evenSettings(groups),
        pools: POOLS,
        agingSeconds: 300,
      });
    },
  },

  'rare-big': {
    description:
      'A stream of small Fargate tasks (0.25 vCPU) keeps the pool 10% overloaded; one tenant submits a few ' +
      'half-pool tasks (8 vCPU, 16 GiB), 0.2% of the tasks. Nothing else of their size runs to hand them its ' +
      'capacity, so without a reservation they wait for the stream to end.',
    defaults: { tasks: 20_000, tenants: 4 },
    build({ tasks, tenants, seed }) {
      const rng = new Prng(seed);
      const small = { vcpu: 0.25, memoryMiB: 512, holdMs: 10_000 };
      const big = { vcpu: 8, memoryMiB: 16_384, holdMs: 30_000 };
      const bigCount = Math.max(5, Math.round(tasks * 0.002));
      const smallCount = tasks - bigCount;
      const smallTenants = Math.max(1, tenants - 1);
      const horizonMs = (smallCount * small.vcpu * small.holdMs) / (1.1 * POOLS.fargate.vcpu);
      const trace = new TraceBuilder(tasks);
      for (let i = 0; i < smallCount; i++) {
        trace.push({
          tenant: 1 + (i % smallTenants),
          tier: NORMAL,
          fargate: true,
          vcpu: small.vcpu,
          memoryMiB: small.memoryMiB,
          arriveMs: rng.next() * horizonMs,
          holdMs: small.holdMs * (0.5 + rng.next()),
          timeoutMs: small.holdMs * 1.5,
        });
      }
      for (let i = 0; i < bigCount; i++) {
        trace.push({
          tenant: 0,
          tier: NORMAL,
          fargate: true,
          vcpu: big.vcpu,
          memoryMiB: big.memoryMiB,
          arriveMs: (0.1 + 0.6 * rng.next()) * horizonMs,
          holdMs: big.holdMs * (0.5 + rng.next()),
          timeoutMs: big.holdMs * 1.5,
        });
      }
      return trace.build({
        scenario: 'rare-big',
        description: this.description,
        tenantIds: tenantIds(smallTenants + 1, (i) => (i === 0 ? 'big' : `small-${i}`)),
        tenantSettings: evenSettings(smallTenants + 1),
        pools: POOLS,
        agingSeconds: 300,
      });
    },
  },

  weighted: {
    description:
      'Tenants of weight 1, 2 and 4 (cycling) each submit the same backlog at once. Weighted DRF gives them ' +
      'capacity 1:2:4; round-robin and FIFO ignore weights.',
    defaults: { tasks: 21_000, tenants: 3 },
    build({ tasks, tenants, seed }) {
      const rng = new Prng(seed);
      const trace = new TraceBuilder(tasks);
      for (let i = 0; i < tasks; i++) {
        trace.push({
          tenant: i % tenants,
          tier: NORMAL,
          fargate: false,
          ...LAMBDA,
          arriveMs: rng.next() * 1000,
          holdMs: rng.exponential(5000),
        });
      }
      const weights = [1, 2, 4];
      return trace.build({
        scenario: 'weighted',
        description: this.description,
        tenantIds: tenantIds(tenants, (i) => `w${weights[i % 3]}-${i}`),
        tenantSettings: Array.from({ length: tenants }, (_, i) => ({
          weight: weights[i % 3] as number,
          maxConcurrency: NO_QUOTA,
        })),
        pools: POOLS,
        agingSeconds: 300,
      });
    },
  },
};

export const SCENARIO_NAMES = Object.keys(SCENARIOS);

/** Options left out or `undefined` take the scenario's defaults. */
export function buildScenario(
  name: string,
  options: { readonly [K in keyof ScenarioOptions]?: ScenarioOptions[K] | undefined },
): Trace {
  const scenario = SCENARIOS[name];
  if (!scenario) throw new Error(`Unknown scenario "${name}". Known: ${SCENARIO_NAMES.join(', ')}`);
  return scenario.build({
    tasks: options.tasks ?? scenario.defaults.tasks,
    tenants: options.tenants ?? scenario.defaults.tenants,
    seed: options.seed ?? 1,
  });
}
