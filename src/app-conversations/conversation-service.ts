/**
 * What a client does with a conversation once it is started, through the control plane rather than the
 * sandbox's own address and key: send a message (a paused sandbox is resumed first), pause, run or
 * interrupt its agent, rename it, delete it with its log (and its sandbox when nothing else uses it),
 * and read its workspace (a file, git changes and diffs). Only the owner's conversations exist here:
 * anyone else's id is NotFound. A runtime that does not answer in time is Unavailable, never a hang.
 */
import { startEnded } from '../schemas/app-conversations';
import type { Client } from '@temporalio/client';
import { z } from 'zod';
import type { SecretBox } from '../auth/secret-box';
import { Conflict, NotFound, Unavailable, UpstreamFailed } from '../errors';
import { GitChangeSchema, GitDiffSchema, type GitChange, type GitDiff } from '../schemas/git';
import type { SandboxStatus } from '../schemas/sandboxes';
import type { SandboxService } from '../sandboxes/sandbox-service';
import type { StartSettingsResolver } from '../orgs/start-settings';
import { runtimeLlm, type RunControl, type RuntimeClient, type RuntimeMessage } from '../sandboxes/runtime-client';
import type {
  AppConversationChange,
  AppConversationRecord,
  AppConversationsStore,
} from '../store/app-conversations-store';
import type { CallbacksStore } from '../store/callbacks-store';
import type { ConversationStatesStore } from '../store/conversation-states-store';
import type { ConversationsStore } from '../store/conversations-store';
import type { EventsStore } from '../store/events-store';
import type { PendingMessagesStore } from '../store/pending-messages-store';
import type { SandboxesStore } from '../store/sandboxes-store';
import type { StartTasksStore } from '../store/start-tasks-store';
import { deleteConversationAndLog } from './conversation-deletion';
import { runningRuntime } from './conversation-runtime';
import { readGitView, readWorkspaceFile, workspacePath } from './conversation-workspace';
import { deliveredBefore } from './repeated-messages';
import { detailOf, runtimeRefusal, workspaceRefusal } from './runtime-refusals';

export interface ConversationServiceSettings {
  /** Deadline of one call to a runtime. */
  runtimeCallTimeoutMs: number;
  /** How long a message waits for a sandbox that is starting or being resumed to run. */
  sandboxWaitMs: number;
}

export interface ConversationServiceDeps {
  appConversations: AppConversationsStore;
  conversations: ConversationsStore;
  conversationStates: ConversationStatesStore;
  events: EventsStore;
  callbacks: CallbacksStore;
  startTasks: StartTasksStore;
  pendingMessages: PendingMessagesStore;
  sandboxes: SandboxesStore;
  sandboxService: SandboxService;
  box: SecretBox;
  temporal: Client;
  settings: ConversationServiceSettings;
  /** Opens a saved LLM profile for a switch (without it, switch_profile is unavailable). */
  startSettings?: Pick<StartSettingsResolver, 'resolve'>;
}

export type { RunControl, RuntimeMessage };

export interface SendMessageResult {
  success: boolean;
  sandbox_status: SandboxStatus;
  message: string | null;
}

/** The bound of one ask_agent call (one LLM call in the sandbox). */
const ASK_AGENT_TIMEOUT_MS = 120_000;

export class ConversationService {
  constructor(private readonly deps: ConversationServiceDeps) {}

  /** The caller's conversation; NotFound for anyone else's or none. */
  async owned(userId: string, id: string): Promise<AppConversationRecord> {
    const [found] = (await this.deps.appConversations.getManyOwned([id], userId)).values();
    if (!found) throw new NotFound('Conversation not found');
    return found;
  }

  /** The conversation's runtime, running (runningRuntime says when `resume` resumes a paused sandbox). */
  private runtimeOf(
    userId: string,
    c: AppConversationRecord,
    resume: boolean,
  ): Promise<{ runtime: RuntimeClient; resumed: boolean }> {
    return runningRuntime(this.deps, userId, c, resume);
  }

  private get timeoutMs(): number {
    return this.deps.settings.runtimeCallTimeoutMs;
  }

  /** Delivers a message to the conversation's agent (resuming its sandbox if paused). */
  async sendMessage(userId: string, id: string, message: RuntimeMessage): Promise<SendMessageResult> {
    const c = await this.owned(userId, id);
    return this.deliver(userId, c, message);
  }

  /** As sendMessage, for a conversation already read (pending messages deliver through this). */
  async deliver(userId: string, c: AppConversationRecord, message: RuntimeMessage): Promise<SendMessageResult> {
    const { runtime, resumed } = await this.runtimeOf(userId, c, true);
    if (
      message.id &&
      (await deliveredBefore(this.deps.pendingMessages, runtime, c.id, { ...message, id: message.id }, this.timeoutMs))
    ) {
      return {
        success: true,
        sandbox_status: 'RUNNING',
        message: 'The message was delivered before; it was not sent again',
      };
    }
    const a = await runtime.sendMessage(c.id, message, this.timeoutMs);
    if (a.status !== 200) throw runtimeRefusal(c, a);
    return {
      success: true,
      sandbox_status: 'RUNNING',
      message: resumed ? 'The sandbox was paused; it was resumed first' : null,
    };
  }

