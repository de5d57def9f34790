/**
 * Custom search attributes the workflows keep current, so operators can filter starts and sandboxes in
 * the Temporal UI (for example `OwnerUserId = "..." AND SandboxStatus = "RUNNING"`). The launcher passes
 * them to the dev server; the worker registers any that a shared Temporal server lacks.
 */
export const SEARCH_ATTRIBUTES = {
  OwnerUserId: 'Keyword',
  SandboxStatus: 'Keyword',
  StartTaskStatus: 'Keyword',
} as const;

export type SearchAttributeName = keyof typeof SEARCH_ATTRIBUTES;
