/**
 * The W3C trace context of a request: its `traceparent` header, when valid (an invalid one is
 * ignored, as the specification asks). Every submit path passes it to `TaskService.submit`
 * (`options.traceparent`): POST /v1/tasks here, and the batch submit the same way for each item.
 */
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { isTraceparent } from '../telemetry/tracing.ts';

export function traceparentOf(event: APIGatewayProxyEventV2): string | undefined {
  const headers = event.headers ?? {};
  const value = Object.entries(headers)
    .find(([name]) => name.toLowerCase() === 'traceparent')?.[1]
    ?.trim();
  return value && isTraceparent(value) ? value : undefined;
}
