/**
 * One workflow per sandbox (id `sandbox-<id>`), the only writer of its status:
 *
 *   STARTING -> RUNNING            the provider starts the runtime and it answers /alive
 *   STARTING -> ERROR              it could not (status_detail says why)
 *   RUNNING  -> PAUSED             pause update, or no use for SANDBOX_IDLE_TIMEOUT_MS
 *   RUNNING  -> ERROR              /alive failing for longer than the grace period, or at once when the
 *                                  provider reports the runtime gone (its address is no longer its own)
 *   PAUSED | ERROR | MISSING -> RUNNING   resume update (a runtime that is gone is started again)
 *   PAUSED   -> MISSING            the provider lost the paused runtime
 *   any      -> DELETED            delete update; the workflow then ends
 *
 * SandboxLifecycle (sandbox-lifecycle.ts) decides each transition; this file drives it: it makes the
 * provider calls and status writes the lifecycle asks for, and turns its refusals into update failures.
 * Updates are serialised: each runs to its end before the next (or a health check) starts. It
 * continues as new when its history grows long, after its handlers finish.
 */
import {
  allHandlersFinished,
  ApplicationFailure,
  condition,
  continueAsNew,
  patched,
  proxyActivities,
  proxyLocalActivities,
  setHandler,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { Activities } from '../activities';
import type { RuntimeCheck } from '../activities/sandbox-activities';
import {
  SANDBOX_FAILURES,
  SANDBOX_UPDATES,
  SEARCH_ATTRIBUTE_KEYS,
  sandboxStateQuery,
  type SandboxState,
  type SandboxStatus,
  type SandboxUpdateName,
  type SandboxWorkflowInput,
} from '../src/temporal/shared';
import { SANDBOX_ACTIVITY_OPTIONS } from './activity-options';
import { SandboxLifecycle, type ProviderAction, type ProviderOutcome, type Step } from './sandbox-lifecycle';

const provider = proxyActivities<Activities>(SANDBOX_ACTIVITY_OPTIONS.provider);
const { checkSandboxRuntime } = proxyLocalActivities<Activities>(SANDBOX_ACTIVITY_OPTIONS.check);
const { recordSandboxStatus } = proxyLocalActivities<Activities>(SANDBOX_ACTIVITY_OPTIONS.record);

const PROVIDER_CALLS = {
  start: provider.startSandboxRuntime,
  pause: provider.pauseSandboxRuntime,
  resume: provider.resumeSandboxRuntime,
  delete: provider.deleteSandboxRuntime,
} as const satisfies Record<ProviderAction['call'], (sandboxId: string) => Promise<void>>;

/** The patch that made the start depend on the status (see where it is used). */
const START_ONLY_WHILE_STARTING = 'sandbox-start-only-while-starting';
/** The patch that made a RUNNING sandbox whose runtime is gone ERROR at once (LifecycleRules). */
const GONE_IS_ERROR_AT_ONCE = 'sandbox-gone-is-error-at-once';
/**
 * The patch after which a health check that could not be made (its activity failed: the database or the
 * provider stalled, the worker went away) is no verdict on the runtime. Before it, such a failure counted
 * as a runtime that does not answer, and a database frozen for longer than the grace period put every
 * RUNNING sandbox in ERROR.
 */
const FAILED_CHECK_IS_NO_VERDICT = 'sandbox-failed-check-is-no-verdict';

/** Workflow time: `new Date()` in a workflow is the replayed time of the current task. */
const now = () => new Date().getTime();

/** The message of an activity failure, without Temporal's wrapping. */
function reason(e: unknown): string {
  let err = e as { message?: string; cause?: unknown };
  while (err.cause && typeof err.cause === 'object') err = err.cause as typeof err;
  return err.message ?? String(e);
}

const publish = (status: SandboxStatus) => upsertSearchAttributes([{ key: SEARCH_ATTRIBUTE_KEYS.SandboxStatus, value: status }]);

export async function sandboxWorkflow(input: SandboxWorkflowInput): Promise<SandboxState> {
  const { sandboxId, settings } = input;
  // Runs recorded before the rule waited out the grace period for a gone runtime too; they replay so.
  const lifecycle = new SandboxLifecycle(sandboxId, settings, input.carried, { goneIsErrorAtOnce: patched(GONE_IS_ERROR_AT_ONCE) });

  // One operation at a time: updates and health checks queue behind each other.
  let tail: Promise<unknown> = Promise.resolve();
  const serial = <T>(work: () => Promise<T>): Promise<T> => {
    const run = tail.then(work);
    tail = run.catch(() => undefined);
    return run;
  };

  /** Carries out a step and those that follow from its provider call; answers the state it ends in. */
  const drive = async (step: Step): Promise<SandboxState> => {
    for (;;) {
      if (step.change) {
        publish(step.change.status);
        if (!step.change.written) {
          await recordSandboxStatus.executeWithOptions({ summary: `record ${step.change.status}` }, [sandboxId, step.change.status, step.change.status_detail]);
        }
      }
      if (step.refuse) throw ApplicationFailure.nonRetryable(step.refuse.message, SANDBOX_FAILURES[step.refuse.failure]);
      const action = step.act;
      if (!action) return lifecycle.state;
      // The history reads "start the runtime", "pause the runtime (idle)", ... without decoding payloads.
      const summary = `${action.call} the runtime${action.call === 'pause' && action.why === 'idle' ? ' (idle)' : ''}`;
      const outcome = await PROVIDER_CALLS[action.call].executeWithOptions({ summary }, [sandboxId]).then(
        (): ProviderOutcome => ({ ok: true }),
        (e: unknown): ProviderOutcome => ({ ok: false, reason: reason(e) }),
      );
      step = lifecycle.provided(action, outcome);
    }
  };

  const validator = (op: SandboxUpdateName) => () => {
    const refused = lifecycle.validate(op);
    if (refused) throw ApplicationFailure.nonRetryable(refused.message, SANDBOX_FAILURES[refused.failure]);
  };

  setHandler(sandboxStateQuery, () => lifecycle.state);
  setHandler(SANDBOX_UPDATES.pause, () => serial(() => drive(lifecycle.request('pause'))), { validator: validator('pause') });
  setHandler(SANDBOX_UPDATES.resume, () => serial(() => drive(lifecycle.request('resume'))), { validator: validator('resume') });
  setHandler(SANDBOX_UPDATES.delete, () => serial(() => drive(lifecycle.request('delete'))));

  /** One look at the runtime, acting on what it shows. */
  const healthCheck = async () => {
    if (!lifecycle.checksHealth) return;
    const check = await checkSandboxRuntime
      .executeWithOptions({ summary: 'health check' }, [sandboxId])
      .catch((e: unknown): RuntimeCheck | null => (patched(FAILED_CHECK_IS_NO_VERDICT) ? null : { state: 'unreachable', detail: reason(e), lastUsedAtMs: now() }));
    // Not looked at is not seen dead: the next check, a health interval later, decides.
    if (check) await drive(lifecycle.observed(check, now()));
  };

  const historyTooLong = () => {
    const info = workflowInfo();
    return info.continueAsNewSuggested || (settings.historyLimit > 0 && info.historyLength >= settings.historyLimit);
  };

  upsertSearchAttributes([
    { key: SEARCH_ATTRIBUTE_KEYS.OwnerUserId, value: input.ownerUserId },
    { key: SEARCH_ATTRIBUTE_KEYS.SandboxStatus, value: lifecycle.state.status },
  ]);

  // A new run starts its runtime unless an update that came first (resume, delete) has settled that.
  // Runs recorded before this check started the runtime regardless; they replay as they ran.
  if (patched(START_ONLY_WHILE_STARTING)) await serial(() => drive(lifecycle.start()));
  else if (!input.carried) await serial(() => drive(lifecycle.startAsBefore()));

  while (!lifecycle.deleted) {
    await condition(() => lifecycle.deleted || historyTooLong(), settings.healthIntervalMs);
    if (lifecycle.deleted) break;
    if (historyTooLong()) {
      await condition(allHandlersFinished);
      if (lifecycle.deleted) break;
      return continueAsNew<typeof sandboxWorkflow>({ ...input, carried: lifecycle.carried });
    }
    await serial(healthCheck);
  }
  await condition(allHandlersFinished);
  return lifecycle.state;
}
