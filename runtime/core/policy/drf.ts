/**
 * Weighted Dominant Resource Fairness (Ghodsi et al., NSDI 2011) over the pools' resources:
 * Lambda concurrency slots, Fargate vCPU and Fargate memory. A Lambda task uses one slot; a
 * Fargate task uses its vCPU and memory. A tenant's dominant share is the largest fraction of
 * any one resource it holds, divided by its weight; the next dispatch goes to the backlogged
 * tenant with the smallest one whose head task fits. A tenant of many small tasks and one of few
 * large ones are thus compared on the resource each actually exhausts.
 */
import type { Runtime, TaskResources } from '../task.ts';
import type { Pools, ResourceVector } from './types.ts';

export const zeroVector = (): ResourceVector => ({ slots: 0, milliVcpu: 0, memoryMiB: 0 });

/** vCPU in integer milli-units, so sums and differences are exact. */
export const toMilliVcpu = (vcpu: number): number => Math.round(vcpu * 1000);

export function capacityOf(pools: Pools): ResourceVector {
  return {
    slots: pools.lambda.concurrency,
    milliVcpu: toMilliVcpu(pools.fargate.vcpu),
    memoryMiB: pools.fargate.memoryMiB,
  };
}

/** What one task takes from its pool. */
export function demandOf(runtime: Runtime, resources: TaskResources): ResourceVector {
  return runtime === 'lambda'
    ? { slots: 1, milliVcpu: 0, memoryMiB: 0 }
    : { slots: 0, milliVcpu: toMilliVcpu(resources.vcpu), memoryMiB: resources.memoryMiB };
}

export function addInto(target: ResourceVector, delta: ResourceVector, sign: 1 | -1): void {
  target.slots += sign * delta.slots;
  target.milliVcpu += sign * delta.milliVcpu;
  target.memoryMiB += sign * delta.memoryMiB;
}

/** max over resources of used / capacity (a resource with no capacity counts as 0). */
export function dominantShare(used: ResourceVector, capacity: ResourceVector): number {
  const ratio = (u: number, c: number) => (c > 0 ? u / c : 0);
  return Math.max(
    ratio(used.slots, capacity.slots),
    ratio(used.milliVcpu, capacity.milliVcpu),
    ratio(used.memoryMiB, capacity.memoryMiB),
  );
}

export function weightedDominantShare(used: ResourceVector, capacity: ResourceVector, weight: number): number {
  return dominantShare(used, capacity) / weight;
}

/**
 * Jain's fairness index of x₁…xₙ: (Σx)² / (n·Σx²). 1 when all are equal, 1/n when one holds
 * everything. Applied to weighted dominant shares it measures how evenly DRF served tenants.
 */
export function jainIndex(values: readonly number[]): number {
  let sum = 0;
  let sumOfSquares = 0;
  for (const value of values) {
    sum += value;
    sumOfSquares += value * value;
  }
  return sumOfSquares === 0 ? 1 : (sum * sum) / (values.length * sumOfSquares);
}
