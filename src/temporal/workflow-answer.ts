/**
 * Bounds what only a worker can answer: an Update's acceptance and a query. Temporal holds such a call
 * while no worker polls the task queue (its own deadline is long), so the api cuts it after its answer
 * bound (WORKFLOW_ANSWER_TIMEOUT_MS) and says so instead of leaving the request hanging. A workflow whose
 * task is failing is refused by Temporal at once instead: that is said too (WorkflowTaskFailing).
 */
import type { Client } from '@temporalio/client';
import { google } from '@temporalio/proto';
import { deadline } from '../deadline';

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

/**
 * The workflow's task is failing (its code throws, it does not replay its history, no worker can load
 * it): Temporal refuses the Update before the workflow takes it, so nothing was done. It may succeed once
 * a worker runs the workflow again (a deploy, a fix).
 */
export class WorkflowTaskFailing extends Error {
  override readonly name = 'WorkflowTaskFailing';
  constructor(
    readonly workflowId: string,
    options?: { cause?: unknown },
  ) {
    super(`Workflow ${workflowId} cannot take the call: its workflow task is failing`, options);
  }
}

/** 1500 -> "1.5", 10000 -> "10". */
export const formatSeconds = (ms: number): string => String(Math.round(ms / 100) / 10);

/** A call cut by its abort signal or deadline (gRPC CANCELLED or DEADLINE_EXCEEDED, or an AbortError). */
export function isCancelled(e: unknown): boolean {
  for (
    let c = e as { name?: string; code?: number; cause?: unknown } | undefined, i = 0;
    c && i < 5;
    c = c.cause as typeof c, i++
  ) {
    if (
      c.name === 'AbortError' ||
      c.name === 'TimeoutError' ||
      c.name === 'WorkflowUpdateRPCTimeoutOrCancelledError' ||
      c.code === 1 ||
      c.code === 4
    )
      return true;
  }
  return false;
}

const FAILED_PRECONDITION = 9;
const WORKFLOW_NOT_READY = 'type.googleapis.com/temporal.api.errordetails.v1.WorkflowNotReadyFailure';

/**
 * Temporal's refusal of a workflow whose task is failing: gRPC FAILED_PRECONDITION carrying a
 * WorkflowNotReadyFailure ("Unable to perform workflow execution update due to Workflow Task in failed
 * state"), under the client's ServiceError. The detail, not the code alone: FAILED_PRECONDITION has other
 * meanings that retrying does not mend.
 */
export function isWorkflowTaskFailing(e: unknown): boolean {
  for (
    let c = e as { code?: number; metadata?: { get?: (key: string) => unknown[] }; cause?: unknown } | undefined, i = 0;
    c && i < 5;
    c = c.cause as typeof c, i++
  ) {
    if (c.code !== FAILED_PRECONDITION || typeof c.metadata?.get !== 'function') continue;
    const status = c.metadata.get('grpc-status-details-bin')?.[0];
    if (!(status instanceof Uint8Array)) continue;
    try {
      if (google.rpc.Status.decode(status).details.some((d) => d.type_url === WORKFLOW_NOT_READY)) return true;
    } catch {
      // not a status the server sent: not this refusal
    }
  }
  return false;
}

/**
 * Runs `ask` (a query, or a `startUpdate` waiting for ACCEPTED) with every client call in it cut after
 * `boundMs`; a cut call becomes NoWorkerAnswered, a refusal of a workflow whose task is failing
 * WorkflowTaskFailing, anything else is thrown as it came.
 */
export async function askWorkflow<T>(
  client: Client,
  workflowId: string,
  boundMs: number,
  ask: () => Promise<T>,
): Promise<T> {
  try {
    return await withinBound(client, boundMs, ask);
  } catch (e) {
    if (isCancelled(e)) throw new NoWorkerAnswered(workflowId, boundMs, { cause: e });
    if (isWorkflowTaskFailing(e)) throw new WorkflowTaskFailing(workflowId, { cause: e });
    throw e;
  }
}

/**
 * Runs `call` with every client call in it cut after `boundMs`, or when `signal` aborts. Both: the
 * deadline covers every retry the SDK makes of a call (a signal cancels only the first attempt), the
 * signal lets a caller leave early.
 */
export async function withinBound<T>(
  client: Client,
  boundMs: number,
  call: () => Promise<T>,
  signal?: AbortSignal,
): Promise<T> {
  const bound = deadline(boundMs, signal);
  try {
    return await client.withAbortSignal(bound.signal, () => client.withDeadline(Date.now() + boundMs, call));
  } finally {
    bound.clear();
  }
}
