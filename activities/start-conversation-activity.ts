/**
 * The start-task activity that starts the conversation: the effective settings (the user's, the
 * organization's, the request's profile) checked for an LLM, the conversation recorded for its event log
 * and as an app conversation, then created in the sandbox's runtime.
 */
import { Conflict, NotFound } from '../src/errors';
import type { StartSettings } from '../src/orgs/start-settings';
import { runtimeLlm } from '../src/sandboxes/runtime-client';
import type { EchoedStartRequest } from '../src/schemas/app-conversations';
import { isDuplicateKey } from '../src/store/errors';
import type { RuntimeSkill } from './repository-steps';
import type { SandboxRuntime } from './sandbox-runtime';
import { inputError, masked, type StartStepContext } from './start-step-context';
import type { StartTaskActivityDeps } from './start-task-activities';

/** Told to the agent when the start asks for a plan (agent_type plan). */
const PLAN_SUFFIX = 'Plan only: study the task and the repository and write a plan; do not change files.';

interface StartConversationInput {
  taskId: string;
  userId: string;
  sandboxId: string;
  workingDir: string;
  skills: RuntimeSkill[];
}

export function createStartConversationActivity(
  deps: StartTaskActivityDeps,
  { task, requestSecrets, runtime }: StartStepContext,
) {
  const { sandboxes, box } = deps;

  /** The settings the conversation runs with: the request's profile over the user's and organization's. */
  const effectiveSettings = (input: StartConversationInput, req: EchoedStartRequest, secrets: Record<string, string>) =>
    deps.settings
      .resolve(input.userId, secrets, req.agent_profile_id ? { id: req.agent_profile_id } : undefined)
      .catch((e: unknown) => {
        // The profile was deleted since the start was accepted, or no longer fits the user's agent.
        if (e instanceof NotFound || e instanceof Conflict) throw inputError(e.message);
        throw e;
      });

  /** The agent's LLM and model, and its system message suffix; an input error when there is none to run. */
  const agentToRun = (effective: StartSettings, req: EchoedStartRequest) => {
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
    return { llm, model, suffix };
  };

  /**
   * The event log's record, with the sandbox's session key (the runtime reports with it). The id is
   * taken: a retried step finds its own record (this user, this sandbox); any other conversation
   * (another user's, or one not made by this start) is never taken over.
   */
  const recordEventLog = async (id: string, input: StartConversationInput) => {
    const sandbox = (await sandboxes.get(input.sandboxId))!;
    const sessionApiKey = box.open(sandbox.session_key_sealed);
    await deps.conversations
      .create({ id, userId: input.userId, sandboxId: input.sandboxId, sessionApiKey })
      .catch(async (e: unknown) => {
        if (!isDuplicateKey(e)) throw e;
        const existing = await deps.conversations.get(id);
        if (existing?.created_by_user_id !== input.userId || existing.sandbox_id !== input.sandboxId) {
          throw inputError(
            `Conversation ${id} already exists and was not made by this start: start again with another conversation_id, or none`,
          );
        }
      });
  };

  /** The app conversation's record: what the request asked for, with a title processor when it named none. */
  const recordAppConversation = async (
    id: string,
    input: StartConversationInput,
    req: EchoedStartRequest,
    effective: StartSettings,
    { agentServerUrl, model }: { agentServerUrl: string; model: string },
  ) => {
    const processors: Record<string, unknown>[] = [...req.processors];
    if (!processors.some((p) => p.kind === 'SetTitleCallbackProcessor'))
      processors.push({ kind: 'SetTitleCallbackProcessor' });
    const now = new Date();
    await deps.appConversations.create({
      id,
      created_by_user_id: input.userId,
      sandbox_id: input.sandboxId,
      title: req.title ?? null,
      selected_repository: req.selected_repository ?? null,
      selected_branch: req.selected_branch ?? null,
      git_provider: req.git_provider ?? null,
      trigger: req.trigger ?? null,
      agent_server_url: agentServerUrl,
      start_task_id: id,
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
  };

  /** The conversation created in the runtime; a retried step finds the conversation it created. */
  const createInRuntime = async (
    rt: SandboxRuntime,
    id: string,
    input: StartConversationInput,
    req: EchoedStartRequest,
    effective: StartSettings,
    agent: ReturnType<typeof agentToRun>,
  ) => {
    const created = await rt.createConversation({
      id,
      llm: runtimeLlm(agent.llm, agent.model),
      systemMessageSuffix: agent.suffix || null,
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
    if (!created.created && !created.exists) {
      const { status, body } = created.refused;
      const why = `The runtime did not create the conversation (${status}): ${masked(JSON.stringify(body).slice(0, 500), effective.secrets)}`;
      // Busy (the agent server's 429: its concurrent runs are all taken) or failing: the step is tried again.
      if (status === 429 || status >= 500) throw new Error(why);
      throw inputError(why);
    }
  };

  return {
    /** Records the conversation and creates it in the runtime with the effective settings; answers its id. */
    async startConversation(input: StartConversationInput): Promise<string> {
      const t = await task(input.taskId);
      const req = t.request as EchoedStartRequest; // validated when the task was accepted
      const effective = await effectiveSettings(input, req, await requestSecrets(input.taskId));
      const agent = agentToRun(effective, req);
      const rt = await runtime(input.sandboxId);
      // The event log's record first: the runtime reports events from its first step on.
      await recordEventLog(t.id, input);
      await recordAppConversation(t.id, input, req, effective, { agentServerUrl: rt.url, model: agent.model });
      await createInRuntime(rt, t.id, input, req, effective, agent);
      return t.id;
    },
  };
}
