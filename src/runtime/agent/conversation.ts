/**
 * One conversation in the runtime: its settings, its ordered events (each written to the outbox before
 * anything else sees it) and the agent loop. The loop reads like SPEC 3.3: each step asks the LLM,
 * records the actions it proposes, waits for a confirmation when asked to, runs the PreToolUse hooks
 * (which may block), runs the tools and records what they observed, until the agent finishes, a pause
 * takes effect between steps, an interrupt cancels the step, max_iterations is reached or an unexpected
 * failure moves the conversation to ERROR. Each completion's tokens and cost add up to its metrics, recorded
 * after every completion. A message sent with an id the conversation already holds is not added again. What needs none of the loop's state lives beside it (replay,
 * tool-call parsing, masking, the events it builds, how actions run), so it can change and be tested alone.
 */
import { randomUUID } from 'node:crypto';
import { EventSchema, type Event } from '../../schemas/events';
import { ActionRunner } from './action-runner';
import { completionEvents } from './completion-events';
import { planCondensation, SUMMARY_INSTRUCTIONS } from './condenser';
import { errorOf, rejectionOf, text, type ActionEvent, type NewEvent } from './conversation-events';
import { agentMessage, messageText, stopHookMessage, triggeredSkills, userMessage } from './conversation-messages';
import {
  addCompletion,
  emptyMetrics,
  lastMetrics,
  METRICS_STATE_KEY,
  type MetricsSnapshot,
} from './conversation-metrics';
import { replay, restartReport, unanswered } from './conversation-replay';
import type { ConversationInfo, CreateConversation, ExecutionStatus, UserMessage } from './conversation-schemas';
import { runnable, toolCallEvents } from './conversation-tool-calls';
import { fitEvent } from './event-size';
import { complete, type Completion } from './llm-client';
import { buildView, toMessages } from './llm-view';
import type { EventOutbox } from './outbox';
import { systemPrompt } from './system-prompt';
import { AGENT_TOOL_DEFINITIONS, PUBLISHED_TOOL_DEFINITIONS } from './tools';
import type { TaskItem } from './tools/tool';

/** A call the API refuses because of the conversation's state (answered 409). */
export class ConversationConflict extends Error {}

export interface ConversationDeps {
  outbox: EventOutbox;
  /** Absolute workspace directory of this conversation. */
  workspace: string;
  /** The command environment without the conversation's secrets. */
  baseEnv: NodeJS.ProcessEnv;
  maxOutputBytes: number;
  log: (msg: string, fields?: object) => void;
}

const AWAITS_CONFIRMATION = 'the conversation waits for a confirmation of its pending actions; respond to it first';

export class Conversation {
  private readonly events: Event[] = [];
  private status: ExecutionStatus = 'idle';
  private pending: ActionEvent[] = [];
  private tasks: TaskItem[] = [];
  private activatedSkills = new Set<string>();
  private loop: Promise<void> | null = null;
  private pauseRequested = false;
  /** A message asked to run while the loop ran: the agent has not seen it if the loop is about to finish. */
  private unseenMessage = false;
  /** A client asked for a condensation (CondensationRequest); the next step condenses. */
  private condenseRequested = false;
  private stepAbort: AbortController | null = null;
  private iterations = 0;
  private updatedAt: string;
  private readonly runner: ActionRunner;
  private metrics: MetricsSnapshot;
  /** The kind of every recorded event by its id: a message id already held is not added again. */
  private readonly eventKinds = new Map<string, string>();
  /** Ids of messages being added (their hooks run): a second delivery meanwhile is not added either. */
  private readonly incoming = new Set<string>();
  /** Deleted: nothing more is written, the loop stops at its next step. */
  private discarded = false;

  constructor(
    readonly id: string,
    readonly settings: CreateConversation,
    readonly createdAt: string,
    private readonly deps: ConversationDeps,
  ) {
    this.updatedAt = createdAt;
    this.metrics = emptyMetrics(settings.agent.llm.model);
    const { workspace, baseEnv, maxOutputBytes } = deps;
    this.runner = new ActionRunner({
      conversationId: id,
      settings,
      workspace,
      baseEnv,
      maxOutputBytes,
      tasks: () => this.tasks,
      emit: (e) => this.emit(e),
    });
  }

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

