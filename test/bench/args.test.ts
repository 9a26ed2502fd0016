import { describe, expect, it } from 'vitest';
import { parseBenchArgs } from '../../bench/args.ts';

const NAMES = ['policy', 'local-e2e', 'batch-ingest', 'intake-live'];

describe('npm run bench arguments', () => {
  it('takes names, --quick and --tasks', () => {
    expect(parseBenchArgs(['batch-ingest', '--tasks', '10000', '--quick'], NAMES)).toEqual({
      help: false,
      quick: true,
      tasks: 10000,
      named: ['batch-ingest'],
    });
    expect(parseBenchArgs([], NAMES)).toEqual({ help: false, quick: false, named: [] });
  });

  it('refuses a name no benchmark has, instead of running the whole suite', () => {
    expect(() => parseBenchArgs(['local-e2', '--quick'], NAMES)).toThrow(/no benchmark named "local-e2"/);
  });

  it('reads a flag value as a value, not as a name', () => {
    expect(parseBenchArgs(['intake-live', '--pool', '4', '--task-ms', '500'], NAMES).named).toEqual(['intake-live']);
    expect(parseBenchArgs(['--quick', 'policy'], NAMES).named).toEqual(['policy']);
  });

  it('asks for help', () => {
    expect(parseBenchArgs(['--help'], NAMES).help).toBe(true);
  });

  it('refuses a --tasks that is not a positive whole number', () => {
    expect(() => parseBenchArgs(['--tasks', '0'], NAMES)).toThrow(/positive whole number/);
  });
});
