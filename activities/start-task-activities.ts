/**
 * The start-task workflow's side effects, one activity per step. Input errors (a foreign sandbox, a
 * repository that cannot be cloned, a failing setup script, no LLM configured) are StartInputError:
 * not retried, and their message is the ERROR detail the client sees. Secrets never pass through the
 * workflow: they are read here, from the task's sealed copy and the user's stores.
 */
import { randomBytes } from 'node:crypto';
import { ApplicationFailure, Context } from '@temporalio/activity';
import type { SecretBox } from '../src/auth/secret-box';
import { Conflict, DomainError, NotFound, TooMany } from '../src/errors';
import { runtimeLlm } from '../src/sandboxes/runtime-client';
import type { EchoedStartRequest } from '../src/schemas/app-conversations';
import type { StartSettingsResolver } from '../src/orgs/start-settings';
import type { SandboxService } from '../src/sandboxes/sandbox-service';
import type { AppConversationsStore } from '../src/store/app-conversations-store';
import type { ConversationsStore } from '../src/store/conversations-store';
import { isDuplicateKey } from '../src/store/errors';
import type { SandboxesStore } from '../src/store/sandboxes-store';
import type { StartTaskChange, StartTasksStore } from '../src/store/start-tasks-store';
import { SECRET_MASK } from '../src/schemas/secret-mask';
import { START_TASK_FAILURES, type StartTaskSnapshot } from '../src/temporal/shared';
import {
  cloneCommand,
  cloneUrl,
  CREDENTIAL_FILE_PREFIX,
  sh,
  HOOK_COMMAND,
  lastLines,
  parseSkillFiles,
  repositoryDir,
  PRE_COMMIT_SCRIPT,
  SETUP_COMMAND,
  SETUP_SCRIPT,
  SKILLS_DIR,
  skillFilesCommand,
  type RuntimeSkill,
} from './repository-steps';
import { SandboxRuntime } from './sandbox-runtime';
import { setTimeout as sleep } from 'node:timers/promises';

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

/** A URL whose host is this machine's loopback as the process provider names it by default. */
const onLoopback = (url: string) => ['127.0.0.1', 'localhost', '[::1]'].includes(new URL(url).hostname);

const inputError = (message: string) => ApplicationFailure.nonRetryable(message, START_TASK_FAILURES.input);
/** Told to the agent when the start asks for a plan (agent_type plan). */
const PLAN_SUFFIX = 'Plan only: study the task and the repository and write a plan; do not change files.';

