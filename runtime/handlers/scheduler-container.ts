/**
 * The scheduler service's container entry (`scheduler.mode: "service"`): runs the shard named by
 * SCHEDULER_SHARD until SIGTERM (ECS replacing or stopping the task), then hands the lease back
 * and exits. Bundled as scheduler-service.mjs into the Fargate image (lib/fargate-worker-image.ts).
 */
import { servicesFromEnvironment } from '../app/wiring.ts';
import { logger } from './observability.ts';
import { startSchedulerService } from './scheduler-service.ts';

const service = startSchedulerService({ services: servicesFromEnvironment() });
for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.once(signal, () => {
    logger.info(`${signal}: handing the scheduler lease back`);
    service.stop();
  });
}
service.done.then(
  () => process.exit(0),
  (error: unknown) => {
    logger.error('scheduler service failed', { error: String(error) });
    process.exit(1);
  },
);
