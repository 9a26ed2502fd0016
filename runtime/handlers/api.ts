/**
 * The API Lambda behind API Gateway (HTTP API, payload 2.0). Thin: module-scope services, the
 * execution environment's one logger (observability.ts), the shared router, one structured log
 * line per request.
 */
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Context } from 'aws-lambda';
import { callerIdentity, createCallerAuthorizer } from '../api/authorization.ts';
import { requestMethod, requestPath } from '../api/request.ts';
import { createApiRouter } from '../api/router.ts';
import { servicesFromEnvironment } from '../app/wiring.ts';
import { METRIC } from '../infra/telemetry.ts';
import { flushTraces } from '../telemetry/tracing.ts';
import { logger, metrics } from './observability.ts';

const services = servicesFromEnvironment();
const { callers, allowAnyCaller } = services.config.deploy;
const authorize = createCallerAuthorizer(callers, { allowAnyCaller });
if (!authorize) {
  logger.warn('deploy.allowAnyCaller: every IAM-authorized caller may act for every tenant');
} else if (Object.keys(callers).length === 0) {
  logger.warn('deploy.callers is empty: every tenant-scoped request is refused until it names who acts for whom');
}
const router = createApiRouter(services, {
  authorize,
  logger: { error: (message, extra) => logger.error(message, extra) },
});

export const handler = async (
  event: APIGatewayProxyEventV2,
  context?: Context,
): Promise<APIGatewayProxyStructuredResultV2> => {
  if (context) logger.addContext(context);
  const started = Date.now();
  const result = await router(event);
  // Spans of this request (submit) leave before the invocation ends; nothing when no endpoint is set.
  await flushTraces();
  logger.info('request', {
    method: requestMethod(event),
    path: requestPath(event),
    status: result.statusCode,
    durationMs: Date.now() - started,
    caller: callerIdentity(event)?.userArn,
    apiRequestId: event.requestContext?.requestId,
  });
  if (result.statusCode === 202 && requestMethod(event) === 'POST' && requestPath(event) === '/v1/tasks') {
    metrics.addMetric(METRIC.tasksSubmitted, 'Count', 1);
    metrics.publishStoredMetrics();
  }
  return result;
};
