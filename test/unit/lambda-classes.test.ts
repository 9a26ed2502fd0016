import { describe, expect, it } from 'vitest';
import type { WorkerMessage } from '../../runtime/adapters/queues.ts';
import { LAMBDA_MIB_PER_VCPU, lambdaWorkerClassFor } from '../../runtime/core/task.ts';
import { LAMBDA_ENTRY_CLASS, LAMBDA_WORKER, LAMBDA_WORKER_CLASSES } from '../../runtime/infra/resources.ts';
import { placeAttempt, runLambdaWorkerMessage } from '../../runtime/worker/lambda-classes.ts';
import type { AttemptDeps } from '../../runtime/worker/run-attempt.ts';

const message = (resources?: { vcpu: number; memoryMiB: number }): WorkerMessage => ({
  taskId: 't1',
  fence: 1,
  tenantId: 'a',
  type: 'demo.echo',
  ...(resources ? { resources } : {}),
});

describe('Function: lambdaWorkerClassFor', () => {
  it.each([
    ['the default task (0.25 vCPU, 512 MiB)', 0.25, 512, 512],
    ['a little more memory than 512', 0.25, 513, 2048],
    ['more vCPU than 512 MiB brings (0.289)', 0.3, 512, 2048],
    ['exactly the largest class', 1, 2048, 2048],
    ['more vCPU than 2,048 MiB brings (1.157)', 1.2, 1024, undefined],
    ['more memory than any class', 0.25, 4096, undefined],
  ])('%s → %s MiB', (_name, vcpu, memoryMiB, expected) => {
    expect(lambdaWorkerClassFor({ vcpu, memoryMiB }, LAMBDA_WORKER_CLASSES)?.memoryMiB).toBe(expected);
  });

  it('has classes in increasing memory, the entry the smallest and submit checking the largest', () => {
    const sizes = LAMBDA_WORKER_CLASSES.map((size) => size.memoryMiB);
    expect(sizes).toEqual([...sizes].sort((a, b) => a - b));
    expect(LAMBDA_ENTRY_CLASS.memoryMiB).toBe(sizes[0]);
    expect(LAMBDA_WORKER.memoryMiB).toBe(sizes.at(-1));
    // The default task (config taskDefaults) fits the entry, so it never needs a hand-off.
    expect(0.25).toBeLessThanOrEqual(LAMBDA_ENTRY_CLASS.memoryMiB / LAMBDA_MIB_PER_VCPU);
  });
});

describe('Function: placeAttempt', () => {
  it('runs at the entry what fits it and hands the rest to the smallest class that fits', () => {
    expect(placeAttempt({ vcpu: 0.25, memoryMiB: 512 }, 512)).toEqual({ kind: 'here' });
    expect(placeAttempt({ vcpu: 0.5, memoryMiB: 1024 }, 512)).toEqual({ kind: 'handoff', memoryMiB: 2048 });
  });

  it('never hands on from a class function: it is at least as big as the class it was given', () => {
    expect(placeAttempt({ vcpu: 1, memoryMiB: 2048 }, 2048)).toEqual({ kind: 'here' });
    expect(placeAttempt({ vcpu: 0.25, memoryMiB: 256 }, 2048)).toEqual({ kind: 'here' });
  });

  it('picks among any ordered classes, and sends a task beyond all of them to the largest', () => {
    const classes = [{ memoryMiB: 256 }, { memoryMiB: 1024 }, { memoryMiB: 4096 }];
    expect(placeAttempt({ vcpu: 0.1, memoryMiB: 300 }, 256, classes)).toEqual({ kind: 'handoff', memoryMiB: 1024 });
    expect(placeAttempt({ vcpu: 4, memoryMiB: 300 }, 256, classes)).toEqual({ kind: 'handoff', memoryMiB: 4096 });
    expect(() => placeAttempt({ vcpu: 0.1, memoryMiB: 300 }, 256, [])).toThrow('no Lambda worker classes');
  });
});

describe('Function: runLambdaWorkerMessage', () => {
  it('hands a bigger task on without touching the store, and says to which class', async () => {
    // Prepare: any use of the attempt's dependencies would throw.
    const untouchable = new Proxy({} as AttemptDeps, {
      get: (_target, key) => {
        throw new Error(`attempt dependency ${String(key)} used`);
      },
    });
    const handedOff: [number, WorkerMessage][] = [];
    const big = message({ vcpu: 1, memoryMiB: 2048 });

    // Act
    const outcome = await runLambdaWorkerMessage(
      { attempt: untouchable, ownMemoryMiB: 512, handOff: async (memoryMiB, m) => void handedOff.push([memoryMiB, m]) },
      big,
    );

    // Assess
    expect(outcome).toEqual({ kind: 'handed-off', memoryMiB: 2048 });
    expect(handedOff).toEqual([[2048, big]]);
  });

  it('places by the embedded task first, then by the message resources', async () => {
    const handedOff: number[] = [];
    const deps = {
      attempt: {} as AttemptDeps,
      ownMemoryMiB: 512,
      handOff: async (memoryMiB: number) => void handedOff.push(memoryMiB),
    };
    const embedded = { ...message({ vcpu: 0.25, memoryMiB: 512 }), task: { resources: { vcpu: 1, memoryMiB: 2048 } } };
    await runLambdaWorkerMessage(deps, embedded as WorkerMessage);
    expect(handedOff).toEqual([2048]);
  });

  it('reads the item of a message that does not say what its task needs, and hands on the message, not the item', async () => {
    // Prepare: a message from a scheduler older than the classes, for a 2,048 MiB task.
    const reads: string[] = [];
    const stored = { taskId: 't1', fence: 1, resources: { vcpu: 1, memoryMiB: 2048 }, payload: { big: 'x' } };
    const attempt = {
      store: {
        get: async (taskId: string) => {
          reads.push(taskId);
          return stored;
        },
      },
    } as unknown as AttemptDeps;
    const handedOff: [number, WorkerMessage][] = [];

    // Act
    const outcome = await runLambdaWorkerMessage(
      { attempt, ownMemoryMiB: 512, handOff: async (memoryMiB, m) => void handedOff.push([memoryMiB, m]) },
      message(),
    );

    // Assess
    expect(reads).toEqual(['t1']);
    expect(outcome).toEqual({ kind: 'handed-off', memoryMiB: 2048 });
    expect(handedOff).toEqual([[2048, { ...message(), resources: stored.resources }]]);
  });

  it('fails (so the message comes back) when the hand-off cannot be made', async () => {
    const failing = runLambdaWorkerMessage(
      {
        attempt: {} as AttemptDeps,
        ownMemoryMiB: 512,
        handOff: async () => {
          throw new Error('invoke refused');
        },
      },
      message({ vcpu: 1, memoryMiB: 2048 }),
    );
    await expect(failing).rejects.toThrow('invoke refused');
  });
});