  /**
   * The agent's reply to a question about conversation `c`, nothing added to it (a callback asks it for
   * a summary). Its sandbox must be running: a paused one is not resumed for this.
   */
  async askAgent(c: AppConversationRecord, question: string): Promise<string> {
    const { runtime } = await this.runtimeOf(c.created_by_user_id, c, false);
    // One LLM call: as long as an agent step may take, not as long as a runtime call.
    const a = await runtime.askAgent(c.id, question, Math.max(this.timeoutMs, ASK_AGENT_TIMEOUT_MS));
    if (a.status !== 200) throw runtimeRefusal(c, a);
    const response = (a.body as { response?: unknown } | null)?.response;
    if (typeof response !== 'string')
      throw new UpstreamFailed(`The sandbox's agent server answered ask_agent without a response text`);
    return response;
  }

  /**
   * Hands the caller's saved profile `profileName` (its LLM over the organization's) to the agent of
   * conversation `id`, for its next LLM calls; records the model. The sandbox must be running.
   */
  async switchProfile(userId: string, id: string, profileName: string): Promise<void> {
    const c = await this.owned(userId, id);
    if (!this.deps.startSettings) throw new Unavailable('This process cannot open saved profiles');
    const { agent_settings: agent } = await this.deps.startSettings.resolve(userId, {}, { name: profileName });
    if (agent.agent_kind === 'acp') throw new Conflict('Your agent is an ACP agent, which takes no LLM');
    const { model, base_url } = agent.llm;
    if (!model || !base_url)
      throw new Conflict(
        `The profile ${profileName} names no model and endpoint (model and base_url), and your organization gives none`,
      );
    const { runtime } = await this.runtimeOf(userId, c, false);
    // The LLM goes in under the conversation's usage id (the one its start gave it, from the user's own
    // settings), so the agent server replaces the agent's LLM rather than registering another.
    const usageId = (await this.deps.startSettings.resolve(userId)).agent_settings;
    const llm = { ...agent.llm, usage_id: usageId.agent_kind === 'acp' ? undefined : usageId.llm.usage_id };
    const a = await runtime.switchLlm(c.id, runtimeLlm(llm, model), this.timeoutMs);
    if (a.status === 404) throw runtimeRefusal(c, a);
    // A value it takes in no LLM (a base_url that is no URL, top_p 0): the profile's to change.
    if (a.status === 400 || a.status === 422)
      throw new Conflict(
        `The sandbox's agent server refused the LLM of profile ${profileName} (${a.status}): ${detailOf(a)}`,
      );
    if (a.status !== 200) throw workspaceRefusal(a);
    await this.deps.appConversations.setModel(c.id, model);
  }

  /** Pause, run or interrupt the agent; answers the runtime's execution status after it. */
  async control(
    userId: string,
    id: string,
    action: RunControl,
  ): Promise<{ conversation: AppConversationRecord; execution_status: string | null }> {
    const c = await this.owned(userId, id);
    // Only run needs a running agent server; a paused sandbox has no agent step to pause or interrupt.
    const { runtime } = await this.runtimeOf(userId, c, action === 'run');
    const a = await runtime.control(c.id, action, this.timeoutMs);
    if (a.status !== 200) throw runtimeRefusal(c, a);
    return { conversation: c, execution_status: a.executionStatus };
  }

  async update(userId: string, id: string, change: AppConversationChange): Promise<AppConversationRecord> {
    const updated = await this.deps.appConversations.update(id, userId, change);
    if (!updated) throw new NotFound('Conversation not found');
    return updated;
  }

  /**
   * Deletes the conversation, its log and everything kept for it; its sandbox too when no other
   * conversation runs there (else only the runtime's copy of the conversation goes). The record goes
   * last: a delete cut short is finished by the next one.
   */
  async delete(userId: string, id: string): Promise<void> {
    const c = await this.owned(userId, id);
    // A start still running would go on writing its statuses (and its conversation record) after the delete.
    const task = await this.deps.startTasks.get(id);
    if (task && !startEnded(task.status))
      throw new Conflict(
        `Conversation ${id} is still starting (${task.status}); delete it once its start is READY or ERROR`,
      );
    await deleteConversationAndLog(this.deps, userId, id, c.sandbox_id);
  }

  /** A workspace file's text; '' when there is no such file (as the reference answers). */
  async readFile(userId: string, id: string, filePath: string): Promise<string> {
    const c = await this.owned(userId, id);
    const { runtime } = await this.runtimeOf(userId, c, false);
    return readWorkspaceFile(runtime, c, filePath, this.timeoutMs);
  }

  async gitChanges(userId: string, id: string, repoPath: string, ref?: string): Promise<GitChange[]> {
    return this.git(userId, id, 'changes', repoPath, ref, z.array(GitChangeSchema));
  }

  async gitDiff(userId: string, id: string, filePath: string, ref?: string): Promise<GitDiff> {
    return this.git(userId, id, 'diff', filePath, ref, GitDiffSchema);
  }

  /** A git view of the runtime's for path `p` of the workspace (readGitView checks its shape). */
  private async git<T>(
    userId: string,
    id: string,
    view: 'changes' | 'diff',
    p: string,
    ref: string | undefined,
    shape: z.ZodType<T>,
  ): Promise<T> {
    const c = await this.owned(userId, id);
    const target = workspacePath(c, p);
    const { runtime } = await this.runtimeOf(userId, c, false);
    return readGitView(runtime, view, target, ref, shape, this.timeoutMs);
  }
}
