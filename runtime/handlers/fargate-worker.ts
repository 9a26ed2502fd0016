/**
 * The Fargate worker service's main program: the same worker runtime as the Lambda pool, as a
 * long-polling loop on the `worker-fargate` queue (task-worker.ts, which the worker library
 * gives the user's own containers too). Each container runs up to WORKER_CONCURRENCY attempts
 * (default: its vCPUs × 4) and extends message visibility while tasks heartbeat. SIGTERM
 * (scale-in, deploy) stops receiving and lets running attempts finish; ECS's stop timeout bounds
 * that, and an unfinished attempt is recovered through its lease.
 */
import { workerQueue } from '../infra/resources.ts';
import { defaultRegistry } from '../task-types/index.ts';
import { startTaskWorker } from './task-worker.ts';

startTaskWorker(defaultRegistry(), { queueId: workerQueue('fargate').id });
