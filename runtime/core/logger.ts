/**
 * The logger every part of the runtime is handed (task handlers, scheduler, workers, the local
 * runtime). Powertools' Logger satisfies it in Lambda; the local runtime prints lines. It lives in
 * the core so that whoever logs depends on this interface, not on the task-handler API.
 */
export interface TaskLogger {
  /** Detail shown only when asked for (LOG_LEVEL=debug locally, POWERTOOLS_LOG_LEVEL on AWS). */
  debug?(message: string, extra?: Record<string, unknown>): void;
  info(message: string, extra?: Record<string, unknown>): void;
  warn(message: string, extra?: Record<string, unknown>): void;
  error(message: string, extra?: Record<string, unknown>): void;
}
