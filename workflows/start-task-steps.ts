/**
 * The work behind each status of the start-task workflow, one method per step, each an activity call
 * with a summary the Temporal UI shows in the history (what it works on, never a secret).
 */
import { patched, uuid4 } from '@temporalio/workflow';
import type { RuntimeSkill } from '../activities/repository-steps';
import { shown } from '../src/temporal/shared';
import {
  acquireSandbox,
  boundedStepActivities,
  deleteStartSandbox,
  loadSkills,
  setUpGitHooks,
  startConversation,
} from './start-task-activity-proxies';
import { detailOf, isOverQuota } from './start-task-failures';
import type { StartTaskLines } from './start-task-lines';
import { DELETE_OWN_SANDBOX } from './start-task-patches';
import type { StartTaskRun } from './start-task-run';

/** How often an admitted start whose room was taken meanwhile goes back in line before it fails with the quota's reason. */
const MAX_REQUEUES = 3;

export class StartTaskSteps {
  private readonly bounded: ReturnType<typeof boundedStepActivities>;

  constructor(
    private readonly run: StartTaskRun,
    private readonly lines: StartTaskLines,
  ) {
    this.bounded = boundedStepActivities(run.settings);
  }

  /**
   * WAITING_FOR_SANDBOX: the start's turn in line (when it has to wait for one), then the caller's
   * sandbox resumed or a new one made, then the wait until it runs. Answers its id.
   */
  async getRunningSandbox(): Promise<string> {
    const { taskId, userId, request, settings, made } = this.run;
    const newSandboxId = uuid4();
    const waitForTurns = this.lines.turnsFor(newSandboxId);
    let organizationId = await waitForTurns();
    const acquire = () =>
      acquireSandbox.executeWithOptions(
        {
          summary: request.sandbox_id ? `resume sandbox ${shown(request.sandbox_id)} if paused` : 'start a new sandbox',
        },
        [{ taskId, userId, sandboxId: request.sandbox_id, newSandboxId, organizationId }],
      );
    let sandboxId: string;
    for (let requeued = 0; ; requeued++) {
      try {
        sandboxId = await acquire();
        break;
      } catch (e) {
        // The room the line promised was taken meanwhile (a sandbox made or resumed through the api):
        // the start goes to the back of the line rather than failing, a few times.
        if (!this.lines.inLine || !isOverQuota(e) || requeued >= MAX_REQUEUES) throw e;
        await this.lines.leave();
        organizationId = await waitForTurns();
      }
    }
    made.sandbox_id = sandboxId;
    made.agent_server_url = await this.bounded.waitForSandbox.executeWithOptions(
      { summary: `wait for sandbox ${sandboxId} to run` },
      [{ userId, sandboxId, timeoutMs: settings.sandboxWaitMs }],
    );
    return sandboxId;
  }

  /** PREPARING_REPOSITORY: clones the repository (or makes an empty git workspace); answers its directory. */
  async makeWorkspace(sandboxId: string): Promise<string> {
    const { taskId, request } = this.run;
    const repository = request.selected_repository;
    return this.bounded.prepareRepository.executeWithOptions(
      {
        summary: repository
          ? `clone ${shown(repository)}${request.selected_branch ? ` branch ${shown(request.selected_branch)}` : ''}`
          : 'make an empty git workspace',
      },
      [{ taskId, sandboxId, repository, branch: request.selected_branch, gitProvider: request.git_provider ?? null }],
    );
  }

  /** RUNNING_SETUP_SCRIPT: the repository's setup script, if it has one. */
  async runRepositorySetup(sandboxId: string, workingDir: string): Promise<void> {
    const { taskId, userId, settings } = this.run;
    await this.bounded.runSetupScript.executeWithOptions(
      { summary: `run the setup script (workspace ${shown(workingDir)})` },
      [{ taskId, userId, sandboxId, workingDir, timeoutMs: settings.setupScriptTimeoutMs }],
    );
  }

  /** SETTING_UP_GIT_HOOKS: the repository's pre-commit script as its hook, if it has one. */
  async installGitHooks(sandboxId: string, workingDir: string): Promise<void> {
    await setUpGitHooks.executeWithOptions({ summary: `install git hooks (workspace ${shown(workingDir)})` }, [
      { sandboxId, workingDir },
    ]);
  }

  /** SETTING_UP_SKILLS: the organization's skills, the repository's and the plugins'. */
  async gatherSkills(sandboxId: string, workingDir: string): Promise<RuntimeSkill[]> {
    const { taskId, userId, request } = this.run;
    const plugins = request.plugins ?? [];
    return loadSkills.executeWithOptions(
      { summary: `load skills (${plugins.length} plugin${plugins.length === 1 ? '' : 's'})` },
      [{ taskId, userId, sandboxId, workingDir, plugins }],
    );
  }

  /** STARTING_CONVERSATION: the conversation recorded and started in the runtime; answers its id. */
  async startAgent(sandboxId: string, workingDir: string, skills: RuntimeSkill[]): Promise<string> {
    const { taskId, userId } = this.run;
    return startConversation.executeWithOptions({ summary: `start the agent in sandbox ${sandboxId}` }, [
      { taskId, userId, sandboxId, workingDir, skills },
    ]);
  }

  /**
   * Before ERROR: a sandbox this start created for itself would run unused until its idle timeout: it
   * goes before the start reports ERROR, through the sandbox's own workflow. One the request named stays
   * as it is. Runs recorded before this replay without it. Answers `detail` with what became of it.
   */
  async deleteOwnSandbox(detail: string): Promise<string> {
    const { taskId, userId, request, made } = this.run;
    const ownSandbox = request.sandbox_id ? null : made.sandbox_id;
    if (!ownSandbox || !patched(DELETE_OWN_SANDBOX)) return detail;
    const outcome = await deleteStartSandbox
      .executeWithOptions({ summary: `delete sandbox ${ownSandbox} (the start failed)` }, [
        { taskId, userId, sandboxId: ownSandbox },
      ])
      .catch(
        (failure: unknown) =>
          `The sandbox ${ownSandbox} that this start created could not be deleted: ${detailOf(failure)}`,
      );
    return outcome ? `${detail}\n${outcome}` : detail;
  }
}
