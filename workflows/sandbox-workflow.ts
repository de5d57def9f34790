/**
 * One workflow per sandbox (id `sandbox-<id>`), the only writer of its status:
 *
 *   STARTING -> RUNNING            the provider starts the runtime and it answers /alive
 *   STARTING -> ERROR              it could not (status_detail says why)
 *   RUNNING  -> PAUSED             pause update, or no use for SANDBOX_IDLE_TIMEOUT_MS
 *   RUNNING  -> ERROR              /alive failing for longer than the grace period
 *   PAUSED | ERROR | MISSING -> RUNNING   resume update (a runtime that is gone is started again)
 *   PAUSED   -> MISSING            the provider lost the paused runtime
 *   any      -> DELETED            delete update; the workflow then ends
 *
 * Updates are serialised: each runs to its end before the next (or a health check) starts. It
 * continues as new when its history grows long, after its handlers finish.
 */
import {
  allHandlersFinished,
  ApplicationFailure,
  condition,
  continueAsNew,
  defineQuery,
  defineUpdate,
  proxyActivities,
  proxyLocalActivities,
  setHandler,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';
import type { Activities } from '../activities';
import type { SandboxStatus } from '../src/schemas/sandboxes';
import { SANDBOX_FAILURES, SANDBOX_STATE_QUERY, SANDBOX_UPDATES, type SandboxState, type SandboxWorkflowInput } from '../src/temporal/shared';
import { SANDBOX_ACTIVITY_OPTIONS } from './activity-options';

const provider = proxyActivities<Activities>(SANDBOX_ACTIVITY_OPTIONS.provider);
const { checkSandboxRuntime } = proxyLocalActivities<Activities>(SANDBOX_ACTIVITY_OPTIONS.check);
const { recordSandboxStatus } = proxyLocalActivities<Activities>(SANDBOX_ACTIVITY_OPTIONS.record);

export const pauseUpdate = defineUpdate<SandboxState>(SANDBOX_UPDATES.pause);
export const resumeUpdate = defineUpdate<SandboxState>(SANDBOX_UPDATES.resume);
export const deleteUpdate = defineUpdate<SandboxState>(SANDBOX_UPDATES.delete);
export const stateQuery = defineQuery<SandboxState>(SANDBOX_STATE_QUERY);
const FAILURE = SANDBOX_FAILURES;

const OwnerUserId = defineSearchAttributeKey('OwnerUserId', SearchAttributeType.KEYWORD);
const SandboxStatusKey = defineSearchAttributeKey('SandboxStatus', SearchAttributeType.KEYWORD);

/** Workflow time: `new Date()` in a workflow is the replayed time of the current task. */
const now = () => new Date().getTime();

/** The message of an activity failure, without Temporal's wrapping. */
function reason(e: unknown): string {
  let err = e as { message?: string; cause?: unknown };
  while (err.cause && typeof err.cause === 'object') err = err.cause as typeof err;
  return err.message ?? String(e);
}

const minutes = (ms: number) => (ms % 60_000 === 0 ? `${ms / 60_000} min` : `${Math.round(ms / 1000)} s`);

export async function sandboxWorkflow(input: SandboxWorkflowInput): Promise<SandboxState> {
  const { sandboxId, settings } = input;
  let status: SandboxStatus = input.carried?.status ?? 'STARTING';
  let detail: string | null = input.carried?.status_detail ?? null;
  let failingSince: number | null = input.carried?.failingSinceMs ?? null;
  const state = (): SandboxState => ({ status, status_detail: detail });

  // One operation at a time: updates and health checks queue behind each other.
  let tail: Promise<unknown> = Promise.resolve();
  const serial = <T>(work: () => Promise<T>): Promise<T> => {
    const run = tail.then(work);
    tail = run.catch(() => undefined);
    return run;
  };

  const setStatus = async (next: SandboxStatus, nextDetail: string | null) => {
    status = next;
    detail = nextDetail;
    upsertSearchAttributes([{ key: SandboxStatusKey, value: next }]);
    await recordSandboxStatus(sandboxId, next, nextDetail);
  };

  const refuseIfDeleted = () => {
    if (status === 'DELETED') throw ApplicationFailure.nonRetryable(`sandbox ${sandboxId} was deleted`, FAILURE.deleted);
  };

  setHandler(stateQuery, state);

  setHandler(
    pauseUpdate,
    () =>
      serial(async () => {
        refuseIfDeleted();
        if (status === 'PAUSED') return state();
        if (status !== 'RUNNING') {
          throw ApplicationFailure.nonRetryable(`sandbox ${sandboxId} is ${status}${detail ? ` (${detail})` : ''}: resume or delete it`, FAILURE.conflict);
        }
        try {
          await provider.pauseSandboxRuntime(sandboxId);
        } catch (e) {
          throw ApplicationFailure.nonRetryable(`pausing failed: ${reason(e)}`, FAILURE.providerFailed);
        }
        await setStatus('PAUSED', 'paused on request');
        return state();
      }),
    { validator: refuseIfDeleted },
  );

  setHandler(
    resumeUpdate,
    () =>
      serial(async () => {
        refuseIfDeleted();
        if (status === 'RUNNING') return state();
        try {
          await provider.resumeSandboxRuntime(sandboxId);
        } catch (e) {
          await setStatus('ERROR', `resuming failed: ${reason(e)}`);
          throw ApplicationFailure.nonRetryable(detail!, FAILURE.providerFailed);
        }
        failingSince = null;
        await setStatus('RUNNING', null);
        return state();
      }),
    { validator: refuseIfDeleted },
  );

  setHandler(deleteUpdate, () =>
    serial(async () => {
      if (status === 'DELETED') return state();
      try {
        await provider.deleteSandboxRuntime(sandboxId);
      } catch (e) {
        throw ApplicationFailure.nonRetryable(`deleting failed: ${reason(e)}; try again`, FAILURE.providerFailed);
      }
      await setStatus('DELETED', 'deleted on request');
      return state();
    }),
  );

  /** One look at the runtime, acting on what it shows. */
  const healthCheck = async () => {
    if (status !== 'RUNNING' && status !== 'PAUSED' && status !== 'ERROR') return;
    const check = await checkSandboxRuntime(sandboxId).catch((e: unknown) => ({ state: 'unreachable' as const, detail: reason(e), lastUsedAtMs: now() }));
    if (status === 'PAUSED') {
      if (check.state === 'missing') await setStatus('MISSING', `${check.detail}; resume to start it again, or delete it`);
      return;
    }
    if (check.state === 'alive') {
      failingSince = null;
      if (status === 'ERROR') await setStatus('RUNNING', null);
      else if (settings.idleTimeoutMs > 0 && now() - check.lastUsedAtMs >= settings.idleTimeoutMs) {
        const paused = await provider.pauseSandboxRuntime(sandboxId).then(
          () => true,
          () => false, // still RUNNING; the next check tries again
        );
        if (paused) await setStatus('PAUSED', `paused after ${minutes(settings.idleTimeoutMs)} without use`);
      }
      return;
    }
    if (status === 'ERROR') return;
    const problem = check.state === 'paused' ? 'the runtime was stopped outside the service' : check.detail;
    failingSince ??= now();
    if (now() - failingSince >= settings.healthGraceMs) {
      await setStatus('ERROR', `${problem} (failing for ${minutes(now() - failingSince)}); resume to restart the runtime, or delete the sandbox`);
    }
  };

  const historyTooLong = () => {
    const info = workflowInfo();
    return info.continueAsNewSuggested || (settings.historyLimit > 0 && info.historyLength >= settings.historyLimit);
  };

  upsertSearchAttributes([
    { key: OwnerUserId, value: input.ownerUserId },
    { key: SandboxStatusKey, value: status },
  ]);

  if (!input.carried) {
    await serial(async () => {
      try {
        await provider.startSandboxRuntime(sandboxId); // records RUNNING as its last step
        status = 'RUNNING';
        upsertSearchAttributes([{ key: SandboxStatusKey, value: status }]);
      } catch (e) {
        await setStatus('ERROR', `the runtime did not start: ${reason(e)}`);
      }
    });
  }

  // `status` changes in handlers; read it through a function so the compiler does not narrow it here.
  const deleted = () => status === 'DELETED';
  while (!deleted()) {
    await condition(() => deleted() || historyTooLong(), settings.healthIntervalMs);
    if (deleted()) break;
    if (historyTooLong()) {
      await condition(allHandlersFinished);
      if (deleted()) break;
      return continueAsNew<typeof sandboxWorkflow>({ ...input, carried: { ...state(), failingSinceMs: failingSince } });
    }
    await serial(healthCheck);
  }
  await condition(allHandlersFinished);
  return state();
}
