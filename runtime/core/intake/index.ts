export {
  type AnnouncementDecision,
  type IntakeOptions,
  IntakeWindows,
  type PromiseDue,
  type QueuedRef,
  type TenantTier,
} from './windows.ts';
