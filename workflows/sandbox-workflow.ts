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
 * SandboxLifecycle (sandbox-lifecycle.ts) decides each transition; SandboxDriver (sandbox-driver.ts) makes
 * the provider calls and status writes the lifecycle asks for, and turns its refusals into update failures.
 * Updates are serialised: each runs to its end before the next (or a health check) starts. This file is
 * the run: handlers, the start, a health check every interval, and continuing as new when its history
 * grows long, after its handlers finish. The patches it replays by are in sandbox-patches.ts.
 *
 * A process sandbox lives on one host (its processes, its files): the first time the workflow acts, it
 * places the sandbox on the host of the worker running it, and from then on its provider calls and health
 * checks go to that host's task queue. A docker or remote sandbox is reached from any worker: the shared
 * queue, with local health checks (sandbox-runtime-calls.ts).
 */
import {
  allHandlersFinished,
  condition,
  continueAsNew,
  patched,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import {
  SEARCH_ATTRIBUTE_KEYS,
  type SandboxState,
  type SandboxWorkflowInput,
  type SandboxWorkflowSettings,
} from '../src/temporal/shared';
import { SandboxDriver } from './sandbox-driver';
import { SandboxLifecycle } from './sandbox-lifecycle';
import { GONE_IS_ERROR_AT_ONCE, START_ONLY_WHILE_STARTING, UNRUNNABLE_RESUME_IS_CONFLICT } from './sandbox-patches';
import { SandboxPlacement } from './sandbox-runtime-calls';

const historyTooLong = (settings: SandboxWorkflowSettings) => {
  const info = workflowInfo();
  return info.continueAsNewSuggested || (settings.historyLimit > 0 && info.historyLength >= settings.historyLimit);
};

export async function sandboxWorkflow(input: SandboxWorkflowInput): Promise<SandboxState> {
  const { sandboxId, settings } = input;
  // Runs recorded before the rule waited out the grace period for a gone runtime too; they replay so.
  const lifecycle = new SandboxLifecycle(sandboxId, settings, input.carried, {
    goneIsErrorAtOnce: patched(GONE_IS_ERROR_AT_ONCE),
    unrunnableResumeIsConflict: patched(UNRUNNABLE_RESUME_IS_CONFLICT),
  });
  const placement = new SandboxPlacement(sandboxId, settings, input.hostQueue);
  const driver = new SandboxDriver(sandboxId, lifecycle, placement);
  driver.serveUpdates();

  upsertSearchAttributes([
    { key: SEARCH_ATTRIBUTE_KEYS.OwnerUserId, value: input.ownerUserId },
    { key: SEARCH_ATTRIBUTE_KEYS.SandboxStatus, value: lifecycle.state.status },
  ]);

  // A new run starts its runtime unless an update that came first (resume, delete) has settled that.
  // Runs recorded before this check started the runtime regardless; they replay as they ran.
  if (patched(START_ONLY_WHILE_STARTING)) await driver.serial(() => driver.drive(lifecycle.start()));
  else if (!input.carried) await driver.serial(() => driver.drive(lifecycle.startAsBefore()));

  while (!lifecycle.deleted) {
    await condition(() => lifecycle.deleted || historyTooLong(settings), settings.healthIntervalMs);
    if (lifecycle.deleted) break;
    if (historyTooLong(settings)) {
      await condition(allHandlersFinished);
      if (lifecycle.deleted) break;
      // The host goes on with the next run (one not placed yet places it there).
      return continueAsNew<typeof sandboxWorkflow>({
        ...input,
        carried: lifecycle.carried,
        hostQueue: placement.hostQueue,
      });
    }
    await driver.serial(() => driver.healthCheck());
  }
  await condition(allHandlersFinished);
  return lifecycle.state;
}
