/**
 * Bounds what only a worker can answer: an Update's acceptance and a query. Temporal holds such a call
 * while no worker polls the task queue (its own deadline is long), so the api cuts it after its answer
 * bound (WORKFLOW_ANSWER_TIMEOUT_MS) and says so instead of leaving the request hanging.
 */
import type { Client } from '@temporalio/client';

/** No worker answered a workflow within the bound; what was asked may still happen when one does. */
export class NoWorkerAnswered extends Error {
  override readonly name = 'NoWorkerAnswered';
  constructor(
    readonly workflowId: string,
    readonly boundMs: number,
    options?: { cause?: unknown },
  ) {
    super(`No worker answered workflow ${workflowId} within ${formatSeconds(boundMs)} s`, options);
  }
}

/** 1500 -> "1.5", 10000 -> "10". */
export const formatSeconds = (ms: number): string => String(Math.round(ms / 100) / 10);

/** A call cut by its abort signal or deadline (gRPC CANCELLED or DEADLINE_EXCEEDED, or an AbortError). */
export function isCancelled(e: unknown): boolean {
  for (let c = e as { name?: string; code?: number; cause?: unknown } | undefined, i = 0; c && i < 5; c = c.cause as typeof c, i++) {
    if (c.name === 'AbortError' || c.name === 'TimeoutError' || c.name === 'WorkflowUpdateRPCTimeoutOrCancelledError' || c.code === 1 || c.code === 4) return true;
  }
  return false;
}

/**
 * Runs `ask` (a query, or a `startUpdate` waiting for ACCEPTED) with every client call in it cut after
 * `boundMs`; a cut call becomes NoWorkerAnswered, anything else is thrown as it came.
 */
export async function askWorkflow<T>(client: Client, workflowId: string, boundMs: number, ask: () => Promise<T>): Promise<T> {
  try {
    return await client.withAbortSignal(AbortSignal.timeout(boundMs), ask);
  } catch (e) {
    if (isCancelled(e)) throw new NoWorkerAnswered(workflowId, boundMs, { cause: e });
    throw e;
  }
}
