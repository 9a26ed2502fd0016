/**
 * What a stack deployed into moto is made of, read back from moto (CloudFormation's outputs,
 * resources and template; Lambda's function configurations and event source mappings; ECS's task
 * definition), with each function's code found in the cloud assembly the deploy uploaded from
 * (its `Code.S3Key` is `<asset hash>.zip`, staged as `asset.<hash>/`).
 */
import { existsSync } from 'node:fs';
import * as path from 'node:path';
import {
  CloudFormationClient,
  DescribeStacksCommand,
  GetTemplateCommand,
  paginateListStackResources,
} from '@aws-sdk/client-cloudformation';
import { DescribeTaskDefinitionCommand, ECSClient } from '@aws-sdk/client-ecs';
import { GetFunctionConfigurationCommand, LambdaClient, paginateListEventSourceMappings } from '@aws-sdk/client-lambda';
import type { DeployedFunction, EventSourceMapping } from './lambda-service.ts';

export interface DeployedSchedule {
  readonly logicalId: string;
  readonly expression: string;
  readonly timezone: string;
  readonly enabled: boolean;
  /** The target function's logical id. */
  readonly targetLogicalId: string;
  readonly input: string;
}

export interface DeployedStack {
  readonly stackName: string;
  /** The stack's outputs (each evaluated from the template where moto has none; see below). */
  readonly outputs: Readonly<Record<string, string>>;
  /** Outputs no value could be given for (their expression reads a resource moto did not create). */
  readonly outputsUnavailable: readonly string[];
  /** Where the outputs came from. */
  readonly outputsSource: 'DescribeStacks' | 'the deployed template';
  /** Logical id → physical id, for every resource moto created. */
  readonly physicalIds: Readonly<Record<string, string>>;
  /** Resource types in the template that moto's CloudFormation does not create (with counts). */
  readonly notCreated: Readonly<Record<string, number>>;
  /** Resources in the deployed template, and how many of them moto created. */
  readonly templateResources: number;
  readonly createdResources: number;
  readonly functions: readonly DeployedFunction[];
  readonly eventSourceMappings: readonly EventSourceMapping[];
  /** The Fargate worker container's environment, from the deployed task definition. */
  readonly fargateEnvironment: Readonly<Record<string, string>>;
  readonly schedules: readonly DeployedSchedule[];
  /** What was read or left aside differently from the rest, for the check's output. */
  readonly notes: readonly string[];
}

interface TemplateResource {
  readonly Type: string;
  readonly Properties?: Record<string, unknown>;
}

const refOf = (value: unknown): string | undefined =>
  value && typeof value === 'object' && 'Ref' in value ? String((value as { Ref: unknown }).Ref) : undefined;
const getAttOf = (value: unknown): string | undefined =>
  value && typeof value === 'object' && 'Fn::GetAtt' in value
    ? String((value as { 'Fn::GetAtt': unknown[] })['Fn::GetAtt'][0])
    : undefined;

