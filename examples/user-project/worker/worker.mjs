// The container's main: long-polls shop.receipt's own queue (WORKER_QUEUE, set by the stack) and
// runs its attempts with the worker library (lease, heartbeats, cancel signal, result), as the
// scheduler's own workers do. SIGTERM (scale-in, deploy) lets the running attempts finish.
import { startTaskWorker } from 'serverless-task-scheduler/worker';
import { receipt } from '../tasks.mjs';

startTaskWorker([receipt]);
