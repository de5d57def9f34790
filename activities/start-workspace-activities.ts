/**
 * The start-task activities that prepare the sandbox's workspace: the repository cloned (or an empty git
 * workspace), its setup script run, its git hook installed, and the skills the agent gets.
 */
import { randomBytes } from 'node:crypto';
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
import type { SandboxRuntime } from './sandbox-runtime';
import { inputError, masked, type StartStepContext } from './start-step-context';
import type { StartTaskActivityDeps } from './start-task-activities';

const readSkills = async (rt: SandboxRuntime, dir: string, cwd: string): Promise<RuntimeSkill[]> => {
  const r = await rt.bash(skillFilesCommand(dir), { cwd, timeoutS: 60 });
  return parseSkillFiles(r.output);
};

export function createStartWorkspaceActivities(
  deps: StartTaskActivityDeps,
  { task, requestSecrets, runtime, secretsOf }: StartStepContext,
) {
  return {
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
  };
}
