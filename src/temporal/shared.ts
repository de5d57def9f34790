/**
 * What the api, the CLI and the worker share about workflows, without importing workflow code:
 * workflow type names, workflow-id conventions, update and query names, inputs and results.
 */
import type { SandboxStatus } from '../schemas/sandboxes';

export const WORKFLOW_TYPES = {
  diagnostics: 'diagnosticsWorkflow',
  sandbox: 'sandboxWorkflow',
  startTask: 'startTaskWorkflow',
  callbacks: 'conversationCallbacksWorkflow',
} as const;

/** Result of the diagnostics workflow: proof that a worker polls the queue and reaches the database. */
export interface DiagnosticsResult {
  worker: { identity: string; taskQueue: string };
  database: { ok: boolean; latencyMs: number; error?: string };
}

export const diagnosticsWorkflowId = (at: Date) => `diagnostics-${at.toISOString()}`;

/** One workflow per sandbox, found by the sandbox id alone. */
export const sandboxWorkflowId = (sandboxId: string) => `sandbox-${sandboxId}`;

/** Updates the sandbox workflow accepts; each answers with the resulting status. */
export const SANDBOX_UPDATES = { pause: 'pause', resume: 'resume', delete: 'delete' } as const;
export type SandboxUpdateName = keyof typeof SANDBOX_UPDATES;
export const SANDBOX_STATE_QUERY = 'state';

/** Failure types of the sandbox updates, for callers to map to HTTP answers. */
export const SANDBOX_FAILURES = {
  /** The sandbox was deleted: nothing more can be done with it. */
  deleted: 'SandboxDeleted',
  /** The operation does not apply in the current status (pausing a sandbox in ERROR). */
  conflict: 'SandboxStatusConflict',
  /** The provider could not carry the operation out; the sandbox's status says where it stands. */
  providerFailed: 'SandboxProviderFailed',
} as const;

export interface SandboxWorkflowSettings {
  healthIntervalMs: number;
  healthGraceMs: number;
  /** 0: never pause for idleness. */
  idleTimeoutMs: number;
  /** Continue as new past this many history events; 0: when Temporal suggests it. */
  historyLimit: number;
}

export interface SandboxState {
  status: SandboxStatus;
  status_detail: string | null;
}

export interface SandboxWorkflowInput {
  sandboxId: string;
  ownerUserId: string;
  settings: SandboxWorkflowSettings;
  /** Set when the workflow continued as new: where the previous run left off. */
  carried?: SandboxState & { failingSinceMs: number | null };
}

/** One workflow per start task; the task id is the conversation's id, so a second start of it joins the first. */
export const startTaskWorkflowId = (taskId: string) => `start-task-${taskId}`;

/** Query of the start-task workflow: every snapshot so far, oldest first (a reader never misses a status). */
export const START_TASK_SNAPSHOTS_QUERY = 'snapshots';

/** A start task as the api serves it (SPEC 2.3); dates as ISO strings. */
export interface StartTaskSnapshot {
  id: string;
  created_by_user_id: string;
  status: string;
  detail: string | null;
  request: Record<string, unknown>;
  app_conversation_id: string | null;
  sandbox_id: string | null;
  agent_server_url: string | null;
  created_at: string;
  updated_at: string;
}

export interface StartTaskSettings {
  /** How long the start waits for its sandbox to run (ms). */
  sandboxWaitMs: number;
  /** Bound of the repository's setup script (ms). */
  setupScriptTimeoutMs: number;
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

/** One callbacks workflow per conversation: it runs the conversation's callback processors on new events. */
export const callbacksWorkflowId = (conversationId: string) => `conversation-callbacks-${conversationId}`;

/** Signal to the callbacks workflow: events were stored; it processes all not yet processed. */
export const CALLBACKS_EVENTS_SIGNAL = 'events';

export interface CallbacksWorkflowInput {
  conversationId: string;
}

/** The events a round of callbacks covers: seq in (fromSeq, toSeq]; `processors` is how many are registered. */
export interface CallbackRange {
  fromSeq: number;
  toSeq: number;
  processors: number;
}

