/**
 * The Temporal contract: what the api, the CLI, the worker and the workflows share about workflows,
 * without importing workflow code. Workflow type names and signatures, workflow-id conventions, the
 * update, query and signal definitions, search attribute keys, failure types, statuses, inputs and
 * results. Workflow-safe: it imports only the definition helpers of the SDK (no I/O) and types.
 */
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';
import type { StartTask, StartTaskStatus } from '../schemas/app-conversations';
import type { SandboxStatus } from '../schemas/sandboxes';

export type { SandboxStatus, StartTaskStatus };

export const WORKFLOW_TYPES = {
  diagnostics: 'diagnosticsWorkflow',
  sandbox: 'sandboxWorkflow',
  startTask: 'startTaskWorkflow',
  callbacks: 'conversationCallbacksWorkflow',
  startAdmission: 'startAdmissionWorkflow',
} as const;

/**
 * The workflows' signatures, by the key of their name in WORKFLOW_TYPES. Callers start a workflow typed
 * by them (`workflow.start<SandboxWorkflow>(WORKFLOW_TYPES.sandbox, ...)`), so its arguments are checked
 * without the api importing workflow code; workflows/index.ts checks the functions against them.
 */
export interface WorkflowSignatures {
  diagnostics: () => Promise<DiagnosticsResult>;
  sandbox: (input: SandboxWorkflowInput) => Promise<SandboxState>;
  startTask: (input: StartTaskWorkflowInput) => Promise<StartTaskSnapshot[]>;
  callbacks: (input: CallbacksWorkflowInput) => Promise<void>;
  startAdmission: (input: StartAdmissionInput) => Promise<void>;
}
export type DiagnosticsWorkflow = WorkflowSignatures['diagnostics'];
export type SandboxWorkflow = WorkflowSignatures['sandbox'];
export type StartTaskWorkflow = WorkflowSignatures['startTask'];
export type CallbacksWorkflow = WorkflowSignatures['callbacks'];
export type StartAdmissionWorkflow = WorkflowSignatures['startAdmission'];

/**
 * Custom search attributes the workflows keep current, so operators can filter starts and sandboxes in
 * the Temporal UI (`OwnerUserId = "..." AND SandboxStatus = "RUNNING"`). search-attributes.ts derives
 * from these keys what the dev server and a shared server are told to register.
 */
export const SEARCH_ATTRIBUTE_KEYS = {
  OwnerUserId: defineSearchAttributeKey('OwnerUserId', SearchAttributeType.KEYWORD),
  SandboxStatus: defineSearchAttributeKey('SandboxStatus', SearchAttributeType.KEYWORD),
  StartTaskStatus: defineSearchAttributeKey('StartTaskStatus', SearchAttributeType.KEYWORD),
  /** The conversation a start task starts, or whose callbacks a callbacks workflow runs. */
  ConversationId: defineSearchAttributeKey('ConversationId', SearchAttributeType.KEYWORD),
  /** The sandbox a start task runs in, once it has one. */
  SandboxId: defineSearchAttributeKey('SandboxId', SearchAttributeType.KEYWORD),
} as const;
export type SearchAttributeName = keyof typeof SEARCH_ATTRIBUTE_KEYS;

/** Result of the diagnostics workflow: proof that a worker polls the queue and reaches the database. */
export interface DiagnosticsResult {
  worker: { identity: string; taskQueue: string };
  database: { ok: boolean; latencyMs: number; error?: string };
}

export const diagnosticsWorkflowId = (at: Date) => `diagnostics-${at.toISOString()}`;

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

/**
 * One admission workflow per user (`start-admission-<user id>`), and one per organization with quotas
 * (`start-admission-org-<organization id>`): a semaphore with a FIFO line. A start asks for a place
 * (signal-with-start, from an activity) and waits for the workflow's word; it says when it has ended.
 * The workflow admits from the front while the quotas allow, tells each waiting start its place, and
 * ends when nobody waits or holds a place. A start takes its place in its user's line first, then in
 * its organization's: every start takes them in that order, so none waits on another in a circle.
 */
export const startAdmissionWorkflowId = (userId: string) => `start-admission-${userId}`;
export const organizationAdmissionWorkflowId = (organizationId: string) => `start-admission-org-${organizationId}`;

/** Which line: a user's, or an organization's. */
export type AdmissionLineKind = 'user' | 'organization';

/** What the starts of one line may hold at once; null: no bound. */
export interface AdmissionLimits {
  /** Starts under way (USER_MAX_CONCURRENT_STARTS, or the organization's): each holds at most one of the worker's activity slots. */
  maxStarts: number | null;
  /** Sandboxes starting or running (USER_MAX_RUNNING_SANDBOXES, or the organization's): a start that makes a new one needs room. */
  maxRunning: number | null;
  /** How a waiting start is told where each limit comes from (an organization's: its variable or its own quota); absent: the user's variables. */
  named?: { maxStarts: string; maxRunning: string };
}

