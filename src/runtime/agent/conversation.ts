/**
 * One conversation in the runtime, as its clients see it: it begins, takes messages (one sent with an id
 * the conversation already holds is not added again), runs, pauses, is interrupted, answers confirmations
 * and questions, and is closed or deleted. Its agent loop is in conversation-loop.ts, what it records in
 * conversation-record.ts; what needs none of its state lives beside them (replay, tool-call parsing,
 * masking, the events it builds, how actions run), so it can change and be tested alone.
 */
import { rejectionOf, text } from './conversation-events';
import { ConversationLoop } from './conversation-loop';
import { messageText, triggeredSkills, userMessage } from './conversation-messages';
import type { ConversationInfo, CreateConversation, UserMessage } from './conversation-schemas';
import { complete } from './llm-client';
import { buildView, toMessages } from './llm-view';
import { systemPrompt } from './system-prompt';
import { PUBLISHED_TOOL_DEFINITIONS } from './tools';

/** A call the API refuses because of the conversation's state (answered 409). */
export class ConversationConflict extends Error {}

const AWAITS_CONFIRMATION = 'the conversation waits for a confirmation of its pending actions; respond to it first';

export class Conversation extends ConversationLoop {
  /** Ids of messages being added (their hooks run): a second delivery meanwhile is not added either. */
  private readonly incoming = new Set<string>();

  // ---- life cycle ----

  /** A new conversation: the system prompt, the SessionStart hooks, then the initial message (and run). */
  async begin(): Promise<void> {
    const tools = PUBLISHED_TOOL_DEFINITIONS;
    const prompt = systemPrompt(this.settings, this.deps.workspace);
    this.emit({
      kind: 'SystemPromptEvent',
      system_prompt: text(prompt.static),
      tools,
      dynamic_context: text(prompt.dynamic),
    });
    this.setStatus('idle');
    await this.runner.hooks('SessionStart', { conversation_id: this.id });
    const first = this.settings.initial_message;
    if (first) await this.sendMessage(first);
  }

  info(): ConversationInfo {
    return {
      id: this.id,
      execution_status: this.status,
      created_at: this.createdAt,
      updated_at: this.updatedAt,
      workspace: this.deps.workspace,
      model: this.settings.agent.llm.model,
      max_iterations: this.settings.max_iterations,
      iterations: this.iterations,
      confirmation_mode: this.settings.confirmation_mode,
      events: this.events.length,
      unsent_events: this.deps.outbox.unsent,
      pending_actions: this.pending.map((a) => a.id),
      metrics: this.metrics,
    };
  }

  async close(): Promise<void> {
    this.stepAbort?.abort();
    await this.deps.outbox.stop();
  }

