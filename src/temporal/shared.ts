/**
 * What the api, the CLI and the worker share about workflows, without importing workflow code:
 * workflow type names, workflow-id conventions, result types.
 */
export const WORKFLOW_TYPES = {
  diagnostics: 'diagnosticsWorkflow',
} as const;

/** Result of the diagnostics workflow: proof that a worker polls the queue and reaches the database. */
export interface DiagnosticsResult {
  worker: { identity: string; taskQueue: string };
  database: { ok: boolean; latencyMs: number; error?: string };
}

export const diagnosticsWorkflowId = (at: Date) => `diagnostics-${at.toISOString()}`;
