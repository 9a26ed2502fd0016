/**
 * Whether an AWS SDK error is throttling: DynamoDB's per-partition limit
 * (ProvisionedThroughputExceededException, on a table or a GSI, after the SDK's own retries), a
 * request-rate limit, or any error the SDK classifies as throttling.
 */
const THROTTLING_NAMES = new Set([
  'ProvisionedThroughputExceededException',
  'ThrottlingException',
  'RequestLimitExceeded',
  'TooManyRequestsException',
]);

export function isThrottling(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false;
  const { name, $retryable } = error as { name?: unknown; $retryable?: { throttling?: unknown } };
  return (typeof name === 'string' && THROTTLING_NAMES.has(name)) || $retryable?.throttling === true;
}
