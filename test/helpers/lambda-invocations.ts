/**
 * The scheduler Lambda's surroundings for handler tests: Lambda's Invoke API as a local HTTP
 * endpoint recording each call (point AWS_ENDPOINT_URL_LAMBDA at `url`), and invocation contexts.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Context } from 'aws-lambda';
import type { SchedulerEvent } from '../../runtime/scheduler/activation.ts';

export interface RecordedInvocation {
  readonly functionName: string;
  readonly invocationType: string | undefined;
  readonly event: SchedulerEvent;
}

/** A local Invoke API answering 202 to every call and recording it in `invocations`. */
export async function startLambdaApi(): Promise<{
  readonly url: string;
  readonly invocations: RecordedInvocation[];
  close(): Promise<void>;
}> {
  const invocations: RecordedInvocation[] = [];
  const server = createServer((request, response) => {
    let body = '';
    request.on('data', (chunk) => {
      body += chunk;
    });
    request.on('end', () => {
      const match = /\/functions\/([^/]+)\/invocations/.exec(request.url ?? '');
      invocations.push({
        functionName: decodeURIComponent(match?.[1] ?? ''),
        invocationType: request.headers['x-amz-invocation-type'] as string | undefined,
        event: JSON.parse(body) as SchedulerEvent,
      });
      response.writeHead(202).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    invocations,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** An invocation's context with `remainingMs` left from now. */
export function invocationContext(remainingMs: number, functionName = 'scheduler-fn'): Context {
  const deadline = Date.now() + remainingMs;
  return {
    awsRequestId: `req-${Math.random()}`,
    functionName,
    getRemainingTimeInMillis: () => deadline - Date.now(),
  } as unknown as Context;
}

/**
 * An invocation that runs out of time once `done` holds (checked every 100 ms), however fast the
 * machine: 60 s left until then, 10 s after (under the 15 s safety margin).
 */
export function contextUntil(done: () => Promise<boolean>): { context: Context; stop: () => void } {
  let remainingMs = 60_000;
  const poll = setInterval(() => {
    void done().then((yes) => {
      if (yes) remainingMs = 10_000;
    });
  }, 100);
  const context = { ...invocationContext(0), getRemainingTimeInMillis: () => remainingMs } as unknown as Context;
  return { context, stop: () => clearInterval(poll) };
}
