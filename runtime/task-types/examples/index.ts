/**
 * The seed's example task types: real, idempotent handlers over DynamoDB and S3. They need
 * `services.aws` and `services.resources` (see stores.ts); docs/task-types.md walks through them.
 * The local runtime creates their stores with ensureExampleResources (resources.ts) and fills
 * them with seedExampleData (seed-data.ts); neither is imported here, so worker bundles stay
 * free of the emulators.
 */
import { paymentsReconciliation } from './payments-reconciliation.ts';
import { photoResize } from './photo-resize.ts';
import { weeklySalesReport } from './weekly-sales-report.ts';

export { type ExampleResourceNames, exampleResourcesFromEnvironment } from './stores.ts';
export { paymentsReconciliation, photoResize, weeklySalesReport };

export const EXAMPLE_TASK_TYPES = [weeklySalesReport, photoResize, paymentsReconciliation] as const;
