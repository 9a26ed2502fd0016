export {
  type AnnouncementDecision,
  type IntakeOptions,
  IntakeWindows,
  type QueuedRef,
  type TenantTier,
} from './windows.ts';
