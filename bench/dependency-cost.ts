/**
 * What a dependency edge costs in DynamoDB units and SQS messages (docs/dependencies.md): the
 * production code (TaskService.submit, DependencyService's register and settle, as the AWS stream
 * function runs them) on the simulated account, which charges units as DynamoDB does (item size,
 * consistency, every GSI written: sim/aws/capacity.ts). No faults, no lag.
 *
 *   node --experimental-strip-types bench/dependency-cost.ts   (or: npm run bench -- dependency-cost)
 *
 * Rows, each per task or per edge, after subtracting what the same tasks cost without dependencies:
 * submit (the consistent read of the dependencies), register (edge + read + the dependency's mark),
 * settle (the dependency's buckets read and deleted, each dependent's write), for fan-out 1 and
 * 100 (one dependency, many dependents) and fan-in 10 (one dependent, many dependencies).
 */
import { buildServices, type Services } from '../runtime/app/wiring.ts';
import { parseConfig } from '../runtime/core/config.ts';
import { dispatch, fail, start, succeed } from '../runtime/core/lifecycle.ts';
import type { Task } from '../runtime/core/task.ts';
import { NO_TRANSPORT_FAULTS } from '../sim/aws/faults.ts';
import { SimulatedAws } from '../sim/aws/world.ts';
import { isMain } from './lib.ts';

interface Units {
  readonly read: number;
  readonly write: number;
  readonly sends: number;
}

function freshWorld(): { world: SimulatedAws; services: Services } {
  const world = new SimulatedAws({
    seed: 1,
    now: () => Date.now(),
    indexLagMs: 0,
    eventualLagMs: 0,
    unprocessedRate: 0,
    partitionLimits: null,
    sqs: { duplicateDeliveryRate: 0, earlyRedeliveryRate: 0, shortPollMissRate: 0, batchEntryFailureRate: 0 },
  });
  const services = buildServices({
    config: parseConfig({}),
    clients: world.component('bench', NO_TRANSPORT_FAULTS).clients,
    resources: world.resources,
  });
  return { world, services };
}

function unitsOf(world: SimulatedAws): Units {
  let read = 0;
  let write = 0;
  for (const units of world.dynamodb.throughput.consumed()) {
    read += units.read;
    write += units.write;
  }
  return { read, write, sends: world.sqs.sends.length };
}

/** A task QUEUED → DISPATCHED → RUNNING, as the scheduler and a worker would write it. */
async function runningTask(services: Services, tenantId: string): Promise<Task> {
  const { task } = await services.tasks.submit({ tenantId, type: 'demo.echo', payload: {}, maxAttempts: 1 });
  const dispatched = await services.store.transition(task.taskId, (t) => dispatch(t, new Date(), 120));
  return services.store.transition(task.taskId, (t) => start(t, dispatched.fence, new Date(), 60));
}

const minus = (a: Units, b: Units): Units => ({
  read: a.read - b.read,
  write: a.write - b.write,
  sends: a.sends - b.sends,
});

async function measure<T>(world: SimulatedAws, step: () => Promise<T>): Promise<{ units: Units; value: T }> {
  const before = unitsOf(world);
  const value = await step();
  return { units: minus(unitsOf(world), before), value };
}

/**
 * `dependencies` tasks RUNNING, `dependents` tasks each depending on all of them; then every
 * dependency ends `end`. Each phase's units, and the same submits and ends without dependencies.
 */
async function scenario(dependencies: number, dependents: number, end: 'SUCCEEDED' | 'FAILED') {
  const { world, services } = freshWorld();
  const tenantId = 'bench';
  const running: Task[] = [];
  for (let i = 0; i < dependencies; i++) running.push(await runningTask(services, tenantId));
  const dependsOn = running.map((task) => task.taskId);
  const submit = (withDependencies: boolean) =>
    services.tasks.submit({ tenantId, type: 'demo.echo', payload: {}, ...(withDependencies ? { dependsOn } : {}) });
  // The same submits without dependencies (the baseline subtracted from the submit row).
  const plain = await measure(world, async () => {
    for (let i = 0; i < dependents; i++) await submit(false);
  });
  const held = await measure(world, async () => {
    const tasks: Task[] = [];
    for (let i = 0; i < dependents; i++) tasks.push((await submit(true)).task);
    return tasks;
  });
  const register = await measure(world, async () => {
    for (const task of held.value)
      await services.dependencies.onChange(task.taskId, { state: 'QUEUED', previousState: null });
  });
  const ends = await measure(world, async () => {
    for (const task of running) {
      await services.store.transition(task.taskId, (current) =>
        end === 'SUCCEEDED'
          ? succeed(current, task.fence, new Date(), { ok: true })
          : fail(current, task.fence, new Date(), { name: 'Error', message: 'x', retryable: false }, 0),
      );
    }
  });
  const settle = await measure(world, async () => {
    for (const task of running)
      await services.dependencies.onChange(task.taskId, { state: end, previousState: 'RUNNING' });
  });
  const states = await Promise.all(held.value.map((task) => services.store.get(task.taskId)));
  const expected = end === 'SUCCEEDED' ? 'QUEUED' : 'CANCELLED';
  if (!states.every((task) => task?.state === expected && task.waitingOn === undefined)) {
    throw new Error(`dependents not settled: ${states.map((task) => task?.state).join(', ')}`);
  }
  return { plain: plain.units, submit: held.units, register: register.units, ends: ends.units, settle: settle.units };
}

const round = (n: number) => Math.round(n * 100) / 100;

export async function runDependencyCost(): Promise<void> {
  const rows: string[][] = [];
  const shapes = [
    { name: 'fan-out 1, succeeds', dependencies: 1, dependents: 1, end: 'SUCCEEDED' as const },
    { name: 'fan-out 100, succeeds', dependencies: 1, dependents: 100, end: 'SUCCEEDED' as const },
    { name: 'fan-out 100, fails', dependencies: 1, dependents: 100, end: 'FAILED' as const },
    { name: 'fan-in 10, succeeds', dependencies: 10, dependents: 1, end: 'SUCCEEDED' as const },
  ];
  for (const shape of shapes) {
    const result = await scenario(shape.dependencies, shape.dependents, shape.end);
    const edges = shape.dependencies * shape.dependents;
    const perEdge = (units: Units) => `${round(units.write / edges)} W / ${round(units.read / edges)} R`;
    rows.push([
      shape.name,
      perEdge(minus(result.submit, result.plain)),
      perEdge(result.register),
      perEdge(result.settle),
      `${round((result.settle.sends + result.submit.sends - result.plain.sends) / shape.dependents)}`,
      `${round((result.submit.write - result.plain.write + result.register.write + result.settle.write) / edges)}`,
    ]);
  }
  const header = ['shape', 'submit (extra)', 'register', 'settle', 'SQS sends / dependent', 'write units / edge'];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((row) => row[i]!.length)));
  const line = (cells: string[]) => cells.map((cell, i) => cell.padEnd(widths[i]!)).join('  ');
  process.stdout.write(`${line(header)}\n${rows.map(line).join('\n')}\n`);
  process.stdout.write(
    'Units per dependency edge (W = write units, R = read units, table and GSIs), beyond the same tasks without dependencies.\n',
  );
}

if (isMain(import.meta.url)) await runDependencyCost();
