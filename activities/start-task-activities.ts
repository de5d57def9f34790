/**
 * The start-task workflow's side effects, one activity per step. Input errors (a foreign sandbox, a
 * repository that cannot be cloned, a failing setup script, no LLM configured) are StartInputError:
 * not retried, and their message is the ERROR detail the client sees. Secrets never pass through the
 * workflow: they are read here, from the task's sealed copy and the user's stores. The steps are in
 * start-sandbox-activities.ts, start-workspace-activities.ts and start-conversation-activity.ts.
 */
import type { SecretBox } from '../src/auth/secret-box';
import type { StartSettingsResolver } from '../src/orgs/start-settings';
import type { SandboxService } from '../src/sandboxes/sandbox-service';
import type { AppConversationsStore } from '../src/store/app-conversations-store';
import type { ConversationsStore } from '../src/store/conversations-store';
import type { SandboxesStore } from '../src/store/sandboxes-store';
import type { StartTaskChange, StartTasksStore } from '../src/store/start-tasks-store';
import type { StartTaskSnapshot } from '../src/temporal/shared';
import { createStartConversationActivity } from './start-conversation-activity';
import { createStartSandboxActivities } from './start-sandbox-activities';
import { startStepContext } from './start-step-context';
import { createStartWorkspaceActivities } from './start-workspace-activities';

export interface StartTaskActivityDeps {
  startTasks: StartTasksStore;
  appConversations: AppConversationsStore;
  conversations: ConversationsStore;
  sandboxes: SandboxesStore;
  sandboxService: SandboxService;
  settings: StartSettingsResolver;
  box: SecretBox;
  /** Where `owner/repo` repositories are cloned from (GIT_CLONE_BASE_URL). */
  gitCloneBaseUrl: string;
  /** This worker's host task queue: a runtime at a loopback address of another host is out of its reach. */
  hostQueue: string;
}

export function createStartTaskActivities(deps: StartTaskActivityDeps) {
  const { startTasks } = deps;
  const context = startStepContext(deps);

  return {
    /** Records a status of the task; answers the snapshot as stored (what the query returns). */
    async recordStartTask(taskId: string, step: number, change: StartTaskChange): Promise<StartTaskSnapshot> {
      const t = await startTasks.record(taskId, step, change);
      if (!t) throw new Error(`start task ${taskId} has no record`);
      const { conversation_id: _c, ...rest } = t;
      return { ...rest, created_at: t.created_at.toISOString(), updated_at: t.updated_at.toISOString() };
    },
    ...createStartSandboxActivities(deps),
    ...createStartWorkspaceActivities(deps, context),
    ...createStartConversationActivity(deps, context),
  };
}