  /** A conversation read back after a runtime restart: its state comes from its events. */
  restore(events: Event[]): void {
    this.events.push(...events);
    for (const e of events) this.eventKinds.set(e.id, e.kind);
    this.metrics = lastMetrics(events) ?? this.metrics;
    const state = replay(this.events, this.createdAt);
    ({
      status: this.status,
      tasks: this.tasks,
      activatedSkills: this.activatedSkills,
      condenseRequested: this.condenseRequested,
      updatedAt: this.updatedAt,
    } = state);
    if (this.status === 'waiting_for_confirmation') this.pending = state.open;
    if (this.status === 'running') {
      // Cut short by the stop: what was in flight is answered, and the conversation waits for a run.
      for (const e of restartReport(state.open)) this.emit(e);
      this.setStatus('paused');
    }
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

  // ---- the loop ----

  private startLoop(runPendingFirst: boolean): void {
    this.pauseRequested = false;
    if (!runPendingFirst) this.iterations = 0; // an accepted confirmation goes on counting
    this.setStatus('running');
    this.loop = this.runLoop(runPendingFirst)
      .catch((e: Error) => {
        this.deps.log('the run loop failed', { err: e.message });
        try {
          for (const a of unanswered(this.events)) this.emit(errorOf(a, `Not run: the run loop failed (${e.message})`));
          this.pending = [];
          this.emit({
            kind: 'ConversationErrorEvent',
            source: 'environment',
            code: e.name || 'Error',
            detail: e.message,
          });
          this.setStatus('error');
        } catch (again) {
          // Nothing can be recorded (a full disk): the runtime's log is all that is left.
          this.deps.log('the failure could not be recorded', { err: (again as Error).message });
        }
      })
      .finally(() => {
        this.loop = null;
        this.stepAbort = null;
      });
  }

  private async runLoop(runPendingFirst: boolean): Promise<void> {
    if (runPendingFirst) {
      const outcome = await this.execute(this.pending.splice(0));
      if (outcome !== 'continue') return this.end(outcome);
    }
    for (;;) {
      if (this.pauseRequested) return this.end('interrupted');
      if (this.iterations >= this.settings.max_iterations) {
        this.emit({
          kind: 'ConversationErrorEvent',
          source: 'environment',
          code: 'MaxIterationsReached',
          detail: `The agent stopped after ${this.iterations} iterations (max_iterations). Send a message or run the conversation to let it go on.`,
        });
        return this.setStatus('error');
      }
      const outcome = await this.step();
      if (outcome !== 'continue') return this.end(outcome);
    }
  }

  private async end(outcome: 'finished' | 'waiting' | 'interrupted'): Promise<void> {
    if (outcome === 'interrupted') return this.setStatus('paused');
    if (outcome === 'waiting') return this.setStatus('waiting_for_confirmation');
    if (this.unseenMessage) return this.runLoop(false); // a message came in after the last LLM call
    const stop = (await this.runner.hooks('Stop', { conversation_id: this.id })).find((h) => h.blocked);
    if (stop && this.iterations < this.settings.max_iterations) {
      this.emit(stopHookMessage(stop.reason));
      return this.runLoop(false);
    }
    if (this.pauseRequested) return this.setStatus('paused'); // interrupted while the Stop hooks ran
    if (this.unseenMessage) return this.runLoop(false); // it came in while the Stop hooks ran
    this.setStatus('finished');
  }

  /** One agent step: ask the LLM, record what it proposes, run it unless it must be confirmed. */
  private async step(): Promise<'continue' | 'finished' | 'waiting' | 'interrupted'> {
    if (!(await this.condenseIfNeeded())) return 'interrupted';
    this.unseenMessage = false;
    const completion = await this.askStep(toMessages(buildView(this.events)), AGENT_TOOL_DEFINITIONS);
    if (!completion) return 'interrupted';
    this.iterations++;
    if (completion.tool_calls.length === 0) {
      this.emit(agentMessage(completion));
      return 'finished';
    }
    const calls = toolCallEvents(completion);
    const actions = runnable(calls.actions.map((a) => this.emit(a) as ActionEvent));
    for (const e of calls.errors) this.emit(e);
    if (actions.length === 0) return 'continue';
    if (this.settings.confirmation_mode) {
      this.pending = actions;
      return 'waiting';
    }
    return this.execute(actions);
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

  /** The LLM call of a step, cancelled by an interrupt (then null). */
  private async askStep(messages: ReturnType<typeof toMessages>, tools: object[]): Promise<Completion | null> {
    const llm = this.settings.agent.llm;
    const abort = (this.stepAbort = new AbortController());
    try {
      const completion = await complete(llm, messages, tools, {
        signal: abort.signal,
        onDelta: llm.stream
          ? (d) =>
              this.emitTransient({
                kind: 'StreamingDeltaEvent',
                content: d.content,
                reasoning_content: d.reasoning_content,
              })
          : undefined,
      });
      for (const e of completionEvents(llm, completion)) this.emit(e);
      this.metrics = addCompletion(this.metrics, llm.model, completion.id, completion.usage);
      this.emit({ kind: 'ConversationStateUpdateEvent', key: METRICS_STATE_KEY, value: this.metrics });
      return completion;
    } catch (e) {
      if (abort.signal.aborted) return null;
      throw e;
    } finally {
      this.stepAbort = null;
    }
  }

  /** Runs accepted actions; an interrupt cancels the one running and answers the others. */
  private async execute(actions: ActionEvent[]): Promise<'continue' | 'finished' | 'interrupted'> {
    const abort = (this.stepAbort = new AbortController());
    const finished = await this.runner.run(actions, abort.signal);
    this.stepAbort = null;
    if (abort.signal.aborted) return 'interrupted';
    return finished ? 'finished' : 'continue';
  }

  /** False when an interrupt cancelled the summarizing call. */
  private async condenseIfNeeded(): Promise<boolean> {
    const condenser = this.settings.agent.condenser;
    if (!condenser && !this.condenseRequested) return true;
    const plan = planCondensation(buildView(this.events), condenser ?? null, this.condenseRequested);
    if (!plan) {
      this.condenseRequested = false; // nothing to forget
      return true;
    }
    const completion = await this.askStep(
      [
        { role: 'system', content: SUMMARY_INSTRUCTIONS },
        { role: 'user', content: plan.material },
      ],
      [],
    );
    if (!completion) return false;
    const summary = completion.content ?? '';
    this.emit({
      kind: 'Condensation',
      forgotten_event_ids: plan.forgotten,
      summary,
      summary_offset: plan.summaryOffset,
      llm_response_id: completion.id,
    });
    this.emit({ kind: 'CondensationSummaryEvent', summary });
    this.condenseRequested = false;
    return true;
  }

  // ---- events ----

  private emit(partial: NewEvent): Event {
    const event = EventSchema.parse(
      fitEvent({
        id: randomUUID(),
        timestamp: new Date().toISOString(),
        parent_id: this.events.at(-1)?.id ?? null,
        ...partial,
      }),
    );
    if (!this.discarded) this.deps.outbox.append(event);
    this.events.push(event);
    this.eventKinds.set(event.id, event.kind);
    this.updatedAt = event.timestamp;
    return event;
  }

  private emitTransient(partial: NewEvent): void {
    if (this.discarded) return;
    this.deps.outbox.sendTransient(
      EventSchema.parse({ id: randomUUID(), timestamp: new Date().toISOString(), ...partial }),
    );
  }

  private setStatus(status: ExecutionStatus): void {
    if (status === this.status && this.events.some((e) => e.kind === 'ConversationStateUpdateEvent')) return;
    this.status = status;
    this.emit({ kind: 'ConversationStateUpdateEvent', key: 'execution_status', value: status });
  }
}