export async function readDeployedStack(options: {
  readonly stackName: string;
  /** The cloud assembly `cdk deploy` wrote (its `-o`). */
  readonly cloudAssembly: string;
  /** Client settings for moto: endpoint, region, credentials. */
  readonly client: { endpoint: string; region: string; credentials: { accessKeyId: string; secretAccessKey: string } };
}): Promise<DeployedStack> {
  const { stackName, cloudAssembly } = options;
  const cloudformation = new CloudFormationClient(options.client);
  const lambda = new LambdaClient(options.client);
  const ecs = new ECSClient(options.client);
  try {
    const described = await cloudformation.send(new DescribeStacksCommand({ StackName: stackName }));
    const stack = described.Stacks?.[0];
    if (!stack) throw new Error(`Stack ${stackName} not found`);
    const describedOutputs = Object.fromEntries(
      (stack.Outputs ?? []).map((o) => [o.OutputKey ?? '', o.OutputValue ?? '']),
    );

    // moto lists every resource of the template, those it does not create with no type.
    const physicalIds: Record<string, string> = {};
    const created = new Set<string>();
    for await (const page of paginateListStackResources({ client: cloudformation }, { StackName: stackName })) {
      for (const summary of page.StackResourceSummaries ?? []) {
        if (!summary.LogicalResourceId || !summary.ResourceType) continue;
        created.add(summary.LogicalResourceId);
        if (summary.PhysicalResourceId) physicalIds[summary.LogicalResourceId] = summary.PhysicalResourceId;
      }
    }
    const { TemplateBody } = await cloudformation.send(new GetTemplateCommand({ StackName: stackName }));
    const template = JSON.parse(TemplateBody ?? '{}') as {
      Resources: Record<string, TemplateResource>;
      Outputs?: Record<string, { Value: unknown }>;
    };
    // moto keeps no outputs for a stack created through a change set (its output map is built
    // from the empty template the change set starts from), and refuses CreateStack for this
    // template (ApiUrl reads an attribute of AWS::ApiGatewayV2::Api, a type it does not create).
    // So, as CloudFormation would, the outputs are evaluated from the deployed template over the
    // physical ids moto reports.
    const outputs: Record<string, string> = { ...describedOutputs };
    const outputsUnavailable: string[] = [];
    const outputsSource = Object.keys(describedOutputs).length > 0 ? 'DescribeStacks' : 'the deployed template';
    if (outputsSource === 'the deployed template') {
      for (const [key, output] of Object.entries(template.Outputs ?? {})) {
        const value = evaluate(output.Value, physicalIds);
        if (value === undefined) outputsUnavailable.push(key);
        else outputs[key] = value;
      }
    }
    const resources = Object.entries(template.Resources);
    const notCreated: Record<string, number> = {};
    for (const [logicalId, resource] of resources) {
      if (!created.has(logicalId)) notCreated[resource.Type] = (notCreated[resource.Type] ?? 0) + 1;
    }

    const asyncRetries = new Map<string, number>();
    for (const [, resource] of resources) {
      if (resource.Type !== 'AWS::Lambda::EventInvokeConfig') continue;
      const target = refOf(resource.Properties?.FunctionName);
      const retries = resource.Properties?.MaximumRetryAttempts;
      if (target && typeof retries === 'number') asyncRetries.set(target, retries);
    }

    const notes: string[] = [];
    const stackArn = stack.StackId ?? '';
    const functions: DeployedFunction[] = [];
    for (const [logicalId, resource] of resources) {
      if (resource.Type !== 'AWS::Lambda::Function') continue;
      const name = physicalIds[logicalId];
      if (!name) throw new Error(`moto created no function for ${logicalId}`);
      let configuration: {
        Handler?: string | undefined;
        FunctionArn?: string | undefined;
        Environment?: { Variables?: Record<string, string> | undefined } | undefined;
        Timeout?: number | undefined;
        MemorySize?: number | undefined;
      };
      try {
        configuration = await lambda.send(new GetFunctionConfigurationCommand({ FunctionName: name }));
      } catch (error) {
        // moto 5.2 fails to serialise a function whose environment holds the Ref of an
        // AWS::Events::EventBus (it keeps the bus object, not its name): read the deployed
        // template instead, evaluated over the physical ids, as CloudFormation resolved it.
        configuration = fromTemplate(resource.Properties ?? {}, name, stackArn, physicalIds, template.Resources);
        notes.push(
          `${logicalId}: configuration from the deployed template (moto's GetFunctionConfiguration failed: ${error instanceof Error ? error.message.split('\n')[0] : String(error)})`,
        );
      }
      const key = String((resource.Properties?.Code as { S3Key?: unknown } | undefined)?.S3Key ?? '');
      const assetDir = path.join(cloudAssembly, `asset.${key.replace(/\.zip$/, '')}`);
      const [moduleName, exportName] = splitHandler(configuration.Handler ?? 'index.handler');
      const handlerFile = ['.mjs', '.js', '.cjs']
        .map((extension) => path.join(assetDir, `${moduleName}${extension}`))
        .find((file) => existsSync(file));
      if (!handlerFile) throw new Error(`${logicalId}: no ${moduleName}.mjs/.js in ${assetDir} (Code.S3Key ${key})`);
      functions.push({
        logicalId,
        name,
        arn: configuration.FunctionArn ?? name,
        handlerFile,
        handlerExport: exportName,
        environment: configuration.Environment?.Variables ?? {},
        timeoutSeconds: configuration.Timeout ?? 3,
        memoryMiB: configuration.MemorySize ?? 128,
        asyncRetries: asyncRetries.get(logicalId) ?? 2,
      });
    }

    const eventSourceMappings: EventSourceMapping[] = [];
    for await (const page of paginateListEventSourceMappings({ client: lambda }, {})) {
      for (const mapping of page.EventSourceMappings ?? []) {
        if (!mapping.FunctionArn) continue;
        if (!mapping.EventSourceArn?.startsWith('arn:aws:sqs:')) {
          notes.push(
            `event source mapping ${mapping.EventSourceArn} -> ${mapping.FunctionArn.split(':').at(-1)}: not played (only SQS mappings are)`,
          );
          continue;
        }
        eventSourceMappings.push({
          uuid: mapping.UUID ?? '',
          functionName: mapping.FunctionArn.split(':').at(-1)!,
          queueArn: mapping.EventSourceArn,
          batchSize: mapping.BatchSize ?? 10,
          maximumConcurrency: mapping.ScalingConfig?.MaximumConcurrency ?? 1000,
          reportBatchItemFailures: (mapping.FunctionResponseTypes ?? []).includes('ReportBatchItemFailures'),
        });
      }
    }

    const taskDefinitionId = resources.find(([, r]) => r.Type === 'AWS::ECS::TaskDefinition')?.[0];
    const taskDefinitionArn = taskDefinitionId ? physicalIds[taskDefinitionId] : undefined;
    let fargateEnvironment: Record<string, string> = {};
    if (taskDefinitionArn) {
      const { taskDefinition } = await ecs.send(
        new DescribeTaskDefinitionCommand({ taskDefinition: taskDefinitionArn }),
      );
      fargateEnvironment = Object.fromEntries(
        (taskDefinition?.containerDefinitions?.[0]?.environment ?? []).map((pair) => [
          pair.name ?? '',
          pair.value ?? '',
        ]),
      );
    }

    const schedules: DeployedSchedule[] = resources
      .filter(([, resource]) => resource.Type === 'AWS::Scheduler::Schedule')
      .map(([logicalId, resource]) => {
        const properties = resource.Properties ?? {};
        const target = (properties.Target ?? {}) as { Arn?: unknown; Input?: unknown };
        const targetLogicalId = getAttOf(target.Arn) ?? refOf(target.Arn);
        if (!targetLogicalId) throw new Error(`${logicalId}: a schedule whose target is not a function of the stack`);
        return {
          logicalId,
          expression: String(properties.ScheduleExpression),
          timezone:
            typeof properties.ScheduleExpressionTimezone === 'string' ? properties.ScheduleExpressionTimezone : 'UTC',
          enabled: properties.State !== 'DISABLED',
          targetLogicalId,
          input: typeof target.Input === 'string' ? target.Input : '{}',
        };
      });

    return {
      stackName,
      outputs,
      outputsUnavailable,
      outputsSource,
      physicalIds,
      notCreated,
      templateResources: resources.length,
      createdResources: created.size,
      functions,
      eventSourceMappings,
      fargateEnvironment,
      schedules,
      notes,
    };
  } finally {
    cloudformation.destroy();
    lambda.destroy();
    ecs.destroy();
  }
}

