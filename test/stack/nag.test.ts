import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { App, Stack, Validations } from 'aws-cdk-lib';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { AwsSolutionsChecks } from 'cdk-nag';
import { describe, expect, it } from 'vitest';
import { TaskSchedulerStack } from '../../lib/task-scheduler-stack.ts';
import { parseConfig } from '../../runtime/core/config.ts';
import { cdkJsonContext, defaultConfigInput, projectFixture } from './helpers.ts';

interface ValidationReport {
  pluginReports: { pluginName: string; violations: { ruleName: string; violatingConstructs: unknown[] }[] }[];
}

/** Synthesize with the AWS Solutions pack registered, as bin/app.ts does; return the report. */
function synthWithNag(build: (app: App) => void): { error?: Error; report: ValidationReport } {
  const app = new App({ context: { ...cdkJsonContext(), 'aws:cdk:bundling-stacks': [] } });
  build(app);
  Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
  let error: Error | undefined;
  try {
    app.synth();
  } catch (caught) {
    error = caught as Error;
  }
  const report = JSON.parse(readFileSync(path.join(app.outdir, 'validation-report.json'), 'utf8')) as ValidationReport;
  return { ...(error ? { error } : {}), report };
}

describe('cdk-nag AwsSolutionsChecks (v3)', () => {
  it('reports a finding the stack does not acknowledge (the check is live)', () => {
    const { error, report } = synthWithNag((app) => {
      const stack = new Stack(app, 'Bad');
      new sqs.Queue(stack, 'Plain', { encryption: sqs.QueueEncryption.UNENCRYPTED });
    });
    expect(error?.message).toMatch(/AwsSolutions-SQS2/);
    const rules = report.pluginReports.flatMap((plugin) => plugin.violations.map((violation) => violation.ruleName));
    expect(rules).toContain('AwsSolutions-SQS2');
  });

  // bin/app.ts builds the environment-agnostic form unless the CLI knows an account (every real
  // deploy), and then the environment-specific one: ARNs render differently, and an
  // acknowledgement written for one form's ARN would not match the other's.
  const forms = [
    ['environment-agnostic', undefined],
    ['environment-specific (123456789012, eu-west-1)', { account: '123456789012', region: 'eu-west-1' }],
  ] as const;
  const configs = [
    ['the default configuration', {}],
    [
      'an alarm e-mail and no deletion protection',
      { deploy: { alarmEmail: 'ops@example.com', deletionProtection: false } },
    ],
    ['the long-lived scheduler (scheduler.mode "service", 2 shards)', { scheduler: { mode: 'service', shards: 2 } }],
    [
      'webhooks (a secret in the configuration and one in Secrets Manager)',
      {
        events: {
          webhooks: [
            { url: 'https://hooks.example.com/a', secret: 'sixteen-chars-secret' },
            {
              url: 'https://hooks.example.com/b',
              secret: { secretArn: 'arn:aws:secretsmanager:us-east-1:123456789012:secret:hook-AbCdEf' },
              filters: { state: ['FAILED'] },
            },
          ],
        },
      },
    ],
  ] as const;
  it.each(forms.flatMap(([form, env]) => configs.map(([name, overrides]) => [form, name, overrides, env] as const)))(
    'finds nothing unacknowledged in the %s stack with %s',
    (_form, _name, overrides, env) => {
      // Prepare
      const input = defaultConfigInput();
      const config = parseConfig({
        ...input,
        ...overrides,
        deploy: { ...input.deploy, ...(overrides as { deploy?: object }).deploy },
      });

      // Act
      const { error, report } = synthWithNag((app) => {
        new TaskSchedulerStack(app, config.deploy.stackName, {
          config,
          projectRoot: projectFixture(),
          ...(env ? { env } : {}),
        });
      });

      // Assess
      const nag = report.pluginReports.filter((plugin) => plugin.pluginName === 'AwsSolutions');
      expect(nag.flatMap((plugin) => plugin.violations)).toEqual([]);
      expect(error).toBeUndefined();
    },
  );
});
