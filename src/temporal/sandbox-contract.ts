/**
 * The sandbox workflow's part of the Temporal contract: its id, its updates and query, its failure types,
 * its settings and input, and the per-host task queue its host-bound calls go to. Workflow-safe.
 */
import { defineQuery, defineUpdate } from '@temporalio/workflow';
import type { SandboxStatus } from '../schemas/sandboxes';

/** One workflow per sandbox, found by the sandbox id alone. */
export const sandboxWorkflowId = (sandboxId: string) => `sandbox-${sandboxId}`;

export interface SandboxState {
  status: SandboxStatus;
  status_detail: string | null;
}

/** Updates the sandbox workflow accepts, by operation; each answers with the resulting state. */
export const SANDBOX_UPDATES = {
  pause: defineUpdate<SandboxState>('pause'),
  resume: defineUpdate<SandboxState>('resume'),
  delete: defineUpdate<SandboxState>('delete'),
} as const;
export type SandboxUpdateName = keyof typeof SANDBOX_UPDATES;

/** The sandbox's status as its workflow holds it (the record in MongoDB follows it). */
export const sandboxStateQuery = defineQuery<SandboxState>('state');

/** Failure types of the sandbox updates, for callers to map to HTTP answers. */
export const SANDBOX_FAILURES = {
  /** The sandbox was deleted: nothing more can be done with it. */
  deleted: 'SandboxDeleted',
  /** The operation does not apply in the current status (pausing a sandbox in ERROR). */
  conflict: 'SandboxStatusConflict',
  /** The provider could not carry the operation out; the sandbox's status says where it stands. */
  providerFailed: 'SandboxProviderFailed',
} as const;
export type SandboxFailure = keyof typeof SANDBOX_FAILURES;

/** Failure types of the sandbox workflow's activities that the workflow acts on. */
export const SANDBOX_ACTIVITY_FAILURES = {
  /** A call made to run only on the sandbox's host ran on a worker of another host. */
  onAnotherHost: 'SandboxOnAnotherHost',
} as const;

export interface SandboxWorkflowSettings {
  healthIntervalMs: number;
  healthGraceMs: number;
  /** 0: never pause for idleness. */
  idleTimeoutMs: number;
  /** Continue as new past this many history events; 0: when Temporal suggests it. */
  historyLimit: number;
  /**
   * How long the worker of the host that holds a sandbox may take none of its calls before the sandbox
   * turns ERROR (SANDBOX_HOST_LOST_MS). Absent in workflows started before hosts were recorded.
   */
  hostLostMs?: number;
}

export interface SandboxWorkflowInput {
  sandboxId: string;
  ownerUserId: string;
  settings: SandboxWorkflowSettings;
  /** Set when the workflow continued as new: where the previous run left off. */
  carried?: SandboxState & { failingSinceMs: number | null; hostAbsentSinceMs?: number | null; hostLost?: boolean };
  /** Set when the workflow continued as new after placing its sandbox: the host task queue (null: the shared one). */
  hostQueue?: string | null;
}

/**
 * The task queue of one worker host: the calls that act on a sandbox held there (its processes, its
 * files) go to it, and only that host's workers poll it. Everything else goes to the shared queue.
 */
export const hostTaskQueue = (taskQueue: string, host: string) => `${taskQueue}@${host}`;
