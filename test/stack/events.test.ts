/**
 * Task events in the stack (issue 27): the bus and its feed from the task table's stream; with
 * webhooks, the FIFO delivery queue, its function and one secret per webhook, and no secret in
 * any function's environment.
 */
import { Match } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import { defaultConfigInput, logicalId, synthesize } from './helpers.ts';

const LITERAL = 'sixteen-chars-secret';

describe('Construct: TaskEvents', () => {
  it('feeds a custom bus from the task table stream, no webhook queue without webhooks', () => {
    // Act
    const { stack, template } = synthesize();

    // Assess
    template.hasResourceProperties('AWS::DynamoDB::Table', {
      KeySchema: [{ AttributeName: 'taskId', KeyType: 'HASH' }],
      StreamSpecification: { StreamViewType: 'NEW_AND_OLD_IMAGES' },
    });
    template.hasResourceProperties('AWS::Events::EventBus', { Name: 'TaskScheduler-task-events' });
    template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      EventSourceArn: { 'Fn::GetAtt': [logicalId(stack, stack.tables.tasks), 'StreamArn'] },
      FunctionResponseTypes: ['ReportBatchItemFailures'],
      BisectBatchOnFunctionError: false,
      StartingPosition: 'LATEST',
      FilterCriteria: { Filters: [{ Pattern: JSON.stringify({ eventName: ['INSERT', 'MODIFY'] }) }] },
      DestinationConfig: {
        OnFailure: { Destination: { 'Fn::GetAtt': [logicalId(stack, stack.events.failedRecords), 'Arn'] } },
      },
    });
    template.hasResourceProperties('AWS::IAM::Policy', {
      PolicyDocument: {
        Statement: Match.arrayWith([
          Match.objectLike({
            Action: 'events:PutEvents',
            Resource: { 'Fn::GetAtt': [logicalId(stack, stack.events.bus), 'Arn'] },
          }),
        ]),
      },
    });
    expect(stack.events.deliveryQueue).toBeUndefined();
    template.resourceCountIs('AWS::SecretsManager::Secret', 0);
  }, 300_000);

  it('with webhooks: a FIFO delivery queue and its function, one secret per webhook, none in an environment', () => {
    // Prepare
    const input = defaultConfigInput();

    // Act
    const { stack, template } = synthesize({
      config: {
        ...input,
        events: {
          webhooks: [
            { url: 'https://hooks.example.com/a', secret: LITERAL },
            {
              url: 'https://hooks.example.com/b',
              secret: { secretArn: 'arn:aws:secretsmanager:us-east-1:123456789012:secret:hook-AbCdEf' },
              filters: { state: ['FAILED'] },
            },
          ],
        },
      },
    });

    // Assess
    template.hasResourceProperties('AWS::SQS::Queue', {
      FifoQueue: true,
      QueueName: 'TaskScheduler-webhook-deliveries.fifo',
      RedrivePolicy: Match.objectLike({ maxReceiveCount: 600 }),
      // High throughput: a FIFO queue otherwise takes 300 calls a second per action (3,000
      // messages batched) for every webhook together; its groups (webhook + task) are many.
      DeduplicationScope: 'messageGroup',
      FifoThroughputLimit: 'perMessageGroupId',
    });
    // Lambda's SQS guide: the queue's visibility at least 6 × the function's timeout, so a
    // throttled invocation can be retried before its messages come back.
    const queue = template.findResources('AWS::SQS::Queue')[logicalId(stack, stack.events.deliveryQueue!)];
    const delivery =
      template.findResources('AWS::Lambda::Function')[logicalId(stack, stack.events.deliveryFunction!.function)];
    expect(queue?.Properties?.VisibilityTimeout).toBeGreaterThanOrEqual(6 * delivery?.Properties?.Timeout);
    template.resourceCountIs('AWS::SecretsManager::Secret', 1);
    template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      EventSourceArn: { 'Fn::GetAtt': [logicalId(stack, stack.events.deliveryQueue!), 'Arn'] },
      FunctionResponseTypes: ['ReportBatchItemFailures'],
    });
    const functions = template.findResources('AWS::Lambda::Function');
    const environments = JSON.stringify(Object.values(functions).map((fn) => fn.Properties?.Environment));
    expect(environments).not.toContain(LITERAL);
    expect(environments).toContain('in-secrets-manager');
    // The delivery function may read both secrets.
    const policies = JSON.stringify(template.findResources('AWS::IAM::Policy'));
    expect(policies).toContain('secretsmanager:GetSecretValue');
    expect(policies).toContain('arn:aws:secretsmanager:us-east-1:123456789012:secret:hook-AbCdEf');
  }, 300_000);
});