/** A start asking for its turn; the latest request's limits are the ones that hold. */
export interface AdmissionRequest {
  taskId: string;
  /**
   * The sandbox the start needs room for among the line's running ones: the one it will make, or the one
   * it names when that one does not run (it resumes it); null when it uses a sandbox that runs.
   */
  roomFor: string | null;
  limits: AdmissionLimits;
}

/** Whose line: a user's (every run before organization lines), or an organization's. */
export type AdmissionLineOwner =
  { userId: string; organizationId?: undefined } | { organizationId: string; userId?: undefined };

export type StartAdmissionInput = AdmissionLineOwner & {
  limits: AdmissionLimits;
  /** How often a line held up by the running-sandbox quota looks again at the sandboxes (ms). */
  pollMs: number;
  /** Set when the workflow continued as new: the line and the holders. */
  queue?: AdmissionRequest[];
  admitted?: AdmissionRequest[];
};

/** Signal to the admission workflow: a start asks for its turn (a second ask of the same task changes nothing). */
export const admissionRequestSignal = defineSignal<[AdmissionRequest]>('admissionRequest');
/** Signal to the admission workflow: the start has ended (or gave up waiting); its place goes to the next. */
export const admissionReleaseSignal = defineSignal<[{ taskId: string }]>('admissionRelease');
/** Query of the admission workflow: who holds a place and who waits, in order. */
export const admissionLineQuery = defineQuery<{ admitted: string[]; waiting: string[] }>('line');

/**
 * The admission workflow's word to a start: go on, or its place in line and what holds it up. `line`
 * says which of the start's lines speaks (absent: its user's, as before organization lines).
 */
export type AdmissionVerdict = ({ admitted: true } | { admitted: false; place: number; reason: string }) & {
  line?: AdmissionLineKind;
};
/** Signal to the start-task workflow carrying the verdict. */
export const admissionVerdictSignal = defineSignal<[AdmissionVerdict]>('admissionVerdict');

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
export const callbacksEventsSignal = defineSignal('events');

export interface CallbacksWorkflowInput {
  conversationId: string;
  /** The user who started the conversation (OwnerUserId); absent in runs started before it was sent. */
  ownerUserId?: string;
  /** A run with nothing new for this long ends (the next event starts another); absent: one hour, as before. */
  idleMs?: number;
}

/** The events a round of callbacks covers: seq in (fromSeq, toSeq]; `processors` is how many are registered. */
export interface CallbackRange {
  fromSeq: number;
  toSeq: number;
  processors: number;
}

/**
 * A value a user sent, as the Temporal UI may show it: one line, at most 120 characters, in JSON quotes
 * (so Markdown and look-alike text stay text).
 */
export function shown(value: string): string {
  // eslint-disable-next-line no-control-regex
  const line = value.replace(/[\u0000-\u001f\u007f\u2028\u2029]/g, ' ');
  return JSON.stringify(line.length > 120 ? `${line.slice(0, 119)}…` : line);
}

/**
 * What the Temporal UI shows for each workflow (its static summary and details), so an operator reads a
 * list of workflows without decoding payloads. Built from the inputs, which hold no secrets.
 */
export const workflowSummaries = {
  sandbox: (input: SandboxWorkflowInput) => ({
    staticSummary: `Sandbox ${input.sandboxId} of user ${input.ownerUserId}`,
  }),
  startTask: (input: StartTaskWorkflowInput) => {
    const r = input.request;
    const what = r.selected_repository
      ? `${shown(r.selected_repository)}${r.selected_branch ? ` branch ${shown(r.selected_branch)}` : ''}`
      : 'an empty workspace';
    // What the service knows first, then what the user sent, quoted: a request cannot dress itself up
    // as another user's start or add lines to the details.
    const details = [
      `- user: ${input.userId}`,
      `- conversation: ${input.taskId}`,
      `- repository: ${what}${r.git_provider ? ` (${shown(r.git_provider)})` : ''}`,
      `- sandbox: ${r.sandbox_id ? shown(r.sandbox_id) : 'a new one'}`,
      `- plugins: ${r.plugins?.length ?? 0}`,
    ];
    return { staticSummary: `Start for user ${input.userId}: ${what}`, staticDetails: details.join('\n') };
  },
  callbacks: (input: CallbacksWorkflowInput) => ({
    staticSummary: `Callbacks of conversation ${input.conversationId}`,
  }),
  startAdmission: (input: StartAdmissionInput) => ({
    staticSummary:
      input.organizationId !== undefined
        ? `Start line of organization ${input.organizationId}`
        : `Start line of user ${input.userId}`,
  }),
};
