/**
 * What the caller of pause, resume or delete is told when the sandbox's workflow did not carry the update
 * out: Temporal's errors mapped to domain errors (conflict, upstream failure, unavailable).
 */
import { WorkflowNotFoundError, WorkflowUpdateFailedError } from '@temporalio/client';
import { Conflict, Unavailable, UpstreamFailed } from '../errors';
import { SANDBOX_FAILURES, type SandboxUpdateName } from '../temporal/shared';
import {
  formatSeconds,
  isCancelled,
  isWorkflowTaskFailing,
  NoWorkerAnswered,
  WorkflowTaskFailing,
} from '../temporal/workflow-answer';

/**
 * The domain error for an update `op` of sandbox `id` that failed with `e`; `operationTimeoutMs` is how
 * long its result was waited for. An error it does not know is returned as it is.
 */
export function sandboxUpdateError(e: unknown, id: string, op: SandboxUpdateName, operationTimeoutMs: number): Error {
  if (e instanceof WorkflowUpdateFailedError) {
    const cause = e.cause as { type?: string; message?: string } | undefined;
    const message = cause?.message ?? e.message;
    // A provider failure is upstream (502); the rest (deleted, wrong status) is a conflict with the state (409).
    return cause?.type === SANDBOX_FAILURES.providerFailed ? new UpstreamFailed(message) : new Conflict(message);
  }
  if (e instanceof WorkflowNotFoundError)
    return new Conflict(`Sandbox ${id} has no running workflow; delete it and start a new one`);
  if (e instanceof NoWorkerAnswered) {
    return new Unavailable(
      `No worker answered the workflow of sandbox ${id} within ${formatSeconds(e.boundMs)} s (is a worker running?); the ${op} may still happen when one does: read the sandbox again`,
      5,
      { cause: e },
    );
  }
  if (e instanceof WorkflowTaskFailing || isWorkflowTaskFailing(e)) {
    // The workflow's code fails on a worker (a bug, a deploy that does not replay it): nothing the
    // caller sent is wrong, and the same call may succeed once a worker runs it again.
    return new Unavailable(
      `The workflow of sandbox ${id} is failing its workflow tasks (a worker cannot run it; its log says why), so the ${op} was not taken: try again later`,
      5,
      { cause: e },
    );
  }
  if (isCancelled(e)) {
    const s = Math.round(operationTimeoutMs / 1000);
    return new Unavailable(
      `The workflow of sandbox ${id} accepted the ${op} but did not finish it within ${s} s; it may still happen: read the sandbox again`,
      5,
    );
  }
  return e as Error;
}
