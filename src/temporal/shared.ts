/**
 * The Temporal contract: what the api, the CLI, the worker and the workflows share about workflows,
 * without importing workflow code. Here: workflow type names and signatures, search attribute keys and the
 * diagnostics workflow; each other workflow's ids, updates, queries, signals, failure types, inputs and
 * results are in its own part (sandbox-, start-task-, admission-, callbacks-contract.ts, and the UI's
 * summaries in workflow-summaries.ts), re-exported from here: callers and workflows import this module
 * only (the workflows' lint allows no other module of src/ but types). Workflow-safe: it and its parts
 * import only the definition helpers of the SDK (no I/O) and types.
 */
import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';
import type { StartTaskStatus } from '../schemas/app-conversations';
import type { SandboxStatus } from '../schemas/sandboxes';
import type { StartAdmissionInput } from './admission-contract';
import type { CallbacksWorkflowInput } from './callbacks-contract';
import type { SandboxState, SandboxWorkflowInput } from './sandbox-contract';
import type { StartTaskSnapshot, StartTaskWorkflowInput } from './start-task-contract';

export type { SandboxStatus, StartTaskStatus };
export * from './admission-contract';
export * from './callbacks-contract';
export * from './sandbox-contract';
export * from './start-task-contract';
export * from './workflow-summaries';

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
