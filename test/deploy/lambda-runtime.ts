/**
 * One Lambda execution environment, as a child process of the played Lambda service
 * (lambda-service.ts): it loads the function's deployed code once (module scope lives as long as
 * the environment, as on Lambda) and runs one invocation at a time, sent over IPC.
 *
 * Environment: the function's own variables as deployed, plus what Lambda sets
 * (AWS_LAMBDA_FUNCTION_NAME, AWS_REGION...) and the endpoints of the AWS it talks to.
 * DEPLOY_CHECK_HANDLER_FILE / DEPLOY_CHECK_HANDLER_EXPORT name the code.
 */
import { randomUUID } from 'node:crypto';
import { pathToFileURL } from 'node:url';

export interface InvokeRequest {
  readonly type: 'invoke';
  readonly id: number;
  readonly event: unknown;
  /** Epoch ms at which the invocation times out. */
  readonly deadlineMs: number;
  readonly requestId: string;
}

export type InvokeReply =
  | { readonly type: 'result'; readonly id: number; readonly result: unknown }
  | { readonly type: 'error'; readonly id: number; readonly errorType: string; readonly errorMessage: string };

type Handler = (event: unknown, context: unknown) => Promise<unknown>;

async function main(): Promise<void> {
  const file = process.env.DEPLOY_CHECK_HANDLER_FILE;
  const exportName = process.env.DEPLOY_CHECK_HANDLER_EXPORT ?? 'handler';
  if (!file) throw new Error('DEPLOY_CHECK_HANDLER_FILE is not set');
  const module = (await import(pathToFileURL(file).href)) as Record<string, unknown>;
  const handler = module[exportName];
  if (typeof handler !== 'function') throw new Error(`${file} exports no function ${exportName}`);
  const functionName = process.env.AWS_LAMBDA_FUNCTION_NAME ?? 'unknown';
  process.on('message', (message: InvokeRequest) => {
    if (message?.type !== 'invoke') return;
    const context = {
      awsRequestId: message.requestId || randomUUID(),
      functionName,
      functionVersion: '$LATEST',
      invokedFunctionArn: process.env.DEPLOY_CHECK_FUNCTION_ARN ?? functionName,
      memoryLimitInMB: process.env.AWS_LAMBDA_FUNCTION_MEMORY_SIZE ?? '128',
      logGroupName: `/aws/lambda/${functionName}`,
      logStreamName: 'deploy-check',
      callbackWaitsForEmptyEventLoop: true,
      getRemainingTimeInMillis: () => Math.max(0, message.deadlineMs - Date.now()),
      done: () => undefined,
      fail: () => undefined,
      succeed: () => undefined,
    };
    (handler as Handler)(message.event, context).then(
      (result) => process.send?.({ type: 'result', id: message.id, result: result ?? null } satisfies InvokeReply),
      (error: unknown) =>
        process.send?.({
          type: 'error',
          id: message.id,
          errorType: error instanceof Error ? error.name : 'Error',
          errorMessage: error instanceof Error ? (error.stack ?? error.message) : String(error),
        } satisfies InvokeReply),
    );
  });
  process.send?.({ type: 'ready' });
}

main().catch((error: unknown) => {
  // An init error: Lambda reports it to the invoker; here the parent sees the exit and this line.
  console.error(`init error: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
  process.exit(1);
});
