/**
 * The sandbox workflow's hands: carries out the steps SandboxLifecycle decides (status writes, provider
 * calls), one operation at a time, for its updates and its health checks, and turns refusals into failures.
 */
import {
  ApplicationFailure,
  patched,
  proxyLocalActivities,
  setHandler,
  upsertSearchAttributes,
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
} from '../src/temporal/shared';
import { SANDBOX_ACTIVITY_OPTIONS } from './activity-options';
import type { ProviderOutcome, SandboxLifecycle, Step } from './sandbox-lifecycle';
import { FAILED_CHECK_IS_NO_VERDICT } from './sandbox-patches';
import { neverTaken, type SandboxPlacement } from './sandbox-runtime-calls';

const { recordSandboxStatus } = proxyLocalActivities<Activities>(SANDBOX_ACTIVITY_OPTIONS.record);

/** Workflow time: `new Date()` in a workflow is the replayed time of the current task. */
const now = () => new Date().getTime();

/** The message of an activity failure, without Temporal's wrapping. */
function reason(e: unknown): string {
  let err = e as { message?: string; cause?: unknown };
  while (err.cause && typeof err.cause === 'object') err = err.cause as typeof err;
  return err.message ?? String(e);
}

/** The failure type of a provider that cannot work as configured (activities' ProviderConfigError, by its class name). */
const UNRUNNABLE = 'ProviderConfigError';

/** The type of the application failure an activity failed with, if it did. */
function failureType(e: unknown): string | undefined {
  let err = e as { type?: unknown; cause?: unknown } | undefined;
  for (let i = 0; err && i < 5; i++, err = err.cause as typeof err)
    if (err instanceof ApplicationFailure) return err.type ?? undefined;
  return undefined;
}

const publish = (status: SandboxStatus) =>
  upsertSearchAttributes([{ key: SEARCH_ATTRIBUTE_KEYS.SandboxStatus, value: status }]);

export class SandboxDriver {
  /** One operation at a time: updates and health checks queue behind each other. */
  private tail: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly sandboxId: string,
    private readonly lifecycle: SandboxLifecycle,
    private readonly placement: SandboxPlacement,
  ) {}

  serial<T>(work: () => Promise<T>): Promise<T> {
    const run = this.tail.then(work);
    this.tail = run.catch(() => undefined);
    return run;
  }

  /** Answers the state query and takes the pause, resume and delete updates, each in its turn. */
  serveUpdates(): void {
    const { lifecycle } = this;
    setHandler(sandboxStateQuery, () => lifecycle.state);
    setHandler(SANDBOX_UPDATES.pause, () => this.serial(() => this.drive(lifecycle.request('pause'))), {
      validator: this.validator('pause'),
    });
    setHandler(SANDBOX_UPDATES.resume, () => this.serial(() => this.drive(lifecycle.request('resume'))), {
      validator: this.validator('resume'),
    });
    setHandler(SANDBOX_UPDATES.delete, () => this.serial(() => this.drive(lifecycle.request('delete'))));
  }

  private validator(op: SandboxUpdateName) {
    return () => {
      const refused = this.lifecycle.validate(op);
      if (refused) throw ApplicationFailure.nonRetryable(refused.message, SANDBOX_FAILURES[refused.failure]);
    };
  }

  /** Carries out a step and those that follow from its provider call; answers the state it ends in. */
  async drive(step: Step): Promise<SandboxState> {
    const { sandboxId, lifecycle, placement } = this;
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
      const outcome = await placement
        .runtimeCalls()
        .then((calls) => calls.provider[action.call].executeWithOptions({ summary }, [sandboxId]))
        .then(
          (): ProviderOutcome => ({ ok: true }),
          (e: unknown): ProviderOutcome =>
            neverTaken(e)
              ? { ok: false, reason: placement.hostGone(), hostAbsent: true }
              : { ok: false, reason: reason(e), unrunnable: failureType(e) === UNRUNNABLE },
        );
      step = lifecycle.provided(action, outcome);
    }
  }

  /** One look at the runtime, acting on what it shows. */
  async healthCheck(): Promise<void> {
    const { lifecycle, placement } = this;
    if (!lifecycle.checksHealth) return;
    const asked = now();
    let absent = false;
    const check = await placement
      .runtimeCalls()
      .then((calls) => calls.check())
      .catch((e: unknown): RuntimeCheck | null => {
        absent = neverTaken(e);
        return absent || patched(FAILED_CHECK_IS_NO_VERDICT)
          ? null
          : { state: 'unreachable', detail: reason(e), lastUsedAtMs: now() };
      });
    // A host that does not answer is counted against SANDBOX_HOST_LOST_MS; any other check not made is
    // no verdict: the next check, a health interval later, decides.
    if (absent) await this.drive(lifecycle.hostAbsent(placement.hostGone(), asked, now()));
    else if (check) await this.drive(lifecycle.observed(check, now()));
  }
}