  /**
   * Before the conversation is deleted: nothing more is written or sent, the step in flight is cancelled
   * (as by an interrupt) and the loop ends; resolves when it has, or after `waitMs` (a hook that takes its
   * time writes nothing anyway).
   */
  async discard(waitMs = 10_000): Promise<void> {
    this.discarded = true;
    this.pauseRequested = true;
    this.stepAbort?.abort();
    const loop = this.loop;
    if (loop) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([loop.catch(() => undefined), new Promise((r) => (timer = setTimeout(r, waitMs)))]);
      clearTimeout(timer);
    }
    await this.deps.outbox.stop();
  }

  /** Waits for the loop to stop (tests, shutdown). */
  async idle(): Promise<void> {
    while (this.loop) await this.loop;
  }

  // ---- what clients do ----

  /**
   * Adds a client's message (and runs the agent on it when `run`). A message with an id the conversation
   * already holds, or is adding, changes nothing. UserPromptSubmit hooks and skill triggers apply to
   * user-role messages.
   */
  async sendMessage(message: Pick<UserMessage, 'role' | 'content' | 'run' | 'id'>): Promise<void> {
    const { id, run } = message;
    if (id !== undefined && (this.incoming.has(id) || this.eventKinds.get(id) === 'MessageEvent')) return;
    if (id !== undefined && this.eventKinds.has(id))
      throw new ConversationConflict(`the id ${JSON.stringify(id)} is the id of another event of this conversation`);
    if (run && this.status === 'waiting_for_confirmation') throw new ConversationConflict(AWAITS_CONFIRMATION);
    if (id !== undefined) this.incoming.add(id);
    try {
      const isUser = message.role === 'user';
      const body = messageText(message.content);
      const hookRuns = isUser
        ? await this.runner.hooks('UserPromptSubmit', { conversation_id: this.id, prompt: body })
        : [];
      const blocked = hookRuns.find((h) => h.blocked);
      if (blocked)
        throw new ConversationConflict(`the message was blocked by a UserPromptSubmit hook: ${blocked.reason}`);
      // The loop may have stopped for a confirmation while the hooks ran.
      if (run && this.status === 'waiting_for_confirmation') throw new ConversationConflict(AWAITS_CONFIRMATION);
      const skills = isUser ? triggeredSkills(this.settings.skills, body, this.activatedSkills) : [];
      skills.forEach((s) => this.activatedSkills.add(s.name));
      this.emit(
        userMessage(
          message,
          skills,
          hookRuns.map((h) => h.additional_context),
        ),
      );
    } finally {
      if (id !== undefined) this.incoming.delete(id);
    }
    if (run && this.loop) this.unseenMessage = true;
    else if (run) this.startLoop(false);
  }

  run(): void {
    if (this.loop) throw new ConversationConflict('the conversation is already running');
    if (this.status === 'waiting_for_confirmation') throw new ConversationConflict(AWAITS_CONFIRMATION);
    this.startLoop(false);
  }

  /** Takes effect between steps: the current step finishes, then the conversation is PAUSED. */
  pause(): void {
    if (!this.loop) throw new ConversationConflict(`the conversation is not running (it is ${this.status})`);
    if (this.pauseRequested) return;
    this.pauseRequested = true;
    this.emit({ kind: 'PauseEvent' });
  }

  /** Asks for a condensation of the history; it happens at the start of the next step, whatever the condenser's max_size. */
  requestCondensation(): void {
    if (this.condenseRequested) return;
    this.condenseRequested = true;
    this.emit({ kind: 'CondensationRequest' });
  }

  /** Cancels the step in flight at once (the LLM call, a running command), then PAUSED. */
  interrupt(): void {
    if (!this.loop) throw new ConversationConflict(`the conversation is not running (it is ${this.status})`);
    this.emit({ kind: 'InterruptEvent' });
    this.pauseRequested = true;
    this.stepAbort?.abort();
  }

  async respondToConfirmation(accept: boolean, reason: string): Promise<void> {
    if (this.status !== 'waiting_for_confirmation' || this.loop)
      throw new ConversationConflict(`no action waits for a confirmation (the conversation is ${this.status})`);
    if (accept) {
      this.startLoop(true);
      return;
    }
    for (const a of this.pending.splice(0)) this.emit(rejectionOf(a, reason, 'user'));
    this.setStatus('idle');
  }

  /**
   * Uses `llm` from the next LLM call on (a step under way finishes with the one it called); the
   * history stays as it is.
   */
  switchLlm(llm: CreateConversation['agent']['llm']): void {
    this.settings.agent.llm = llm;
  }

  /**
   * The agent's answer to a question about the conversation so far, without adding to it (the agent
   * server's `ask_agent`): one LLM call on the history and the question, no tools. Its cost is not in
   * the conversation's metrics, which count the conversation's own steps.
   */
  async ask(question: string, signal?: AbortSignal): Promise<string> {
    const messages = [...toMessages(buildView(this.events)), { role: 'user' as const, content: question }];
    const completion = await complete(this.settings.agent.llm, messages, [], { signal });
    return completion.content ?? '';
  }
}
