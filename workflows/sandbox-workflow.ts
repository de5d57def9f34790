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
 *   RUNNING | PAUSED -> ERROR      no worker of its host took a health check for SANDBOX_HOST_LOST_MS
 *   ERROR (host lost) -> RUNNING | PAUSED   a worker of that host takes checks again
 *   any      -> DELETED            delete update; the workflow then ends
 *
 * SandboxLifecycle (sandbox-lifecycle.ts) decides each transition; this file drives it: it makes the
 * provider calls and status writes the lifecycle asks for, and turns its refusals into update failures.
 * Updates are serialised: each runs to its end before the next (or a health check) starts. It
 * continues as new when its history grows long, after its handlers finish.
 *
 * A process sandbox lives on one host (its processes, its files): the first time the workflow acts, it
 * places the sandbox on the host of the worker running it, and from then on its provider calls and health
 * checks go to that host's task queue. A docker or remote sandbox is reached from any worker: the shared
 * queue, with local health checks.
 */
import {
  ActivityFailure,
  allHandlersFinished,
  ApplicationFailure,
  condition,
  continueAsNew,
  patched,
  proxyActivities,
  proxyLocalActivities,
  setHandler,
  TimeoutFailure,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { Activities } from '../activities';
import type { RuntimeCheck } from '../activities/sandbox-activities';
import {
  SANDBOX_ACTIVITY_FAILURES,
  SANDBOX_FAILURES,
  SANDBOX_UPDATES,
  SEARCH_ATTRIBUTE_KEYS,
  sandboxStateQuery,
  type SandboxState,
  type SandboxStatus,
  type SandboxUpdateName,
  type SandboxWorkflowInput,
} from '../src/temporal/shared';
import { HOST_WAIT_MS, SANDBOX_ACTIVITY_OPTIONS } from './activity-options';
import {
  DEFAULT_HOST_LOST_MS,
  SandboxLifecycle,
  type ProviderAction,
  type ProviderOutcome,
  type Step,
} from './sandbox-lifecycle';

const { recordSandboxStatus, placeSandbox } = proxyLocalActivities<Activities>(SANDBOX_ACTIVITY_OPTIONS.record);

type Proxied = ReturnType<typeof proxyActivities<Activities>>;

/** The calls that act on the sandbox's runtime: where they run depends on where the sandbox lives. */
interface RuntimeCalls {
  provider: Record<ProviderAction['call'], Proxied['startSandboxRuntime']>;
  check: () => Promise<RuntimeCheck>;
}

const providerCalls = (p: Proxied): RuntimeCalls['provider'] => ({
  start: p.startSandboxRuntime,
  pause: p.pauseSandboxRuntime,
  resume: p.resumeSandboxRuntime,
  delete: p.deleteSandboxRuntime,
});

const sharedProvider = providerCalls(proxyActivities<Activities>(SANDBOX_ACTIVITY_OPTIONS.provider));
// A local health check is a marker in history; one on another queue is three events and a round trip.
const { checkSandboxRuntime: localCheck } = proxyLocalActivities<Activities>(SANDBOX_ACTIVITY_OPTIONS.check);

/** A sandbox any worker reaches: provider calls on the shared queue, health checks local. */
function anywhere(sandboxId: string): RuntimeCalls {
  return {
    provider: sharedProvider,
    check: () => localCheck.executeWithOptions({ summary: 'health check' }, [sandboxId]),
  };
}

/**
 * A sandbox on one host: provider calls on that host's queue, given up when no worker there takes them in
 * time. Health checks are local while the workflow runs on a worker of that host (the one that placed it,
 * as a rule: tasks stay with their worker); once one ran elsewhere, they go to the host's queue.
 */
function onHost(sandboxId: string, taskQueue: string, hostLostMs: number): RuntimeCalls {
  const there = { taskQueue, scheduleToStartTimeout: Math.min(HOST_WAIT_MS, hostLostMs) };
  const { checkSandboxRuntime: remoteCheck } = proxyActivities<Activities>({
    ...SANDBOX_ACTIVITY_OPTIONS.check,
    ...there,
  });
  let elsewhere = false;
  return {
    provider: providerCalls(proxyActivities<Activities>({ ...SANDBOX_ACTIVITY_OPTIONS.provider, ...there })),
    check: async () => {
      if (!elsewhere) {
        try {
          return await localCheck.executeWithOptions({ summary: 'health check' }, [sandboxId]);
        } catch (e) {
          if (!failedWith(e, SANDBOX_ACTIVITY_FAILURES.onAnotherHost)) throw e;
          elsewhere = true;
        }
      }
      return remoteCheck.executeWithOptions({ summary: 'health check on its host' }, [sandboxId]);
    },
  };
}

/** An activity's failure, of `type` (an ApplicationFailure's type anywhere in its causes). */
function failedWith(e: unknown, type: string): boolean {
  for (let c = e, i = 0; c instanceof Error && i < 5; c = c.cause, i++)
    if (c instanceof ApplicationFailure && c.type === type) return true;
  return false;
}

/** The call waited on its host's queue and no worker took it (that host is down or gone). */
function neverTaken(e: unknown): boolean {
  return (
    e instanceof ActivityFailure && e.cause instanceof TimeoutFailure && e.cause.timeoutType === 'SCHEDULE_TO_START'
  );
}

/** The patch after which a process sandbox is placed on a host and acted on there only. */
const HOST_QUEUES = 'sandbox-host-queues';
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

const publish = (status: SandboxStatus) =>
  upsertSearchAttributes([{ key: SEARCH_ATTRIBUTE_KEYS.SandboxStatus, value: status }]);

export async function sandboxWorkflow(input: SandboxWorkflowInput): Promise<SandboxState> {
  const { sandboxId, settings } = input;
  // Runs recorded before the rule waited out the grace period for a gone runtime too; they replay so.
  const lifecycle = new SandboxLifecycle(sandboxId, settings, input.carried, {
    goneIsErrorAtOnce: patched(GONE_IS_ERROR_AT_ONCE),
  });

  // Where the runtime is acted on, settled the first time it is needed (a continued run knows it).
  // Runs recorded before hosts were placed act on the shared queue; they replay so.
  // (undefined: not placed yet, or by a run from before; the run it continues as places it then.)
  let hostQueue: string | null | undefined = input.hostQueue;
  let placed: Promise<RuntimeCalls> | undefined;
  const place = async (): Promise<RuntimeCalls> => {
    if (hostQueue === undefined) {
      if (!patched(HOST_QUEUES)) return anywhere(sandboxId);
      hostQueue = await placeSandbox.executeWithOptions({ summary: 'place the sandbox on a host' }, [sandboxId]);
    }
    return hostQueue ? onHost(sandboxId, hostQueue, settings.hostLostMs ?? DEFAULT_HOST_LOST_MS) : anywhere(sandboxId);
  };
  // (A placement that failed is tried again by the next call that needs it: the failure is that call's.)
  const runtimeCalls = (): Promise<RuntimeCalls> =>
    (placed ??= place().catch((e: unknown) => {
      placed = undefined;
      throw e;
    }));
  const hostGone = () => `no worker of its host (task queue ${hostQueue}) takes its calls`;

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
          await recordSandboxStatus.executeWithOptions({ summary: `record ${step.change.status}` }, [
            sandboxId,
            step.change.status,
            step.change.status_detail,
          ]);
        }
      }
      if (step.refuse)
        throw ApplicationFailure.nonRetryable(step.refuse.message, SANDBOX_FAILURES[step.refuse.failure]);
      const action = step.act;
      if (!action) return lifecycle.state;
      // The history reads "start the runtime", "pause the runtime (idle)", ... without decoding payloads.
      const summary = `${action.call} the runtime${action.call === 'pause' && action.why === 'idle' ? ' (idle)' : ''}`;
      const outcome = await runtimeCalls()
        .then((calls) => calls.provider[action.call].executeWithOptions({ summary }, [sandboxId]))
        .then(
          (): ProviderOutcome => ({ ok: true }),
          (e: unknown): ProviderOutcome =>
            neverTaken(e) ? { ok: false, reason: hostGone(), hostAbsent: true } : { ok: false, reason: reason(e) },
        );
      step = lifecycle.provided(action, outcome);
    }
  };

  const validator = (op: SandboxUpdateName) => () => {
    const refused = lifecycle.validate(op);
    if (refused) throw ApplicationFailure.nonRetryable(refused.message, SANDBOX_FAILURES[refused.failure]);
  };

  setHandler(sandboxStateQuery, () => lifecycle.state);
  setHandler(SANDBOX_UPDATES.pause, () => serial(() => drive(lifecycle.request('pause'))), {
    validator: validator('pause'),
  });
  setHandler(SANDBOX_UPDATES.resume, () => serial(() => drive(lifecycle.request('resume'))), {
    validator: validator('resume'),
  });
  setHandler(SANDBOX_UPDATES.delete, () => serial(() => drive(lifecycle.request('delete'))));

  /** One look at the runtime, acting on what it shows. */
  const healthCheck = async () => {
    if (!lifecycle.checksHealth) return;
    const asked = now();
    let absent = false;
    const check = await runtimeCalls()
      .then((calls) => calls.check())
      .catch((e: unknown): RuntimeCheck | null => {
        absent = neverTaken(e);
        return absent || patched(FAILED_CHECK_IS_NO_VERDICT)
          ? null
          : { state: 'unreachable', detail: reason(e), lastUsedAtMs: now() };
      });
    // A host that does not answer is counted against SANDBOX_HOST_LOST_MS; any other check not made is
    // no verdict: the next check, a health interval later, decides.
    if (absent) await drive(lifecycle.hostAbsent(hostGone(), asked, now()));
    else if (check) await drive(lifecycle.observed(check, now()));
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
      // The host goes on with the next run (one not placed yet places it there).
      return continueAsNew<typeof sandboxWorkflow>({ ...input, carried: lifecycle.carried, hostQueue });
    }
    await serial(healthCheck);
  }
  await condition(allHandlersFinished);
  return lifecycle.state;
}
