/**
 * The stack for a concrete account and region (what bin/app.ts builds whenever the CDK CLI knows
 * the account, i.e. every real deploy) and the environment-agnostic one (`cdk synth` offline):
 * neither looks anything up in AWS at synth, and the concrete one names only the region asked
 * for. cdk-nag for both forms: test/stack/nag.test.ts.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { deployEnvironment } from '../../lib/deploy-environment.ts';
import { REPO_ROOT, synthesize } from './helpers.ts';

/** Every literal region code in a template, e.g. `eu-west-1` (partition prefixes included: `us-gov-west-1`). */
function literalRegions(template: unknown): string[] {
  const text = JSON.stringify(template);
  return [...new Set(text.match(/\b(?:[a-z]{2}-(?:gov-|iso[a-z]?-)?[a-z]+-\d)\b/g) ?? [])].sort();
}

const concrete = { account: '123456789012', region: 'eu-west-1' };

describe('TaskSchedulerStack environments', () => {
  it('for a concrete account and region: nothing is looked up at synth, and every ARN names that region', () => {
    // Act
    const { app, stack, template } = synthesize({ env: concrete });
    const assembly = app.synth();

    // Assess: a missing context value is a lookup the CLI would make with credentials (the
    // availability zones, before TaskSchedulerStack.availabilityZones).
    expect(assembly.manifest.missing ?? []).toEqual([]);
    expect(assembly.getStackByName(stack.stackName).environment).toMatchObject(concrete);
    const json = template.toJSON();
    expect(literalRegions(json)).toEqual(['eu-west-1']);
    const arnRegions = new Set(
      [...JSON.stringify(json).matchAll(/arn:aws[a-z-]*:[a-z0-9-]+:([a-z0-9-]*):/g)].map((match) => match[1]),
    );
    expect([...arnRegions].filter((region) => region !== '' && region !== 'eu-west-1')).toEqual([]);
    // The zones are CloudFormation's (Fn::GetAZs) as in the agnostic form, not a dummy placeholder.
    expect(JSON.stringify(json)).not.toContain('dummy1');
    expect(stack.resolve(stack.availabilityZones)).toEqual([
      { 'Fn::Select': [0, { 'Fn::GetAZs': '' }] },
      { 'Fn::Select': [1, { 'Fn::GetAZs': '' }] },
    ]);
  });

  it('environment-agnostic: no lookup and no literal region', () => {
    const { app, template } = synthesize();
    expect(app.synth().manifest.missing ?? []).toEqual([]);
    expect(literalRegions(template.toJSON())).toEqual([]);
  });
});

describe('bin/app.ts: the environment it builds for', () => {
  const outdirs: string[] = [];
  afterAll(() => {
    for (const dir of outdirs) rmSync(dir, { recursive: true, force: true });
  });

  /** Run the app as the CDK CLI does (context in CDK_CONTEXT_JSON, bundling skipped), no credentials. */
  function runApp(env: Record<string, string>) {
    const outdir = mkdtempSync(path.join(tmpdir(), 'app-env-'));
    outdirs.push(outdir);
    const inherited = Object.fromEntries(
      Object.entries(process.env).filter(([key]) => !/^(CDK_|AWS_)/.test(key) && key !== 'SCHEDULER_CONFIG'),
    );
    const result = spawnSync(
      process.execPath,
      ['--experimental-strip-types', '--no-warnings=ExperimentalWarning', 'bin/app.ts'],
      {
        cwd: REPO_ROOT,
        env: {
          ...inherited,
          CDK_OUTDIR: outdir,
          CDK_CONTEXT_JSON: JSON.stringify({ 'aws:cdk:bundling-stacks': [] }),
          ...env,
        },
        encoding: 'utf8',
      },
    );
    const manifest = JSON.parse(readFileSync(path.join(outdir, 'manifest.json'), 'utf8')) as {
      artifacts: Record<string, { type: string; environment?: string }>;
      missing?: unknown[];
    };
    const template = JSON.parse(readFileSync(path.join(outdir, 'TaskScheduler.template.json'), 'utf8')) as unknown;
    return { result, environment: manifest.artifacts.TaskScheduler?.environment, manifest, template };
  }

  // One whole synth in a child process: minutes on a loaded machine.
  it('builds for CDK_DEPLOY_ACCOUNT / CDK_DEPLOY_REGION over the CLI-set defaults, offline, and says nothing', {
    timeout: 240_000,
  }, () => {
    // The CLI sets CDK_DEFAULT_REGION itself (us-east-1 when nothing else names a region).
    const { result, environment, manifest, template } = runApp({
      CDK_DEFAULT_ACCOUNT: '123456789012',
      CDK_DEFAULT_REGION: 'us-east-1',
      CDK_DEPLOY_REGION: 'eu-west-1',
    });
    expect(result.status, result.stderr).toBe(0);
    expect(environment).toBe('aws://123456789012/eu-west-1');
    expect(manifest.missing ?? []).toEqual([]);
    expect(literalRegions(template)).toEqual(['eu-west-1']);
    expect(result.stderr).toBe('');
  });
});

describe('deployEnvironment (lib/deploy-environment.ts)', () => {
  const cli = { CDK_DEFAULT_ACCOUNT: '123456789012', CDK_DEFAULT_REGION: 'us-east-1' };

  it.each([
    ['no account: environment-agnostic', { CDK_DEFAULT_REGION: 'eu-west-1' }, undefined],
    [
      "the CLI's account and region (AWS_REGION chose it)",
      { ...cli, AWS_REGION: 'us-east-1' },
      { account: '123456789012', region: 'us-east-1' },
    ],
    [
      'CDK_DEPLOY_* over the CLI-set CDK_DEFAULT_*',
      { ...cli, CDK_DEPLOY_ACCOUNT: '210987654321', CDK_DEPLOY_REGION: 'eu-west-1' },
      { account: '210987654321', region: 'eu-west-1' },
    ],
    ['CDK_DEPLOY_REGION alone', { ...cli, CDK_DEPLOY_REGION: 'eu-west-1' }, { ...concrete }],
  ])('%s', (_name, variables, expected) => {
    const { env, notice } = deployEnvironment(variables, 'TaskScheduler');
    expect(env).toEqual(expected);
    expect(notice).toBeUndefined();
  });

  it('says in one line which region it builds for when nothing the app sees chose it', () => {
    expect(deployEnvironment(cli, 'TaskScheduler')).toEqual({
      env: { account: '123456789012', region: 'us-east-1' },
      notice:
        "TaskScheduler: building for region us-east-1, the CDK CLI's (the profile's region, else us-east-1); choose one with AWS_REGION or CDK_DEPLOY_REGION (the CLI replaces CDK_DEFAULT_REGION)",
    });
  });
});
