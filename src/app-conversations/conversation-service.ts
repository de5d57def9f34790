/**
 * What a client does with a conversation once it is started, through the control plane rather than the
 * sandbox's own address and key: send a message (a paused sandbox is resumed first), pause, run or
 * interrupt its agent, rename it, delete it with its log (and its sandbox when nothing else uses it),
 * and read its workspace (a file, git changes and diffs). Only the owner's conversations exist here:
 * anyone else's id is NotFound. A runtime that does not answer in time is Unavailable, never a hang.
 */
import { startEnded } from '../schemas/app-conversations';
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import path from 'node:path';
import { z } from 'zod';
import type { SecretBox } from '../auth/secret-box';
import { BadRequest, Conflict, NotFound, Unavailable, UpstreamFailed } from '../errors';
import { GitChangeSchema, GitDiffSchema, type GitChange, type GitDiff } from '../schemas/git';
import type { SandboxStatus } from '../schemas/sandboxes';
import type { SandboxService } from '../sandboxes/sandbox-service';
import type { StartSettingsResolver } from '../orgs/start-settings';
import {
  runtimeLlm,
  textOf,
  type RunControl,
  type RuntimeAnswer,
  type RuntimeClient,
  type RuntimeMessage,
} from '../sandboxes/runtime-client';
import { runtimeClient } from '../sandboxes/runtime-clients';
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
import { callbacksWorkflowId } from '../temporal/shared';
import { setTimeout as sleep } from 'node:timers/promises';

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

/** Files larger than this are not read through the control plane. */
export const MAX_FILE_BYTES = 5 * 1024 * 1024;

const detailOf = (a: RuntimeAnswer) => {
  const d = (a.body as { detail?: unknown } | null)?.detail;
  return typeof d === 'string' ? d : JSON.stringify(a.body ?? '').slice(0, 300);
};

export class ConversationService {
  constructor(private readonly deps: ConversationServiceDeps) {}

  /** The caller's conversation; NotFound for anyone else's or none. */
  async owned(userId: string, id: string): Promise<AppConversationRecord> {
    const [found] = (await this.deps.appConversations.getManyOwned([id], userId)).values();
    if (!found) throw new NotFound('Conversation not found');
    return found;
  }

  /**
   * The conversation's runtime, running. A paused sandbox is resumed when `resume` says so; one that is
   * starting is waited for (bounded); a deleted one is a Conflict, one in ERROR Unavailable.
   */
  private async runtimeOf(
    userId: string,
    c: AppConversationRecord,
    resume: boolean,
  ): Promise<{ runtime: RuntimeClient; resumed: boolean }> {
    if (!c.sandbox_id) throw new Conflict(`Conversation ${c.id} has no sandbox`);
    let sandbox = await this.deps.sandboxes.getOwned(c.sandbox_id, userId);
    if (!sandbox || sandbox.status === 'DELETED' || sandbox.status === 'MISSING') {
      throw new Conflict(
        `The sandbox of conversation ${c.id} is gone (${sandbox?.status ?? 'deleted'}); start a new conversation`,
      );
    }
    let resumed = false;
    if (sandbox.status === 'PAUSED') {
      if (!resume)
        throw new Conflict(
          `The sandbox of conversation ${c.id} is paused; resume it (POST /api/v1/sandboxes/${c.sandbox_id}/resume) or send a message`,
        );
      await this.deps.sandboxService.operate(userId, c.sandbox_id, 'resume');
      resumed = true;
    }
    const deadline = Date.now() + this.deps.settings.sandboxWaitMs;
    for (;;) {
      sandbox = await this.deps.sandboxes.get(c.sandbox_id);
      if (sandbox?.status === 'RUNNING') break;
      if (sandbox?.status === 'ERROR')
        throw new Unavailable(
          `The sandbox of conversation ${c.id} is in ERROR: ${sandbox.status_detail ?? 'no detail'}; resume it or start a new conversation`,
        );
      if (sandbox?.status !== 'STARTING' && !resumed)
        throw new Conflict(`The sandbox of conversation ${c.id} is ${sandbox?.status ?? 'gone'}`);
      if (Date.now() >= deadline) {
        throw new Unavailable(
          `The sandbox of conversation ${c.id} did not run within ${Math.round(this.deps.settings.sandboxWaitMs / 1000)} s (it is ${sandbox?.status}); try again shortly`,
          5,
        );
      }
      await sleep(250);
    }
    this.deps.sandboxService.touch(c.sandbox_id);
    return { runtime: runtimeClient(sandbox, this.deps.box), resumed };
  }