export function createStartTaskActivities(deps: StartTaskActivityDeps) {
  const { startTasks, sandboxes, box } = deps;

  const task = async (taskId: string) => {
    const t = await startTasks.get(taskId);
    if (!t) throw inputError(`start task ${taskId} has no record`);
    return t;
  };
  const requestSecrets = async (taskId: string): Promise<Record<string, string>> => {
    const sealed = await startTasks.sealedSecrets(taskId);
    return sealed ? (JSON.parse(box.open(sealed)) as Record<string, string>) : {};
  };
  const runtime = async (sandboxId: string) => {
    const r = await sandboxes.get(sandboxId);
    if (!r) throw inputError(`sandbox ${sandboxId} does not exist`);
    const rt = SandboxRuntime.of(r, box);
    // 127.0.0.1 here is this machine, not the sandbox's host: what listens there is not its runtime, and
    // must not get its session key. (Retried: another worker, maybe of its host, may take the step.)
    if (r.host_queue && r.host_queue !== deps.hostQueue && onLoopback(rt.url)) {
      throw new Error(
        `the runtime of sandbox ${sandboxId} listens on ${rt.url} of its own host (task queue ${r.host_queue}), which this worker cannot reach: with workers on several hosts, set SANDBOX_PROCESS_HOST to an address of each host the others reach`,
      );
    }
    return rt;
  };
  /** Hides secret values (also URL-encoded, as in a clone URL) in what a command printed, before it becomes an error detail. */
  const masked = (text: string, secrets: Record<string, string>) =>
    Object.values(secrets)
      .filter((v) => v.length >= 4)
      .flatMap((v) => [v, encodeURIComponent(v)])
      .reduce((t, v) => t.split(v).join(SECRET_MASK), text);
  const secretsOf = async (taskId: string, userId: string) =>
    (await deps.settings.resolve(userId, await requestSecrets(taskId))).secrets;

  const readSkills = async (rt: SandboxRuntime, dir: string, cwd: string): Promise<RuntimeSkill[]> => {
    const r = await rt.bash(skillFilesCommand(dir), { cwd, timeoutS: 60 });
    return parseSkillFiles(r.output);
  };

  return {
    /** Records a status of the task; answers the snapshot as stored (what the query returns). */
    async recordStartTask(taskId: string, step: number, change: StartTaskChange): Promise<StartTaskSnapshot> {
      const t = await startTasks.record(taskId, step, change);
      if (!t) throw new Error(`start task ${taskId} has no record`);
      const { conversation_id: _c, ...rest } = t;
      return { ...rest, created_at: t.created_at.toISOString(), updated_at: t.updated_at.toISOString() };
    },

    /**
     * The caller's sandbox (resumed when paused), or a new one with the id the workflow chose, counted in
     * the organization whose line admitted the start (else the user's current one).
     */
    async acquireSandbox(input: {
      taskId: string;
      userId: string;
      sandboxId?: string;
      newSandboxId: string;
      organizationId?: string;
    }): Promise<string> {
      if (!input.sandboxId) {
        try {
          return (
            await deps.sandboxService.create(input.userId, undefined, 'body', input.newSandboxId, input.organizationId)
          ).id;
        } catch (e) {
          // Over the user's or the organization's quota: retrying soon would not change it; a start in line waits its turn
          // again, one without a line ends saying so.
          if (e instanceof TooMany) throw ApplicationFailure.nonRetryable(e.message, START_TASK_FAILURES.overQuota);
          throw e;
        }
      }
      const r = await sandboxes.getOwned(input.sandboxId, input.userId);
      if (!r) throw inputError(`Sandbox ${input.sandboxId} not found: sandbox_id must name one of your sandboxes`);
      if (r.status === 'DELETED')
        throw inputError(`Sandbox ${input.sandboxId} was deleted; start without sandbox_id to get a new one`);
      if (r.status !== 'RUNNING' && r.status !== 'STARTING') {
        try {
          await deps.sandboxService.operate(input.userId, input.sandboxId, 'resume');
        } catch (e) {
          const message = `Sandbox ${input.sandboxId} (${r.status}) could not be resumed: ${(e as Error).message}`;
          throw ApplicationFailure.nonRetryable(
            message,
            e instanceof TooMany ? START_TASK_FAILURES.overQuota : START_TASK_FAILURES.input,
          );
        }
      }
      await sandboxes.touch(r.id); // a start is use: no idle pause in the middle of it
      return r.id;
    },

    /** Waits until the sandbox runs; answers its agent server URL. */
    async waitForSandbox(input: { userId: string; sandboxId: string; timeoutMs: number }): Promise<string> {
      const deadline = Date.now() + input.timeoutMs;
      // A sandbox that is starting is usually RUNNING within a few hundred ms: looked at after 10 ms, then
      // each wait twice the last, up to 200 ms (a lookup by _id), so RUNNING is seen soon after it is written.
      for (let wait = 10; ; wait = Math.min(wait * 2, 200)) {
        const r = await sandboxes.get(input.sandboxId);
        if (!r) throw inputError(`sandbox ${input.sandboxId} does not exist`);
        if (r.status === 'RUNNING') return SandboxRuntime.of(r, box).url;
        if (r.status === 'ERROR' || r.status === 'DELETED' || r.status === 'MISSING') {
          throw inputError(`Sandbox ${input.sandboxId} is ${r.status}${r.status_detail ? `: ${r.status_detail}` : ''}`);
        }
        if (Date.now() > deadline) {
          throw inputError(
            `Sandbox ${input.sandboxId} did not run within ${Math.round(input.timeoutMs / 1000)} s (it is ${r.status}); START_SANDBOX_WAIT_MS sets the wait`,
          );
        }
        Context.current().heartbeat();
        await sleep(wait);
      }
    },

    /** Clones the repository into the sandbox (or makes an empty git workspace); answers its directory. */
    async prepareRepository(input: {
      taskId: string;
      sandboxId: string;
      repository?: string;
      branch?: string;
      gitProvider: string | null;
    }): Promise<string> {
      const t = await task(input.taskId);
      const { secrets } = await deps.settings.resolve(t.created_by_user_id, await requestSecrets(input.taskId));
      const providerToken = input.gitProvider ? secrets[`${input.gitProvider.toUpperCase()}_TOKEN`] : undefined;
      const token = providerToken ?? secrets.GIT_TOKEN;
      const dir = repositoryDir(input.repository);
      const url = input.repository ? cloneUrl(input.repository, deps.gitCloneBaseUrl) : null;
      const rt = await runtime(input.sandboxId);
      // The token reaches git through a file only the sandbox reads, for this one command (cloneCommand).
      const credentialFile =
        token && url?.startsWith('https://')
          ? `${CREDENTIAL_FILE_PREFIX}${randomBytes(12).toString('hex')}`
          : undefined;
      if (credentialFile) {
        const written = await rt.upload(credentialFile, Buffer.from(token!), 30_000);
        if (written.status !== 200) throw new Error(`the runtime refused the git credential file (${written.status})`);
      }
      let r;
      try {
        r = await rt.bash(cloneCommand(dir, url, input.branch, credentialFile), { timeoutS: 900 });
      } finally {
        // The command's own trap does not run when its timeout kills it.
        if (credentialFile) await rt.bash(`rm -f -- ${sh(credentialFile)}`, { timeoutS: 30 }).catch(() => undefined);
      }
      if (r.exit_code !== 0) {
        const what = input.repository
          ? `Cloning ${input.repository}${input.branch ? ` at ${input.branch}` : ''} failed`
          : 'Making the workspace failed';
        throw inputError(`${what} (exit ${r.exit_code}):\n${masked(lastLines(r.output), secrets)}`);
      }
      return dir;
    },

    /** Runs the repository's setup script, if it has one. */
    async runSetupScript(input: {
      taskId: string;
      userId: string;
      sandboxId: string;
      workingDir: string;
      timeoutMs: number;
    }): Promise<boolean> {
      const rt = await runtime(input.sandboxId);
      const secrets = await secretsOf(input.taskId, input.userId);
      const has = await rt.bash(`test -f ${SETUP_SCRIPT}`, { cwd: input.workingDir, timeoutS: 30 });
      if (has.exit_code !== 0) return false;
      const timeoutS = Math.max(1, Math.round(input.timeoutMs / 1000));
      const r = await rt.bash(SETUP_COMMAND, { cwd: input.workingDir, timeoutS });
      if (r.timed_out)
        throw inputError(
          `The setup script ${SETUP_SCRIPT} did not finish within ${timeoutS} s (START_SETUP_TIMEOUT_MS):\n${masked(lastLines(r.output), secrets)}`,
        );
      if (r.exit_code !== 0)
        throw inputError(
          `The setup script ${SETUP_SCRIPT} failed (exit ${r.exit_code}):\n${masked(lastLines(r.output), secrets)}`,
        );
      return true;
    },

    /** Installs the repository's pre-commit script as its hook, if it has one. */
    async setUpGitHooks(input: { sandboxId: string; workingDir: string }): Promise<boolean> {
      const r = await (await runtime(input.sandboxId)).bash(HOOK_COMMAND, { cwd: input.workingDir, timeoutS: 60 });
      if (r.exit_code !== 0)
        throw inputError(
          `Installing the git hook ${PRE_COMMIT_SCRIPT} failed (exit ${r.exit_code}):\n${lastLines(r.output)}`,
        );
      return r.output.includes('installed');
    },

    /** The organization's skills, the repository's and the plugins'. */
    async loadSkills(input: {
      taskId: string;
      userId: string;
      sandboxId: string;
      workingDir: string;
      plugins: { source: string; ref?: string; repo_path?: string }[];
    }): Promise<RuntimeSkill[]> {
      const { agent_settings } = await deps.settings.resolve(input.userId);
      const context = agent_settings.agent_kind === 'platform' ? agent_settings.agent_context : undefined;
      const disabled = new Set(context?.disabled_skills ?? []);
      const skills: RuntimeSkill[] = (context?.skills ?? []).map((s) => ({
        name: s.name,
        content: s.content ?? '',
        triggers: s.trigger?.keywords ?? [],
      }));
      const rt = await runtime(input.sandboxId);
      skills.push(...(await readSkills(rt, SKILLS_DIR, input.workingDir)));
      for (const [i, plugin] of input.plugins.entries()) {
        const dir = `.plugins/${i}`;
        const r = await rt.bash(cloneCommand(dir, plugin.source, plugin.ref), { timeoutS: 300 });
        if (r.exit_code !== 0)
          throw inputError(
            `Loading the plugin ${plugin.source} failed (exit ${r.exit_code}):\n${masked(lastLines(r.output), await secretsOf(input.taskId, input.userId))}`,
          );
        skills.push(...(await readSkills(rt, `${plugin.repo_path ?? '.'}/skills`, dir)));
      }
      // A later skill of the same name (the repository's, a plugin's) replaces an earlier one.
      const byName = new Map(skills.filter((s) => !disabled.has(s.name)).map((s) => [s.name, s]));
      return [...byName.values()];
    },

    /** Records the conversation and creates it in the runtime with the effective settings; answers its id. */
    async startConversation(input: {
      taskId: string;
      userId: string;
      sandboxId: string;
      workingDir: string;
      skills: RuntimeSkill[];
    }): Promise<string> {
      const t = await task(input.taskId);
      const req = t.request as EchoedStartRequest; // validated when the task was accepted
      const effective = await deps.settings
        .resolve(
          input.userId,
          await requestSecrets(input.taskId),
          req.agent_profile_id ? { id: req.agent_profile_id } : undefined,
        )
        .catch((e: unknown) => {
          // The profile was deleted since the start was accepted, or no longer fits the user's agent.
          if (e instanceof NotFound || e instanceof Conflict) throw inputError(e.message);
          throw e;
        });
      const agent = effective.agent_settings;
      if (agent.agent_kind === 'acp')
        throw inputError(
          'The organization uses an ACP agent, which this runtime cannot run; set agent_settings.agent_kind to platform or llm',
        );
      const llm = agent.llm;
      const model = req.llm_model ?? llm.model;
      if (!model || !llm.base_url) {
        throw inputError(
          `No LLM is configured: set agent_settings.llm.model and base_url of organization ${effective.organization_id} (PATCH /api/organizations/${effective.organization_id})`,
        );
      }
      const contextSuffix =
        agent.agent_kind === 'platform' ? agent.agent_context.system_message_suffix : agent.system_message_suffix;
      const suffix = [contextSuffix, req.system_message_suffix, req.agent_type === 'plan' ? PLAN_SUFFIX : undefined]
        .filter(Boolean)
        .join('\n\n');

      const rt = await runtime(input.sandboxId);
      const sandbox = (await sandboxes.get(input.sandboxId))!;
      const sessionApiKey = box.open(sandbox.session_key_sealed);
      // The event log's record first: the runtime reports events from its first step on.
      await deps.conversations
        .create({ id: t.id, userId: input.userId, sandboxId: input.sandboxId, sessionApiKey })
        .catch(async (e: unknown) => {
          if (!isDuplicateKey(e)) throw e;
          // The id is taken. A retried step finds its own record (this user, this sandbox); any other
          // conversation (another user's, or one not made by this start) is never taken over.
          const existing = await deps.conversations.get(t.id);
          if (existing?.created_by_user_id !== input.userId || existing.sandbox_id !== input.sandboxId) {
            throw inputError(
              `Conversation ${t.id} already exists and was not made by this start: start again with another conversation_id, or none`,
            );
          }
        });
      const processors: Record<string, unknown>[] = [...req.processors];
      if (!processors.some((p) => p.kind === 'SetTitleCallbackProcessor'))
        processors.push({ kind: 'SetTitleCallbackProcessor' });
      const now = new Date();
      await deps.appConversations.create({
        id: t.id,
        created_by_user_id: input.userId,
        sandbox_id: input.sandboxId,
        title: req.title ?? null,
        selected_repository: req.selected_repository ?? null,
        selected_branch: req.selected_branch ?? null,
        git_provider: req.git_provider ?? null,
        trigger: req.trigger ?? null,
        agent_server_url: rt.url,
        start_task_id: t.id,
        processors,
        llm_model: model,
        launched_agent_profile: effective.launched_agent_profile,
        public: req.public ?? null,
        pr_number: req.pr_number,
        // The published tags of the profile; launched_agent_profile is their typed projection.
        tags: effective.launched_agent_profile
          ? {
              agentprofileid: effective.launched_agent_profile.agent_profile_id,
              agentprofilerevision: String(effective.launched_agent_profile.revision),
            }
          : {},
        parent_conversation_id: req.parent_conversation_id ?? null,
        skills: input.skills.map((s) => ({ name: s.name, content: s.content, triggers: s.triggers ?? [] })),
        hooks: {},
        working_dir: input.workingDir,
        created_at: now,
        updated_at: now,
      });
      const created = await rt.createConversation({
        id: t.id,
        llm: runtimeLlm(llm, model),
        systemMessageSuffix: suffix || null,
        workingDir: input.workingDir,
        // A message without content (the published SendMessageRequest allows it) is no message.
        initialMessage: req.initial_message?.content?.length ? req.initial_message : null,
        maxIterations: effective.conversation_settings.max_iterations,
        confirmationMode: effective.conversation_settings.confirmation_mode,
        secrets: Object.fromEntries(
          Object.entries(effective.secrets).filter(([k]) => /^[A-Za-z_][A-Za-z0-9_]*$/.test(k)),
        ),
        skills: input.skills,
      });
      // A retried step finds the conversation it created.
      if (!created.created && !created.exists) {
        const { status, body } = created.refused;
        const why = `The runtime did not create the conversation (${status}): ${masked(JSON.stringify(body).slice(0, 500), effective.secrets)}`;
        // Busy (the agent server's 429: its concurrent runs are all taken) or failing: the step is tried again.
        if (status === 429 || status >= 500) throw new Error(why);
        throw inputError(why);
      }
      return t.id;
    },

    /**
     * After a failed start: the sandbox it created for itself is deleted through the sandbox's workflow,
     * as DELETE /api/v1/sandboxes does, unless another conversation or start uses it by now (a request may
     * have named it meanwhile). Answers what became of it, for the ERROR detail. A delete the sandbox's
     * workflow refuses or does not answer is said so, not retried: the start's ERROR waits on this.
     */
    async deleteStartSandbox(input: { taskId: string; userId: string; sandboxId: string }): Promise<string | null> {
      const made = `The sandbox ${input.sandboxId} that this start created`;
      const used =
        (await deps.appConversations.otherUsesSandbox(input.sandboxId, input.taskId)) ||
        (await startTasks.startingIn(input.sandboxId, input.userId)).some((id) => id !== input.taskId);
      if (used) return `${made} is kept: another conversation uses it.`;
      try {
        await deps.sandboxService.operate(input.userId, input.sandboxId, 'delete');
      } catch (e) {
        if (e instanceof NotFound) return null;
        if (!(e instanceof DomainError)) throw e;
        return `${made} could not be deleted (${e.message}); delete it: DELETE /api/v1/sandboxes/${input.sandboxId}.`;
      }
      return `${made} was deleted.`;
    },
  };
}
