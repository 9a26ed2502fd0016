import * as path from 'node:path';
import { Duration, RemovalPolicy, Validations } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { NodejsFunction, OutputFormat } from 'aws-cdk-lib/aws-lambda-nodejs';
import * as logs from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';

export interface RuntimeFunctionProps {
  /** Absolute path of the handler module; it must export `handler`. */
  readonly entry: string;
  /** Repository root: holds `package-lock.json`, which pins what esbuild bundles. */
  readonly projectRoot: string;
  readonly description: string;
  /** @default Duration.seconds(30) */
  readonly timeout?: Duration;
  /** @default 512 */
  readonly memorySize?: number;
  /** @default - no variables */
  readonly environment?: Readonly<Record<string, string>>;
  /** @default logs.RetentionDays.ONE_MONTH */
  readonly logRetention?: logs.RetentionDays;
  /** @default - unreserved (the account's shared pool) */
  readonly reservedConcurrentExecutions?: number;
}

const MAX_LAMBDA_TIMEOUT_SECONDS = 900;

/**
 * A Node.js Lambda with this project's defaults carried once: the latest Node.js runtime on
 * ARM64 (cheaper per GB-s), an ESM bundle built by the local esbuild (no Docker), source maps,
 * active tracing, an explicit log group with retention, and a role that holds only what the
 * caller grants (no managed policies).
 */
export class RuntimeFunction extends Construct {
  public readonly function: NodejsFunction;
  public readonly role: iam.Role;
  public readonly logGroup: logs.LogGroup;
  public readonly timeout: Duration;

  constructor(scope: Construct, id: string, props: RuntimeFunctionProps) {
    super(scope, id);
    this.timeout = props.timeout ?? Duration.seconds(30);
    const timeoutSeconds = this.timeout.toSeconds();
    if (timeoutSeconds < 1 || timeoutSeconds > MAX_LAMBDA_TIMEOUT_SECONDS) {
      throw new Error(`RuntimeFunction ${id}: timeout must be between 1 and 900 seconds, got ${timeoutSeconds}`);
    }
    const memorySize = props.memorySize ?? 512;
    if (!Number.isInteger(memorySize) || memorySize < 128 || memorySize > 10_240) {
      throw new Error(`RuntimeFunction ${id}: memorySize must be an integer from 128 to 10240 MiB, got ${memorySize}`);
    }
    const reserved = props.reservedConcurrentExecutions;
    if (reserved !== undefined && (!Number.isInteger(reserved) || reserved < 1)) {
      throw new Error(
        `RuntimeFunction ${id}: reservedConcurrentExecutions must be a positive integer, got ${reserved}`,
      );
    }

    this.logGroup = new logs.LogGroup(this, 'Logs', {
      retention: props.logRetention ?? logs.RetentionDays.ONE_MONTH,
      // Logs outlive a torn-down stack unless the operator deletes them: they are the audit trail.
      removalPolicy: RemovalPolicy.RETAIN,
    });

    this.role = new iam.Role(this, 'Role', {
      assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com'),
      description: `Execution role of ${props.description}`,
    });
    // Instead of AWSLambdaBasicExecutionRole (logs:* on every group): write to this group only.
    this.logGroup.grantWrite(this.role);

    this.function = new NodejsFunction(this, 'Function', {
      entry: props.entry,
      handler: 'handler',
      description: props.description,
      runtime: lambda.Runtime.NODEJS_24_X,
      architecture: lambda.Architecture.ARM_64,
      memorySize,
      timeout: this.timeout,
      role: this.role,
      logGroup: this.logGroup,
      tracing: lambda.Tracing.ACTIVE,
      reservedConcurrentExecutions: reserved,
      depsLockFilePath: path.join(props.projectRoot, 'package-lock.json'),
      projectRoot: props.projectRoot,
      environment: {
        ...props.environment,
        // Stack traces point at the TypeScript sources.
        NODE_OPTIONS: '--enable-source-maps',
      },
      bundling: {
        format: OutputFormat.ESM,
        target: 'node24',
        mainFields: ['module', 'main'],
        minify: true,
        sourceMap: true,
        sourcesContent: false,
        // Bundle the SDK so its version is the lockfile's, not whatever the runtime ships.
        bundleAwsSDK: true,
        // sharp is a native module esbuild cannot bundle; image work runs on the Fargate pool.
        externalModules: ['sharp'],
        // CommonJS dependencies inside an ESM bundle still call require().
        banner: "import { createRequire } from 'node:module'; const require = createRequire(import.meta.url);",
      },
    });

    Validations.of(this.role).acknowledge({
      id: 'AwsSolutions-IAM5[Resource::*]',
      reason: 'X-Ray PutTraceSegments/PutTelemetryRecords support no resource-level permissions (tracing is on).',
    });
  }
}

/** What every runtime function shares: where the code is, its environment, how long logs stay. */
export interface RuntimeSettings {
  /** Repository root (holds package-lock.json and lambda/). */
  readonly projectRoot: string;
  /** TASKS_TABLE, CONTROL_TABLE, QUEUE_URLS, SCHEDULER_CONFIG_JSON and the Powertools settings. */
  readonly environment: Readonly<Record<string, string>>;
  readonly logRetention: logs.RetentionDays;
}

/** `lambda/handlers/<name>.ts` under the project root. */
export const handlerEntry = (settings: RuntimeSettings, name: string): string =>
  path.join(settings.projectRoot, 'lambda', 'handlers', `${name}.ts`);
