import { Duration } from 'aws-cdk-lib';
import * as apigw from 'aws-cdk-lib/aws-apigateway';
import * as apigwv2 from 'aws-cdk-lib/aws-apigatewayv2';
import { HttpIamAuthorizer } from 'aws-cdk-lib/aws-apigatewayv2-authorizers';
import { HttpLambdaIntegration } from 'aws-cdk-lib/aws-apigatewayv2-integrations';
import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as logs from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';
import { handlerProps, RuntimeFunction, type RuntimeSettings } from './runtime-function.ts';
import type { DefinedQueue } from './task-queues.ts';

/** Every route of the HTTP API; each one requires a SigV4-signed request (IAM authorization). */
export const API_ROUTES = [
  { method: apigwv2.HttpMethod.GET, path: '/health' },
  { method: apigwv2.HttpMethod.GET, path: '/openapi.json' },
  { method: apigwv2.HttpMethod.POST, path: '/v1/tasks' },
  { method: apigwv2.HttpMethod.GET, path: '/v1/tasks' },
  { method: apigwv2.HttpMethod.GET, path: '/v1/tasks/{taskId}' },
  { method: apigwv2.HttpMethod.POST, path: '/v1/tasks/{taskId}/cancel' },
  { method: apigwv2.HttpMethod.POST, path: '/v1/tasks/{taskId}/retry' },
  { method: apigwv2.HttpMethod.GET, path: '/v1/status' },
  { method: apigwv2.HttpMethod.GET, path: '/v1/tenants/{tenantId}' },
  { method: apigwv2.HttpMethod.PUT, path: '/v1/tenants/{tenantId}' },
  { method: apigwv2.HttpMethod.DELETE, path: '/v1/tenants/{tenantId}' },
  { method: apigwv2.HttpMethod.GET, path: '/v1/task-types' },
  { method: apigwv2.HttpMethod.PUT, path: '/v1/task-types/{type}' },
  { method: apigwv2.HttpMethod.POST, path: '/v1/tasks/batch' },
  { method: apigwv2.HttpMethod.GET, path: '/v1/batches/{batchId}' },
  { method: apigwv2.HttpMethod.GET, path: '/v1/batches/{batchId}/tasks' },
  { method: apigwv2.HttpMethod.GET, path: '/v1/batches' },
] as const;

export interface TaskApiProps {
  readonly runtime: RuntimeSettings;
  readonly tasksTable: dynamodb.ITable;
  readonly controlTable: dynamodb.ITable;
  /** Read: a tenant's dispatched and running tasks (listings, a task's wait). */
  readonly leasesTable: dynamodb.ITable;
  /** Submit and retry enqueue here. */
  readonly tierQueues: readonly DefinedQueue[];
  /** Steady-state requests per second across the API. @default 100 */
  readonly rateLimit?: number;
  /** Short burst above the steady rate. @default 200 */
  readonly burstLimit?: number;
  /** @default 512 */
  readonly memorySize?: number;
}

/**
 * The HTTP API (payload v2) in front of one Lambda that serves every route. IAM authorization on
 * every route: API Gateway verifies the SigV4 signature, and the handler maps the caller's ARN to
 * the tenants it may act for (config.deploy.callers).
 */
export class TaskApi extends Construct {
  public readonly api: apigwv2.HttpApi;
  public readonly stage: apigwv2.HttpStage;
  public readonly handler: RuntimeFunction;
  public readonly accessLogs: logs.LogGroup;
  /** The base URL callers sign requests for, without a trailing slash. */
  public readonly url: string;

  constructor(scope: Construct, id: string, props: TaskApiProps) {
    super(scope, id);
    const rateLimit = props.rateLimit ?? 100;
    const burstLimit = props.burstLimit ?? 200;
    if (!Number.isFinite(rateLimit) || rateLimit <= 0) {
      throw new Error(`TaskApi: rateLimit must be a positive number of requests per second, got ${rateLimit}`);
    }
    if (!Number.isInteger(burstLimit) || burstLimit < 1) {
      throw new Error(`TaskApi: burstLimit must be a positive integer, got ${burstLimit}`);
    }

    this.handler = new RuntimeFunction(this, 'Handler', {
      ...handlerProps(props.runtime, 'api'),
      description: 'Task scheduler HTTP API (every route)',
      memorySize: props.memorySize ?? 512,
      // API Gateway gives up after 30 s; a longer function timeout would only hide stuck calls.
      timeout: Duration.seconds(29),
    });
    const fn = this.handler.function;
    props.tasksTable.grantReadWriteData(fn);
    // A batch's creates are PartiQL INSERTs (runtime/adapters/task-store.ts createMany), an action
    // of their own that grantReadWriteData does not include.
    props.tasksTable.grant(fn, 'dynamodb:PartiQLInsert');
    props.controlTable.grantReadWriteData(fn);
    props.leasesTable.grantReadData(fn);
    for (const tier of props.tierQueues) tier.queue.grantSendMessages(fn);

    this.api = new apigwv2.HttpApi(this, 'Api', {
      description: 'Serverless task scheduler',
      defaultAuthorizer: new HttpIamAuthorizer(),
      // The stage below adds throttling and access logs, which the implicit default stage cannot.
      createDefaultStage: false,
    });

    this.accessLogs = new logs.LogGroup(this, 'AccessLogs', { retention: props.runtime.logRetention });
    this.stage = new apigwv2.HttpStage(this, 'DefaultStage', {
      httpApi: this.api,
      stageName: '$default',
      autoDeploy: true,
      throttle: { rateLimit, burstLimit },
      accessLogSettings: {
        destination: new apigwv2.LogGroupLogDestination(this.accessLogs),
        format: apigw.AccessLogFormat.custom(
          JSON.stringify({
            requestId: '$context.requestId',
            requestTime: '$context.requestTime',
            caller: '$context.identity.userArn',
            sourceIp: '$context.identity.sourceIp',
            routeKey: '$context.routeKey',
            status: '$context.status',
            responseLength: '$context.responseLength',
            latencyMs: '$context.responseLatency',
            integrationError: '$context.integrationErrorMessage',
          }),
        ),
      },
    });

    const integration = new HttpLambdaIntegration('Handler', fn);
    for (const route of API_ROUTES) {
      this.api.addRoutes({ path: route.path, methods: [route.method], integration });
    }
    // What no route matches (HEAD, a method a path lacks, an unknown path) goes to the router too,
    // which answers HEAD as GET, 405 and 404 as documented; API Gateway's own answer is a bare 404.
    new apigwv2.HttpRoute(this, 'Fallback', {
      httpApi: this.api,
      routeKey: apigwv2.HttpRouteKey.DEFAULT,
      integration,
    });
    this.url = this.api.apiEndpoint;
  }
}
