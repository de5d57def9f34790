import type { ActivityOptions, RetryPolicy } from '@temporalio/workflow';
import { START_TASK_FAILURES } from '../src/temporal/shared';

/** Named timeout and retry presets for activities; workflows pick one by name. */
export const ACTIVITY_OPTIONS = {
  /** Quick database or bookkeeping calls. */
  quick: {
    startToCloseTimeout: '10 seconds',
    retry: {
      initialInterval: '200 milliseconds',
      backoffCoefficient: 2,
      maximumInterval: '5 seconds',
      maximumAttempts: 5,
    },
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

/**
 * How long a call to a sandbox's host (its task queue) waits for a worker there to take it, at most (and
 * no longer than SANDBOX_HOST_LOST_MS): past it, that host counts as not answering (a health check) or the
 * call fails saying so (an operation). A remote check and a delete behind it stay within the api's
 * SANDBOX_OPERATION_TIMEOUT_MS (60 s by default).
 */
export const HOST_WAIT_MS = 20_000;

/** A step of a start: five tries with backoff, none for a bad input (it fails the same every time). */
const STEP_RETRY: RetryPolicy = {
  initialInterval: '1 second',
  backoffCoefficient: 2,
  maximumInterval: '20 seconds',
  maximumAttempts: 5,
  nonRetryableErrorTypes: [START_TASK_FAILURES.input],
};

/** Start-task activities: bookkeeping, quick steps in the sandbox, and long ones that heartbeat. */
export const START_TASK_ACTIVITY_OPTIONS = {
  /** The status write, local: no round trip through the server between statuses. */
  record: {
    startToCloseTimeout: '10 seconds',
    retry: { initialInterval: '200 milliseconds', backoffCoefficient: 2, maximumInterval: '5 seconds' },
  },
  /** A step of a few quick calls, run as a local activity. */
  quick: {
    startToCloseTimeout: '1 minute',
    retry: STEP_RETRY,
  },
  /** A step that calls the database or the runtime, or may wait on a sandbox's resume. */
  step: {
    startToCloseTimeout: '2 minutes',
    retry: STEP_RETRY,
  },
  /** Delivering queued messages: a runtime out of reach is tried again for a while, then the messages are given up. */
  deliver: {
    startToCloseTimeout: '3 minutes',
    retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '30 seconds', maximumAttempts: 8 },
  },
  /** Waiting for a sandbox, cloning, a setup script: long, heartbeating, so a dead worker is noticed in seconds. */
  long: {
    startToCloseTimeout: '30 minutes',
    heartbeatTimeout: '10 seconds',
    retry: STEP_RETRY,
  },
} as const satisfies Record<string, ActivityOptions>;

/** The preset with a start-to-close timeout of `ms` plus a minute of slack (the activity keeps the exact bound). */
export function withTimeout(options: ActivityOptions, ms: number): ActivityOptions {
  return { ...options, startToCloseTimeout: ms + 60_000 };
}

/** Callback processors: bookkeeping is quick; a target (a git host's API) is retried with backoff, then given up. */
export const CALLBACK_ACTIVITY_OPTIONS = {
  bookkeeping: {
    startToCloseTimeout: '30 seconds',
    retry: { initialInterval: '500 milliseconds', backoffCoefficient: 2, maximumInterval: '10 seconds' },
  },
  target: {
    // A round may ask the agent for its summary (one LLM call, up to 2 minutes), read up to 10 pages of
    // the host's listing and post (30 s a call).
    startToCloseTimeout: '10 minutes',
    // It beats while it runs: a worker that died in the middle of a post is retried in seconds.
    heartbeatTimeout: '10 seconds',
    retry: {
      initialInterval: '500 milliseconds',
      backoffCoefficient: 2,
      maximumInterval: '30 seconds',
      maximumAttempts: 6,
    },
  },
} as const satisfies Record<string, ActivityOptions>;