  private get timeoutMs(): number {
    return this.deps.settings.runtimeCallTimeoutMs;
  }

  /** A runtime answer other than 2xx, in the domain's terms (a 404 of a conversation call: the runtime lost it). */
  private refusal(c: AppConversationRecord, a: RuntimeAnswer): Error {
    if (a.status === 404)
      return new Conflict(`Conversation ${c.id} is not in its sandbox any more (the runtime does not know it)`);
    return this.workspaceRefusal(a);
  }

  /** A runtime answer other than 2xx to a workspace read: its 404 is about the path, not the conversation. */
  private workspaceRefusal(a: RuntimeAnswer): Error {
    if (a.status === 409) return new Conflict(detailOf(a));
    if (a.status === 400 || a.status === 404 || a.status === 413 || a.status === 422)
      return new BadRequest(detailOf(a));
    if (a.status === 503) return new Unavailable(`The sandbox's agent server is busy: ${detailOf(a)}`, 5);
    return new UpstreamFailed(`The sandbox's agent server answered ${a.status}: ${detailOf(a)}`);
  }

  /** Delivers a message to the conversation's agent (resuming its sandbox if paused). */
  async sendMessage(userId: string, id: string, message: RuntimeMessage): Promise<SendMessageResult> {
    const c = await this.owned(userId, id);
    return this.deliver(userId, c, message);
  }

  /** As sendMessage, for a conversation already read (pending messages deliver through this). */
  async deliver(userId: string, c: AppConversationRecord, message: RuntimeMessage): Promise<SendMessageResult> {
    const { runtime, resumed } = await this.runtimeOf(userId, c, true);
    if (message.id && (await this.deliveredBefore(runtime, c.id, { ...message, id: message.id }))) {
      return {
        success: true,
        sandbox_status: 'RUNNING',
        message: 'The message was delivered before; it was not sent again',
      };
    }
    const a = await runtime.sendMessage(c.id, message, this.timeoutMs);
    if (a.status !== 200) throw this.refusal(c, a);
    return {
      success: true,
      sandbox_status: 'RUNNING',
      message: resumed ? 'The sandbox was paused; it was resumed first' : null,
    };
  }

  /**
   * For a runtime that does not drop a repeated message by id: whether an earlier attempt of this one got
   * through (a user message with its text is in the runtime's log from that attempt's time on). The first
   * attempt's time is recorded otherwise. Two limits: a message with the same text sent by other means
   * after the first attempt is taken for it, and an attempt the runtime is still holding (busy with a
   * step) when the retry looks is not seen, so both land.
   */
  private async deliveredBefore(
    runtime: RuntimeClient,
    conversationId: string,
    message: RuntimeMessage & { id: string },
  ): Promise<boolean> {
    if (runtime.dropsRepeatedMessages || !runtime.eventLog) return false;
    const first = await this.deps.pendingMessages.firstAttempt(conversationId, message.id);
    // The runtime's clock is this machine's or close to it: a few seconds of slack.
    if (
      first !== null &&
      (await runtime.eventLog.hasUserMessage(
        conversationId,
        textOf(message.content),
        new Date(first.getTime() - 5000),
        this.timeoutMs,
      ))
    )
      return true;
    if (first === null) await this.deps.pendingMessages.recordFirstAttempt(conversationId, message.id, new Date());
    return false;
  }

