import type { ActivityOptions } from '@temporalio/workflow';

/** Named timeout and retry presets for activities; workflows pick one by name. */
export const ACTIVITY_OPTIONS = {
  /** Quick database or bookkeeping calls. */
  quick: {
    startToCloseTimeout: '10 seconds',
    retry: { initialInterval: '200 milliseconds', backoffCoefficient: 2, maximumInterval: '5 seconds', maximumAttempts: 5 },
  },
} as const satisfies Record<string, ActivityOptions>;

/** Sandbox activities: provider calls may take a while (image pulls, runtimes coming up) and heartbeat. */
export const SANDBOX_ACTIVITY_OPTIONS = {
  provider: {
    startToCloseTimeout: '5 minutes',
    heartbeatTimeout: '10 seconds',
    retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '20 seconds', maximumAttempts: 4 },
  },
  /** The status write: one quick database update, run as a local activity (no round trip through the server). */
  record: {
    startToCloseTimeout: '10 seconds',
    retry: { initialInterval: '200 milliseconds', backoffCoefficient: 2, maximumInterval: '5 seconds' },
  },
  /** A health check (local: a marker in history, not three events) is repeated by the workflow itself; one quick retry covers a blip. */
  check: {
    startToCloseTimeout: '15 seconds',
    retry: { initialInterval: '500 milliseconds', maximumAttempts: 2 },
  },
} as const satisfies Record<string, ActivityOptions>;
