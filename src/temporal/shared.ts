/**
 * What the api, the CLI and the worker share about workflows, without importing workflow code:
 * workflow type names, workflow-id conventions, update and query names, inputs and results.
 */
import type { SandboxStatus } from '../schemas/sandboxes';

export const WORKFLOW_TYPES = {
  diagnostics: 'diagnosticsWorkflow',
  sandbox: 'sandboxWorkflow',
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
