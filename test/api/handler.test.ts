/**
 * The Lambda entry as deployed: services built from the environment the stack sets (here
 * pointing at the in-memory emulators through the SDK's standard endpoint variables), caller
 * authorization from `deploy.callers`.
 */
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Emulators, startEmulators } from '../../local/emulators.ts';
import { apiEvent, jsonOf } from '../helpers/api-events.ts';
import { lambdaEnvironment } from '../helpers/services.ts';

const ROLE = 'arn:aws:iam::111122223333:role/orders-service';
const SESSION = 'arn:aws:sts::111122223333:assumed-role/orders-service/lambda';

let emulators: Emulators;
let handler: (event: APIGatewayProxyEventV2) => Promise<APIGatewayProxyStructuredResultV2>;
const saved = { ...process.env };

beforeAll(async () => {
  emulators = await startEmulators({ prefix: 'handler' });
  Object.assign(process.env, lambdaEnvironment(emulators, { deploy: { callers: { [ROLE]: ['orders'] } } }));
  // Imported only now: the module builds its services from the environment at load time.
  ({ handler } = await import('../../runtime/handlers/api.ts'));
});
afterAll(async () => {
  process.env = saved;
  await emulators.stop();
});

describe('Handler: api', () => {
  it('serves a submit from a mapped caller end to end', async () => {
    // Act
    const submitted = await handler(
      apiEvent({
        method: 'POST',
        path: '/v1/tasks',
        json: { tenantId: 'orders', type: 'demo.echo', payload: { id: 7 } },
        iam: { userArn: SESSION },
      }),
    );
    const read = await handler(apiEvent({ path: `/v1/tasks/${jsonOf(submitted).taskId}`, iam: { userArn: SESSION } }));

    // Assess
    expect(submitted.statusCode).toBe(202);
    expect(read.statusCode).toBe(200);
    expect(jsonOf(read)).toMatchObject({ tenantId: 'orders', payload: { id: 7 }, state: 'QUEUED' });
  });

  it('refuses a tenant the caller is not mapped to with 403', async () => {
    // Act
    const result = await handler(apiEvent({ path: '/v1/tasks?tenantId=billing', iam: { userArn: SESSION } }));

    // Assess
    expect(result.statusCode).toBe(403);
    expect(jsonOf(result)).toMatchObject({ error: { code: 'forbidden' } });
  });
});
