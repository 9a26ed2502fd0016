/**
 * A sharded scheduler's allowance (SchedulingPolicy.setAllowance): "fits now" is asked of it,
 * "never fits" of the whole pool; and what the scheduler reports for its slices (sliceReport).
 */
import { describe, expect, it } from 'vitest';
import { capacity } from '../../../runtime/core/policy/constraints.ts';
import { candidate, drain, makePolicy } from './helpers.ts';

const slots = (n: number) => ({ slots: n, milliVcpu: 16_000, memoryMiB: 32_768 });

describe('Class: SchedulingPolicy', () => {
  describe('Method: setAllowance', () => {
    it('starts Lambda tasks only within the allowance, and within the pool again once unset', () => {
      // Prepare
      const policy = makePolicy({ pools: { slots: 10 } });
      for (let i = 0; i < 12; i++) policy.add(candidate({ taskId: `l${i}` }));
      // Act
      policy.setAllowance(slots(4));
      const first = drain(policy, 1);
      policy.setAllowance(undefined);
      const second = drain(policy, 2);
      // Assess
      expect(first).toHaveLength(4);
      expect(second).toHaveLength(6);
    });

    it('starts nothing while it uses more than a smaller allowance, then fills up to it as tasks end', () => {
      const policy = makePolicy({ pools: { slots: 10 } });
      for (let i = 0; i < 10; i++) policy.add(candidate({ taskId: `l${i}` }));
      const running = drain(policy, 1).map((task) => task.taskId);
      expect(running).toHaveLength(10);
      policy.add(candidate({ taskId: 'late' }));
      policy.setAllowance(slots(4));
      for (const taskId of running.slice(0, 6)) policy.release(taskId);
      expect(drain(policy, 2)).toHaveLength(0);
      policy.release(running[6] as string);
      expect(drain(policy, 3).map((task) => task.taskId)).toEqual(['late']);
      expect(policy.explain('late', 3)).toBeUndefined();
    });

    it('keeps a Fargate task bigger than the allowance waiting (not unschedulable), and one bigger than the pool never fits', () => {
      const policy = makePolicy({ pools: { vcpu: 16, memoryMiB: 32_768 }, reservations: false });
      policy.setAllowance({ slots: 10, milliVcpu: 4000, memoryMiB: 8192 });
      policy.add(candidate({ taskId: 'big', runtime: 'fargate', resources: { vcpu: 8, memoryMiB: 4096 } }));
      policy.add(candidate({ taskId: 'huge', runtime: 'fargate', resources: { vcpu: 32, memoryMiB: 4096 } }));
      for (let i = 0; i < 6; i++) {
        policy.add(candidate({ taskId: `s${i}`, runtime: 'fargate', resources: { vcpu: 1, memoryMiB: 1024 } }));
      }
      expect(drain(policy, 1).map((task) => task.taskId)).toEqual(['s0', 's1', 's2', 's3']);
      // The pool has room (4 of 16 vCPU in use); the shard's allowance (4) has not: it says so.
      expect(policy.explain('big', 1)).toMatchObject({
        reason: 'capacity',
        message:
          "Its scheduler shard's allowance of the fargate pool is in use (the other shards hold the rest, by their demand)",
      });
      expect(policy.explain('huge', 1)?.message).toBe('It is bigger than the whole fargate pool');
      expect(policy.snapshot(1).unschedulable).toBe(1);
      // The allowance grows to the pool: the large task fits beside the small ones.
      policy.setAllowance({ slots: 10, milliVcpu: 16_000, memoryMiB: 32_768 });
      expect(drain(policy, 2).map((task) => task.taskId)).toEqual(['big', 's4', 's5']);
    });

    it('never lets an allowance above the pool start more than the pool', () => {
      const policy = makePolicy({ pools: { slots: 3 } });
      for (let i = 0; i < 5; i++) policy.add(candidate({ taskId: `l${i}` }));
      policy.setAllowance(slots(50));
      expect(drain(policy, 1)).toHaveLength(3);
    });
  });

  describe('Method: sliceReport', () => {
    it('reports what is held, the weight of tenants with ready or running work per pool, and the largest head', () => {
      const policy = makePolicy({
        pools: { slots: 2 },
        tenants: {
          a: { weight: 3, maxConcurrency: 100 },
          b: { weight: 1, maxConcurrency: 100 },
          c: { weight: 5, maxConcurrency: 100 },
        },
      });
      policy.add(candidate({ taskId: 'a1', tenantId: 'a' }));
      policy.add(candidate({ taskId: 'a2', tenantId: 'a' }));
      policy.add(
        candidate({ taskId: 'b1', tenantId: 'b', runtime: 'fargate', resources: { vcpu: 2, memoryMiB: 1024 } }),
      );
      policy.add(
        candidate({ taskId: 'b2', tenantId: 'b', runtime: 'fargate', resources: { vcpu: 1, memoryMiB: 4096 } }),
      );
      // c's only task is delayed: it needs nothing yet.
      policy.add(candidate({ taskId: 'c1', tenantId: 'c', runAtMs: 60_000 }));
      policy.setAllowance({ slots: 1, milliVcpu: 0, memoryMiB: 0 });
      expect(drain(policy, 1).map((task) => task.taskId)).toEqual(['a1']);

      const report = policy.sliceReport(1);

      expect(report.held).toEqual({ slots: 1, milliVcpu: 0, memoryMiB: 0 });
      expect(report.weight).toEqual({ lambda: 3, fargate: 1 });
      // b's head is its first task (2 vCPU, 1 GiB); a's head is a Lambda slot.
      expect(report.need).toEqual({ slots: 1, milliVcpu: 2000, memoryMiB: 1024 });
      // Held plus every ready task: a2's slot, b1's and b2's vCPU and memory (c1 is delayed).
      expect(report.wants).toEqual({ slots: 2, milliVcpu: 3000, memoryMiB: 5120 });
      policy.release('a1');
      policy.remove('a2');
      expect(policy.sliceReport(2).weight).toEqual({ lambda: 0, fargate: 1 });
      // A paused tenant's waiting work is neither weight nor want.
      policy.setTenant('b', { weight: 1, maxConcurrency: 100, paused: true });
      expect(policy.sliceReport(3)).toMatchObject({
        weight: { lambda: 0, fargate: 0 },
        wants: { slots: 0, milliVcpu: 0, memoryMiB: 0 },
      });
    });
  });
});

describe('Unit: capacity.hold with an allowance', () => {
  const pool = { slots: 10, milliVcpu: 8000, memoryMiB: 8192 };
  const demand = { slots: 0, milliVcpu: 4000, memoryMiB: 1024 };
  const none = { slots: 0, milliVcpu: 0, memoryMiB: 0 };

  it('asks "fits now" of the allowance and "never" of the pool', () => {
    expect(capacity.hold(demand, none, pool, 'fargate')).toBeUndefined();
    expect(capacity.hold(demand, none, pool, 'fargate', { ...pool, milliVcpu: 2000 })).toEqual({
      constraint: 'capacity',
      runtime: 'fargate',
      never: false,
      byAllowance: true,
    });
    expect(capacity.hold({ ...demand, milliVcpu: 9000 }, none, pool, 'fargate', pool)?.never).toBe(true);
  });
});
