/**
 * The start-task workflow's part of the Temporal contract: its id, its snapshots query and update, its
 * signals, its activities' failure types, its settings and input. Workflow-safe.
 */
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type { StartTask } from '../schemas/app-conversations';
import type { AdmissionLimits } from './admission-contract';

/** One workflow per start task; the task id is the conversation's id, so a second start of it joins the first. */
export const startTaskWorkflowId = (taskId: string) => `start-task-${taskId}`;

/** A start task as the api serves it (SPEC 2.3, StartTaskSchema); its request as the free-form object the workflow carries. */
export type StartTaskSnapshot = Omit<StartTask, 'request'> & { request: Record<string, unknown> };

/** Query of the start-task workflow: every snapshot so far, oldest first (a reader never misses a status). */
export const startTaskSnapshotsQuery = defineQuery<StartTaskSnapshot[]>('snapshots');

/** Argument of startTaskSnapshotsAfterUpdate: how many snapshots the reader has, and the time of its first. */
export interface SnapshotsAfter {
  after: number;
  /** updated_at of the first snapshot the reader has; another one means the run started again from the record. */
  firstAt?: string;
}

/** Answer of startTaskSnapshotsAfterUpdate: the snapshots from position `from` on, and whether the start has ended. */
export interface SnapshotsFrom {
  from: number;
  snapshots: StartTaskSnapshot[];
  done: boolean;
}

/**
 * Update of the start-task workflow: returns once it has a snapshot past `after` (or the start has ended),
 * with every snapshot from `after` on; from 0 when the reader's first snapshot is not this run's.
 */
export const startTaskSnapshotsAfterUpdate = defineUpdate<SnapshotsFrom, [SnapshotsAfter]>('snapshotsAfter');

/** Signal to the start-task workflow: a message was queued for the conversation (its delivery waits for READY). */
export const pendingMessagesSignal = defineSignal('pendingMessages');

/** Failure types of the start-task activities. */
export const START_TASK_FAILURES = {
  /** Bad input (a foreign sandbox, a repository that cannot be cloned): not retried; its message is the ERROR detail. */
  input: 'StartInputError',
  /** The user's running-sandbox quota was taken by the time the start made or resumed its sandbox: it waits its turn again. */
  overQuota: 'StartOverQuota',
} as const;

export interface StartTaskSettings {
  /** How long the start waits for its sandbox to run (ms). */
  sandboxWaitMs: number;
  /** Bound of the repository's setup script (ms). */
  setupScriptTimeoutMs: number;
  /**
   * The user's start quotas and how the lines wait (absent in runs started before them): over the user's
   * quotas, then over its organization's, the start waits its turn. Limits both null: no user line.
   */
  admission?: AdmissionLimits & {
    /** How long a start may wait in one line before it ends ERROR (ms; START_QUEUE_WAIT_MS). */
    queueWaitMs: number;
    /** How often a line held up by sandboxes looks again (ms; START_QUEUE_POLL_MS). */
    pollMs: number;
  };
}

/** What the start-task workflow gets: never a secret (they stay sealed in MongoDB, read by activities). */
export interface StartTaskWorkflowInput {
  taskId: string;
  userId: string;
  /** The echoed request: secrets masked. */
  request: {
    sandbox_id?: string;
    selected_repository?: string;
    selected_branch?: string;
    git_provider?: string | null;
    plugins?: { source: string; ref?: string; repo_path?: string }[];
  } & Record<string, unknown>;
  settings: StartTaskSettings;
}