/**
 * A template value as CloudFormation resolved it: literals, Ref (the resource's physical id; for a
 * resource moto keeps none for, such as an AWS::Events::EventBus, its Name property, which is what
 * CloudFormation's Ref returns for a bus) and Fn::Join; anything else is unknown.
 */
function evaluate(
  value: unknown,
  physicalIds: Readonly<Record<string, string>>,
  resources: Readonly<Record<string, TemplateResource>> = {},
): string | undefined {
  if (typeof value === 'string') return value;
  const ref = refOf(value);
  if (ref !== undefined) {
    const name = resources[ref]?.Properties?.Name;
    return physicalIds[ref] ?? (typeof name === 'string' ? name : undefined);
  }
  if (value && typeof value === 'object' && 'Fn::Join' in value) {
    const [separator, parts] = (value as { 'Fn::Join': [string, unknown[]] })['Fn::Join'];
    const evaluated = parts.map((part) => evaluate(part, physicalIds, resources));
    return evaluated.every((part) => part !== undefined) ? evaluated.join(separator) : undefined;
  }
  return undefined;
}

/** A function's configuration as the deployed template gives it (see readDeployedStack). */
function fromTemplate(
  properties: Record<string, unknown>,
  name: string,
  stackArn: string,
  physicalIds: Readonly<Record<string, string>>,
  resources: Readonly<Record<string, TemplateResource>>,
) {
  const [, , , region, account] = stackArn.split(':');
  const variables = ((properties.Environment as { Variables?: Record<string, unknown> } | undefined)?.Variables ??
    {}) as Record<string, unknown>;
  const environment: Record<string, string> = {};
  for (const [key, value] of Object.entries(variables)) {
    const evaluated = evaluate(value, physicalIds, resources);
    if (evaluated === undefined) throw new Error(`${name}: environment variable ${key} cannot be evaluated`);
    environment[key] = evaluated;
  }
  return {
    Handler: typeof properties.Handler === 'string' ? properties.Handler : 'index.handler',
    FunctionArn: `arn:aws:lambda:${region}:${account}:function:${name}`,
    Environment: { Variables: environment },
    Timeout: typeof properties.Timeout === 'number' ? properties.Timeout : 3,
    MemorySize: typeof properties.MemorySize === 'number' ? properties.MemorySize : 128,
  };
}

function splitHandler(handler: string): [string, string] {
  const at = handler.lastIndexOf('.');
  return at === -1 ? [handler, 'handler'] : [handler.slice(0, at), handler.slice(at + 1)];
}