  /**
   * The agent's reply to a question about conversation `c`, nothing added to it (a callback asks it for
   * a summary). Its sandbox must be running: a paused one is not resumed for this.
   */
  async askAgent(c: AppConversationRecord, question: string): Promise<string> {
    const { runtime } = await this.runtimeOf(c.created_by_user_id, c, false);
    // One LLM call: as long as an agent step may take, not as long as a runtime call.
    const a = await runtime.askAgent(c.id, question, Math.max(this.timeoutMs, ASK_AGENT_TIMEOUT_MS));
    if (a.status !== 200) throw this.refusal(c, a);
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
    if (a.status === 404) throw this.refusal(c, a);
    // A value it takes in no LLM (a base_url that is no URL, top_p 0): the profile's to change.
    if (a.status === 400 || a.status === 422)
      throw new Conflict(
        `The sandbox's agent server refused the LLM of profile ${profileName} (${a.status}): ${detailOf(a)}`,
      );
    if (a.status !== 200) throw this.workspaceRefusal(a);
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
    if (a.status !== 200) throw this.refusal(c, a);
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
    const { sandbox_id: sandboxId } = c;
    const shared = sandboxId
      ? (await this.deps.appConversations.otherUsesSandbox(sandboxId, id)) ||
        (await this.deps.startTasks.startingIn(sandboxId, userId)).some((t) => t !== id)
      : false;
    if (sandboxId && !shared) {
      await this.deps.sandboxService.operate(userId, sandboxId, 'delete').catch((e: unknown) => {
        if (!(e instanceof NotFound)) throw e;
      });
    } else if (sandboxId) {
      const sandbox = await this.deps.sandboxes.get(sandboxId);
      if (sandbox?.status === 'RUNNING') {
        // Best effort: the sandbox stays for its other conversations; its copy of this one is only disk.
        await runtimeClient(sandbox, this.deps.box)
          .deleteConversation(id, this.timeoutMs)
          .catch(() => undefined);
      }
    }
    // The event record first: its session key is what the runtime reports with, so nothing more lands.
    // Under the conversation's ingest lease: a batch being stored now finishes before the log goes, and
    // none after it authenticates.
    const lease = await this.deps.conversations.acquireIngestLease(id, 30_000, 15_000);
    if (!lease) throw new Unavailable(`Events of conversation ${id} are being stored; delete it again shortly`, 2);
    try {
      await this.deps.conversations.delete(id);
      await this.deps.events.deleteConversation(id);
    } finally {
      await this.deps.conversations.releaseIngestLease(id, lease).catch(() => undefined);
    }
    await Promise.all([
      this.deps.callbacks.deleteConversation(id),
      this.deps.conversationStates.delete(id),
      this.deps.pendingMessages.deleteAll(id),
      this.stopCallbacks(id),
    ]);
    await this.deps.startTasks.delete(id);
    await this.deps.appConversations.delete(id);
  }

  private async stopCallbacks(id: string): Promise<void> {
    try {
      await this.deps.temporal.workflow.getHandle(callbacksWorkflowId(id)).terminate('the conversation was deleted');
    } catch (e) {
      if (!(e instanceof WorkflowNotFoundError)) throw e;
    }
  }

  /**
   * A path the client gave, as the runtime takes it: relative ones start at the conversation's working
   * directory. One that climbs out of the runtime's working directory is refused here; `.` goes as `./`
   * (a bare dot segment would be resolved away by the URL).
   */
  private workspacePath(c: AppConversationRecord, requested: string): string {
    if (path.posix.isAbsolute(requested)) return requested;
    const joined = path.posix.normalize(c.working_dir ? path.posix.join(c.working_dir, requested) : requested);
    if (joined === '..' || joined.startsWith('../'))
      throw new BadRequest(`path ${JSON.stringify(requested)} is outside the workspace`);
    return joined === '.' ? './' : joined;
  }

  /** A workspace file's text; '' when there is no such file (as the reference answers). */
  async readFile(userId: string, id: string, filePath: string): Promise<string> {
    const c = await this.owned(userId, id);
    const { runtime } = await this.runtimeOf(userId, c, false);
    const r = await runtime.download(this.workspacePath(c, filePath), MAX_FILE_BYTES, this.timeoutMs);
    if (r.status === 404) return '';
    if (r.status !== 200) throw this.workspaceRefusal(r);
    return r.body as string;
  }

  async gitChanges(userId: string, id: string, repoPath: string, ref?: string): Promise<GitChange[]> {
    return this.git(userId, id, 'changes', repoPath, ref, z.array(GitChangeSchema));
  }

  async gitDiff(userId: string, id: string, filePath: string, ref?: string): Promise<GitDiff> {
    return this.git(userId, id, 'diff', filePath, ref, GitDiffSchema);
  }

  /** A git view of the runtime's, passed on only when it has the published shape (a runtime is not trusted). */
  private async git<T>(
    userId: string,
    id: string,
    view: 'changes' | 'diff',
    p: string,
    ref: string | undefined,
    shape: z.ZodType<T>,
  ): Promise<T> {
    const c = await this.owned(userId, id);
    const target = this.workspacePath(c, p);
    const { runtime } = await this.runtimeOf(userId, c, false);
    const a = await runtime.git(view, target, ref, this.timeoutMs);
    if (a.status !== 200) throw this.workspaceRefusal(a);
    const parsed = shape.safeParse(a.body);
    if (!parsed.success)
      throw new UpstreamFailed(
        `The sandbox's agent server answered the git ${view} with something else than its published shape`,
      );
    return parsed.data;
  }
}
