import type { ActivityOptions } from '@temporalio/workflow';

/** Named timeout and retry presets for activities; workflows pick one by name. */
export const ACTIVITY_OPTIONS = {
  /** Quick database or bookkeeping calls. */
  quick: {
    startToCloseTimeout: '10 seconds',
    retry: { initialInterval: '200 milliseconds', backoffCoefficient: 2, maximumInterval: '5 seconds', maximumAttempts: 5 },
  },
} as const satisfies Record<string, ActivityOptions>;
