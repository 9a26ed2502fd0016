/**
 * The Fargate worker service's main program: the same worker runtime as the Lambda pool, as a
 * long-polling loop on the `worker-fargate` queue. Each container runs up to WORKER_CONCURRENCY
 * attempts (default: its vCPUs × 4) and extends message visibility while tasks heartbeat.
 * SIGTERM (scale-in, deploy) stops receiving and lets running attempts finish; ECS's stop
 * timeout bounds that, and an unfinished attempt is recovered through its lease.
 */
import { availableParallelism } from 'node:os';
import { attemptDepsFromEnvironment, servicesFromEnvironment } from '../app/wiring.ts';
import { workerQueue } from '../infra/resources.ts';
import { QueueWorker } from '../worker/queue-worker.ts';
import { ScaleInProtection } from '../worker/scale-in-protection.ts';
import { countOutcome, logger, metrics, taskLogger } from './observability.ts';

/**
 * Outcome metrics are buffered and published once a minute (and on shutdown) as EMF lines on
 * stdout; the awslogs driver ships them to CloudWatch Logs, which extracts the metrics.
 */
const PUBLISH_EVERY_MS = 60_000;

const services = servicesFromEnvironment();
const concurrency = Number(process.env.WORKER_CONCURRENCY ?? availableParallelism() * 4);
// On ECS the agent injects ECS_AGENT_URI: a busy container is then protected from scale-in.
const protection = process.env.ECS_AGENT_URI
  ? new ScaleInProtection({ agentUri: process.env.ECS_AGENT_URI, logger: taskLogger })
  : undefined;
const worker = new QueueWorker({
  queues: services.queues,
  queueId: workerQueue('fargate').id,
  maxConcurrent: concurrency,
  waitSeconds: 20,
  visibilitySeconds: Math.max(60, services.config.scheduler.runLeaseSeconds * 2),
  logger: taskLogger,
  attempt: attemptDepsFromEnvironment(services, taskLogger),
  onOutcome: countOutcome,
  onBusyChange: protection ? (busy: boolean) => void protection.setBusy(busy) : undefined,
});

worker.start();
logger.info('fargate worker started', { concurrency });
const publisher = setInterval(() => metrics.publishStoredMetrics(), PUBLISH_EVERY_MS);
for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.once(signal, () => {
    logger.info(`${signal}: draining`, { inFlight: worker.inFlight });
    worker.stop().then(() => {
      clearInterval(publisher);
      metrics.publishStoredMetrics();
      process.exit(0);
    });
  });
}
