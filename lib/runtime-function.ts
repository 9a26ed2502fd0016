import * as path from 'node:path';
import { Duration, RemovalPolicy, Validations } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { NodejsFunction, OutputFormat } from 'aws-cdk-lib/aws-lambda-nodejs';
import * as logs from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';
import { estimateEnvironmentBytes, LAMBDA_ENVIRONMENT_LIMIT } from './environment-size.ts';
import type { RuntimeCode } from './runtime-code.ts';

export interface RuntimeFunctionProps {
  /** Absolute path of the handler module; it must export `handler`. */
  readonly entry: string;
  /** The project that bundles: esbuild resolves the handler's imports from its node_modules. */
  readonly projectRoot: string;
  /** The lockfile that pins what esbuild bundles. @default projectRoot/package-lock.json */
  readonly depsLockFilePath?: string;
  /**
   * An esbuild `inject` file evaluated before the handler: the user's task modules
   * (lib/runtime-code.ts). @default - none
   */
  readonly inject?: string;
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
  /**
   * Physical name, for a function that must know its own ARN before it exists (the scheduler
   * invokes itself to hand over; its ARN from CloudFormation would make its policy circular).
   * @default - CloudFormation picks the name
   */
  readonly functionName?: string;
  /**
   * Packages with native binaries that esbuild cannot bundle, installed next to the bundle from
   * the lockfile for Lambda's platform (linux, arm64, glibc). Needs the npm registry (or its
   * cache) when bundling.
   * @default - none
   */
  readonly nativeModules?: readonly string[];
}

const MAX_LAMBDA_TIMEOUT_SECONDS = 900;

/** Native packages the runtime imports only on demand (`await import`), never at load time. */
const LAZY_NATIVE_MODULES = ['sharp'];

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
  /** The variables the function gets (references resolve at deploy). */
  public readonly environment: Readonly<Record<string, string>>;

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

    const nativeModules = props.nativeModules ?? [];
    const environment: Record<string, string> = {
      ...props.environment,
      // Stack traces point at the TypeScript sources.
      NODE_OPTIONS: '--enable-source-maps',
    };
    this.environment = environment;
    // Checked once every resource exists (names in the environment are references until then).
    this.node.addValidation({
      validate: () => {
        const bytes = estimateEnvironmentBytes(this, environment);
        if (bytes <= LAMBDA_ENVIRONMENT_LIMIT) return [];
        const largest = Object.entries(environment)
          .map(([name, value]) => [name, estimateEnvironmentBytes(this, { [name]: value })] as const)
          .sort((a, b) => b[1] - a[1])
          .slice(0, 3)
          .map(([name, size]) => `${name} ${size}`)
          .join(', ');
        return [
          `RuntimeFunction ${id}: the environment may reach ${bytes} bytes once deployed, over Lambda's 4096-byte limit (largest: ${largest}). Shrink the configuration, e.g. set tenant settings through PUT /v1/tenants/{tenantId} instead of "tenants".`,
        ];
      },
    });

    if (props.functionName !== undefined && !/^[A-Za-z0-9_-]{1,64}$/.test(props.functionName)) {
      throw new Error(
        `RuntimeFunction ${id}: functionName must be 1 to 64 letters, digits, - or _, got "${props.functionName}"`,
      );
    }
    this.function = new NodejsFunction(this, 'Function', {
      functionName: props.functionName,
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
      depsLockFilePath: props.depsLockFilePath ?? path.join(props.projectRoot, 'package-lock.json'),
      projectRoot: props.projectRoot,
      environment,
      bundling: {
        format: OutputFormat.ESM,
        target: 'node24',
        mainFields: ['module', 'main'],
        minify: true,
        sourceMap: true,
        sourcesContent: false,
        ...(props.inject ? { inject: [props.inject] } : {}),
        // Bundle the SDK so its version is the lockfile's, not whatever the runtime ships.
        bundleAwsSDK: true,
        // Native packages stay out of the bundle and are installed beside it instead. sharp is
        // always external: task types import it lazily, and only workers install it.
        externalModules: [...new Set([...nativeModules, ...LAZY_NATIVE_MODULES])],
        ...(nativeModules.length > 0
          ? {
              nodeModules: [...nativeModules],
              environment: {
                // npm picks the optional per-platform binaries (e.g. @img/sharp-linux-arm64) by these.
                npm_config_os: 'linux',
                npm_config_cpu: 'arm64',
                npm_config_libc: 'glibc',
                // Once cached, synth needs no network: no revalidation, no audit call.
                npm_config_prefer_offline: 'true',
                npm_config_audit: 'false',
                npm_config_fund: 'false',
                npm_config_update_notifier: 'false',
              },
            }
          : {}),
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
  /** Where the handlers are, the project that bundles them and the user's task modules. */
  readonly code: RuntimeCode;
  /** TASKS_TABLE, CONTROL_TABLE, QUEUE_URLS, SCHEDULER_CONFIG_JSON and the Powertools settings. */
  readonly environment: Readonly<Record<string, string>>;
  readonly logRetention: logs.RetentionDays;
  /** Native packages every function's code imports (see {@link RuntimeFunctionProps.nativeModules}). */
  readonly nativeModules?: readonly string[];
  /** The inject file installing the task modules (writeTaskModulesInject in lib/runtime-code.ts). @default - none */
  readonly taskModulesInject?: string;
}

/**
 * The handlers that build the runtime's services, and with them a task-type registry (they run,
 * validate, submit or settle tasks): they get the task modules. The event stream settles
 * dependencies; only the webhook delivery never touches a task.
 */
export const REGISTRY_HANDLERS: ReadonlySet<string> = new Set([
  'api',
  'scheduler',
  'worker',
  'redrive',
  'scheduled-submit',
  'fargate-worker',
  'scheduler-container',
  'task-events',
]);

/** The props every runtime function shares, for the handler `runtime/handlers/<name>`. */
export const handlerProps = (settings: RuntimeSettings, name: string) => ({
  entry: settings.code.handlerEntry(name),
  projectRoot: settings.code.projectRoot,
  depsLockFilePath: settings.code.depsLockFilePath,
  environment: settings.environment,
  logRetention: settings.logRetention,
  nativeModules: settings.nativeModules,
  inject: REGISTRY_HANDLERS.has(name) ? settings.taskModulesInject : undefined,
});
