/**
 * The activities the start-task workflow calls, each with its timeout and retry preset. Proxies only:
 * the activities' code stays out of the workflow bundle (their type is all that is imported).
 */
import { proxyActivities, proxyLocalActivities } from '@temporalio/workflow';
import type { Activities } from '../activities';
import type { StartTaskSettings } from '../src/temporal/shared';
import { START_TASK_ACTIVITY_OPTIONS, withTimeout } from './activity-options';

export const { recordStartTask } = proxyLocalActivities<Activities>(START_TASK_ACTIVITY_OPTIONS.record);
// Steps that take a call or two (to the database, to the runtime) run as local activities: no round trip
// through the server each. Steps that can take minutes (a sandbox, a clone, a setup script, plugins) do not.
export const { setUpGitHooks, startConversation } = proxyLocalActivities<Activities>(START_TASK_ACTIVITY_OPTIONS.quick);
export const { acquireSandbox, deleteStartSandbox } = proxyActivities<Activities>(START_TASK_ACTIVITY_OPTIONS.step);
export const { loadSkills } = proxyActivities<Activities>(START_TASK_ACTIVITY_OPTIONS.long); // plugins are cloned
// Local: every start ends with one look for queued messages (nearly always none), so it costs no round trip.
export const { deliverPendingMessages, givePendingMessagesUp } = proxyLocalActivities<Activities>(
  START_TASK_ACTIVITY_OPTIONS.deliver,
);
export const { askAdmission } = proxyLocalActivities<Activities>(START_TASK_ACTIVITY_OPTIONS.quick);

/** The long steps whose bounds are the start's own settings (the wait for its sandbox, its setup script). */
export function boundedStepActivities(settings: StartTaskSettings) {
  const { waitForSandbox } = proxyActivities<Activities>(
    withTimeout(START_TASK_ACTIVITY_OPTIONS.long, settings.sandboxWaitMs),
  );
  const { prepareRepository } = proxyActivities<Activities>(START_TASK_ACTIVITY_OPTIONS.long);
  const { runSetupScript } = proxyActivities<Activities>(
    withTimeout(START_TASK_ACTIVITY_OPTIONS.long, settings.setupScriptTimeoutMs),
  );
  return { waitForSandbox, prepareRepository, runSetupScript };
}
