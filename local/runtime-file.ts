/**
 * DATA_DIR/runtime.json while `npm start` runs: where its API and emulators listen, so the
 * operator commands that work on the queues and tables directly (`tasks redrive`) find the
 * local runtime as they find a stack's resources on AWS. Kept apart from server.ts so the
 * published CLI can read it without loading the emulators.
 */
import type { SchedulerConfig } from '../runtime/core/config.ts';

export const RUNTIME_FILE = 'runtime.json';

export interface RuntimeDescription {
  readonly pid: number;
  readonly url: string;
  /** The emulators' (or the external endpoint's) URLs; `region` absent in files of older versions (us-east-1). */
  readonly endpoints: { readonly dynamodb: string; readonly sqs: string; readonly region?: string };
  readonly tables: Readonly<Record<string, string>>;
  readonly queueUrls: Readonly<Record<string, string>>;
  readonly config: SchedulerConfig;
}
