/**
 * A due task is in the scheduler's engine within this long (announcement, receive, intake): the
 * API's answers allow it (runtime/app/wait.ts), a scheduler that took over publishes no snapshot
 * sooner (its predecessor's announcements come back within it), and a task taken in later than
 * this after it was due joins the rotation at the end (policy.ts #intakeTurnFloor).
 */
export const INTAKE_ALLOWANCE_MS = 5_000;
