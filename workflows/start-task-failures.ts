/**
 * What a failed step of the start-task workflow means: whether it was the quota's refusal, and the
 * detail its ERROR status carries. Pure: no workflow calls.
 */
import { ActivityFailure, ApplicationFailure, TimeoutFailure } from '@temporalio/workflow';
import { START_TASK_FAILURES } from '../src/temporal/shared';

/** The quota's refusal of a sandbox the line had found room for. */
export function isOverQuota(e: unknown): boolean {
  return (
    e instanceof ActivityFailure &&
    e.cause instanceof ApplicationFailure &&
    e.cause.type === START_TASK_FAILURES.overQuota
  );
}

/** What a person can act on: the message of the failure that stopped the start, or which step ran out of time. */
export function detailOf(e: unknown): string {
  const step = e instanceof ActivityFailure ? e.activityType : undefined;
  let cause: unknown = e;
  while (cause instanceof ActivityFailure && cause.cause) cause = cause.cause;
  if (cause instanceof TimeoutFailure)
    return `The step ${step ?? 'of the start'} did not finish in time (${cause.timeoutType === 'HEARTBEAT' ? 'its worker stopped answering' : 'its timeout passed'}); start again`;
  if (cause instanceof ApplicationFailure) return cause.message;
  return `${step ? `The step ${step} failed: ` : ''}${cause instanceof Error ? cause.message : String(cause)}`;
}
