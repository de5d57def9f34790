/**
 * One conversation in the runtime: its settings, its ordered events (each written to the outbox before
 * anything else sees it) and the agent loop. The loop reads like SPEC 3.3: each step asks the LLM,
 * records the actions it proposes, waits for a confirmation when asked to, runs the PreToolUse hooks
 * (which may block), runs the tools and records what they observed, until the agent finishes, a pause
 * takes effect between steps, an interrupt cancels the step, max_iterations is reached or an unexpected
 * failure moves the conversation to ERROR.
 */
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { EventSchema, type Event } from '../../schemas/events';
import { planCondensation, SUMMARY_INSTRUCTIONS } from './condenser';
import { fitEvent, MAX_EVENT_BYTES } from './event-size';
import type { ConversationInfo, CreateConversation, ExecutionStatus } from './conversation-schemas';
import { runHooks, type HookEventType } from './hooks';
import { complete, type Completion } from './llm-client';
import { buildView, toMessages } from './llm-view';
import type { EventOutbox } from './outbox';
import { systemPrompt } from './system-prompt';
import { toolByName, AGENT_TOOL_DEFINITIONS, AGENT_TOOLS } from './tools';
import type { TaskItem, ToolContext } from './tools/tool';

/** A call the API refuses because of the conversation's state (answered 409). */
export class ConversationConflict extends Error {}

type ActionEvent = Extract<Event, { kind: 'ActionEvent' }>;
type NewEvent = { kind: Event['kind']; source?: Event['source'] } & Record<string, unknown>;

export interface ConversationDeps {
  outbox: EventOutbox;
  /** Absolute workspace directory of this conversation. */
  workspace: string;
  /** The command environment without the conversation's secrets. */
  baseEnv: NodeJS.ProcessEnv;
  maxOutputBytes: number;
  log: (msg: string, fields?: object) => void;
}

const SECRET_MASK = '<secret-hidden>';
const text = (t: string) => ({ type: 'text' as const, text: t, cache_prompt: false });

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

  constructor(
    readonly id: string,
    readonly settings: CreateConversation,
    readonly createdAt: string,
    private readonly deps: ConversationDeps,
  ) {
    this.updatedAt = createdAt;
  }

  // ---- life cycle ----

  /** A new conversation: the system prompt, the SessionStart hooks, then the initial message (and run). */
  async begin(): Promise<void> {
    const tools = AGENT_TOOL_DEFINITIONS;
    const prompt = systemPrompt(this.settings, this.deps.workspace);
    this.emit({ kind: 'SystemPromptEvent', system_prompt: text(prompt.static), tools, dynamic_context: text(prompt.dynamic) });
    this.setStatus('idle');
    await this.hooks('SessionStart', { conversation_id: this.id });
    const first = this.settings.initial_message;
    if (first) await this.sendMessage(first.content, first.run);
  }

  /** A conversation read back after a runtime restart: its state comes from its events. */
  restore(events: Event[]): void {
    this.events.push(...events);
    for (const e of events) {
      if (e.kind === 'ConversationStateUpdateEvent' && e.key === 'execution_status') this.status = e.value as ExecutionStatus;
      if (e.kind === 'ObservationEvent' && e.observation.kind === 'TaskTrackerObservation') this.tasks = (e.observation.task_list as TaskItem[]) ?? [];
      if (e.kind === 'MessageEvent') e.activated_skills.forEach((s) => this.activatedSkills.add(s));
      if (e.kind === 'CondensationRequest') this.condenseRequested = true;
      if (e.kind === 'Condensation') this.condenseRequested = false;
    }
    this.updatedAt = events.at(-1)?.timestamp ?? this.createdAt;
    const open = this.unanswered();
    if (this.status === 'waiting_for_confirmation') {
      this.pending = open;
      return;
    }
    if (this.status === 'running') {
      // The runtime stopped mid-step (killed, or its machine went away): an infrastructure failure, reported
      // as such; what was in flight is answered, and the conversation waits for a run.
      this.emit({
        kind: 'ServerErrorEvent',
        source: 'environment',
        code: 'RuntimeRestarted',
        detail: `The runtime stopped while the conversation ran${open.length ? ` (${open.length} action(s) in flight)` : ''}; it is paused now: run it to go on.`,
      });
      for (const a of open) {
        this.emit({ kind: 'AgentErrorEvent', tool_name: a.tool_name, tool_call_id: a.tool_call_id, error: 'The runtime restarted while this action ran; it may have run partly or not at all.' });
      }
      this.setStatus('paused');
    }
  }

  /** Actions no observation, rejection or error has answered yet. */
  private unanswered(): ActionEvent[] {
    const answered = new Set<string>();
    for (const e of this.events) {
      if (e.kind === 'ObservationEvent' || e.kind === 'UserRejectObservation' || e.kind === 'AgentErrorEvent') answered.add(e.tool_call_id);
    }
    return this.events.filter((e): e is ActionEvent => e.kind === 'ActionEvent' && !answered.has(e.tool_call_id));
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
    };
  }

  async close(): Promise<void> {
    this.stepAbort?.abort();
    await this.deps.outbox.stop();
  }

  /** Waits for the loop to stop (tests, shutdown). */
  async idle(): Promise<void> {
    while (this.loop) await this.loop;
  }

  // ---- what clients do ----

  async sendMessage(content: { text: string }[], run: boolean): Promise<void> {
    if (run && this.status === 'waiting_for_confirmation') throw new ConversationConflict('the conversation waits for a confirmation of its pending actions; respond to it first');
    const body = content.map((c) => c.text).join('\n');
    const hookRuns = await this.hooks('UserPromptSubmit', { conversation_id: this.id, prompt: body });
    const blocked = hookRuns.find((h) => h.blocked);
    if (blocked) throw new ConversationConflict(`the message was blocked by a UserPromptSubmit hook: ${blocked.reason}`);
    // The loop may have stopped for a confirmation while the hooks ran.
    if (run && this.status === 'waiting_for_confirmation') throw new ConversationConflict('the conversation waits for a confirmation of its pending actions; respond to it first');
    const skills = this.settings.skills.filter(
      (s) => s.triggers.length > 0 && !this.activatedSkills.has(s.name) && s.triggers.some((t) => body.toLowerCase().includes(t.toLowerCase())),
    );
    skills.forEach((s) => this.activatedSkills.add(s.name));
    this.emit({
      kind: 'MessageEvent',
      source: 'user',
      llm_message: { role: 'user', content: content.map((c) => text(c.text)) },
      activated_skills: skills.map((s) => s.name),
      extended_content: [...skills.map((s) => text(`<skill name="${s.name}">\n${s.content}\n</skill>`)), ...hookRuns.flatMap((h) => (h.additional_context ? [text(h.additional_context)] : []))],
    });
    if (run && this.loop) this.unseenMessage = true;
    else if (run) this.startLoop(false);
  }

  run(): void {
    if (this.loop) throw new ConversationConflict('the conversation is already running');
    if (this.status === 'waiting_for_confirmation') throw new ConversationConflict('the conversation waits for a confirmation of its pending actions; respond to it first');
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
    if (this.status !== 'waiting_for_confirmation' || this.loop) throw new ConversationConflict(`no action waits for a confirmation (the conversation is ${this.status})`);
    if (accept) {
      this.startLoop(true);
      return;
    }
    for (const a of this.pending.splice(0)) {
      this.emit({ kind: 'UserRejectObservation', tool_name: a.tool_name, tool_call_id: a.tool_call_id, rejection_reason: reason, rejection_source: 'user', action_id: a.id });
    }
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
          // Calls left without an answer would make every later LLM request invalid: each gets one.
          for (const a of this.unanswered()) this.emit({ kind: 'AgentErrorEvent', tool_name: a.tool_name, tool_call_id: a.tool_call_id, error: `Not run: the run loop failed (${e.message})` });
          this.pending = [];
          this.emit({ kind: 'ConversationErrorEvent', source: 'environment', code: e.name || 'Error', detail: e.message });
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
    const stop = (await this.hooks('Stop', { conversation_id: this.id })).find((h) => h.blocked);
    if (stop && this.iterations < this.settings.max_iterations) {
      // A Stop hook that blocks sends the agent back to work with its reason.
      this.emit({ kind: 'MessageEvent', source: 'hook', sender: 'Stop hook', llm_message: { role: 'user', content: [text(stop.reason ?? 'Continue.')] } });
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
    const completion = await this.ask(toMessages(buildView(this.events)), AGENT_TOOL_DEFINITIONS);
    if (!completion) return 'interrupted';
    this.iterations++;
    if (completion.tool_calls.length === 0) {
      this.emit({
        kind: 'MessageEvent',
        source: 'agent',
        llm_message: { role: 'assistant', content: [text(completion.content ?? '')] },
        llm_response_id: completion.id,
      });
      return 'finished';
    }
    const actions: ActionEvent[] = [];
    const errors: { call: (typeof completion.tool_calls)[number]; error: string }[] = [];
    // Every call of the response first, then the errors of the bad ones: the LLM's protocol wants all the
    // calls of one answer in one assistant message, before any tool result.
    completion.tool_calls.forEach((call, i) => {
      const tool = toolByName(call.function.name);
      let error: string | null = null;
      let args: Record<string, unknown> = {};
      if (!tool) error = `Unknown tool ${JSON.stringify(call.function.name)}. Available tools: ${AGENT_TOOLS.map((t) => t.name).join(', ')}.`;
      else {
        try {
          const parsed = tool.params.safeParse(JSON.parse(call.function.arguments || '{}'));
          if (parsed.success) args = parsed.data;
          else error = `Invalid arguments for ${tool.name}: ${parsed.error.issues.map((is) => `${is.path.join('.') || '(arguments)'}: ${is.message}`).join('; ')}`;
        } catch (e) {
          error = `The arguments of ${call.function.name} are not valid JSON: ${(e as Error).message}`;
        }
      }
      const action = this.emit({
        kind: 'ActionEvent',
        thought: i === 0 && completion.content ? [text(completion.content)] : [],
        reasoning_content: i === 0 ? completion.reasoning_content : null,
        action: tool && !error ? { kind: tool.actionKind, ...args } : null,
        tool_name: call.function.name,
        tool_call_id: call.id,
        tool_call: { id: call.id, name: call.function.name, arguments: call.function.arguments, origin: 'completion' },
        llm_response_id: completion.id,
      }) as ActionEvent;
      if (error) errors.push({ call, error });
      else actions.push(action);
    });
    for (const { call, error } of errors) this.emit({ kind: 'AgentErrorEvent', tool_name: call.function.name, tool_call_id: call.id, error });
    if (actions.length === 0) return 'continue';
    if (this.settings.confirmation_mode) {
      this.pending = actions;
      return 'waiting';
    }
    return this.execute(actions);
  }

  /** The LLM call of a step, cancelled by an interrupt (then null). */
  private async ask(messages: ReturnType<typeof toMessages>, tools: object[]): Promise<Completion | null> {
    const llm = this.settings.agent.llm;
    const abort = (this.stepAbort = new AbortController());
    try {
      const completion = await complete(llm, messages, tools, {
        signal: abort.signal,
        onDelta: llm.stream ? (d) => this.emitTransient({ kind: 'StreamingDeltaEvent', content: d.content, reasoning_content: d.reasoning_content }) : undefined,
      });
      if (completion.prompt_token_ids && completion.response_token_ids) {
        this.emit({ kind: 'TokenEvent', source: 'agent', prompt_token_ids: completion.prompt_token_ids, response_token_ids: completion.response_token_ids });
      }
      if (llm.log_completions) {
        this.emit({
          kind: 'LLMCompletionLogEvent',
          filename: `${llm.model.replace(/[^A-Za-z0-9._-]+/g, '__')}-${Date.now()}-${completion.id}.json`,
          log_data: completionLog(completion),
          model_name: llm.model,
          usage_id: llm.usage_id,
        });
      }
      return completion;
    } catch (e) {
      if (abort.signal.aborted) return null;
      throw e;
    } finally {
      this.stepAbort = null;
    }
  }

  /** Runs accepted actions in order: PreToolUse hooks (which may block), the tool, PostToolUse hooks. */
  private async execute(actions: ActionEvent[]): Promise<'continue' | 'finished' | 'interrupted'> {
    let finished = false;
    const abort = (this.stepAbort = new AbortController());
    const interrupted = (a: ActionEvent) =>
      this.emit({ kind: 'UserRejectObservation', tool_name: a.tool_name, tool_call_id: a.tool_call_id, rejection_reason: 'The step was interrupted before this action ran', rejection_source: 'user', action_id: a.id });
    for (const a of actions) {
      if (abort.signal.aborted) {
        interrupted(a);
        continue;
      }
      const tool = toolByName(a.tool_name)!;
      const { kind: _kind, ...args } = a.action as Record<string, unknown>;
      const pre = await this.hooks('PreToolUse', { conversation_id: this.id, tool_name: a.tool_name, tool_input: args }, a, abort.signal);
      const blocked = pre.find((h) => h.blocked);
      if (blocked) {
        this.emit({ kind: 'UserRejectObservation', tool_name: a.tool_name, tool_call_id: a.tool_call_id, rejection_reason: blocked.reason ?? 'Blocked by a PreToolUse hook', rejection_source: 'hook', action_id: a.id });
        continue;
      }
      if (abort.signal.aborted) {
        interrupted(a); // during the hooks
        continue;
      }
      // A tool that throws (a path through a file, no permission) observes the error; the agent goes on.
      const result = await tool.run(args, this.toolContext(abort.signal)).catch((e: Error) => ({ text: `The ${a.tool_name} tool failed: ${e.message}`, isError: true, fields: undefined, finish: false }));
      const observation = this.mask({ kind: tool.observationKind, content: [text(result.text)], is_error: result.isError, ...result.fields }) as Record<string, unknown>;
      this.emit({ kind: 'ObservationEvent', tool_name: a.tool_name, tool_call_id: a.tool_call_id, observation, action_id: a.id });
      await this.hooks('PostToolUse', { conversation_id: this.id, tool_name: a.tool_name, tool_input: args, tool_response: observation }, a, abort.signal);
      finished ||= Boolean(result.finish);
    }
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
    const completion = await this.ask(
      [
        { role: 'system', content: SUMMARY_INSTRUCTIONS },
        { role: 'user', content: plan.material },
      ],
      [],
    );
    if (!completion) return false;
    const summary = completion.content ?? '';
    this.emit({ kind: 'Condensation', forgotten_event_ids: plan.forgotten, summary, summary_offset: plan.summaryOffset, llm_response_id: completion.id });
    this.emit({ kind: 'CondensationSummaryEvent', summary });
    this.condenseRequested = false;
    return true;
  }

  // ---- events ----

  private emit(partial: NewEvent): Event {
    const event = EventSchema.parse(fitEvent({ id: randomUUID(), timestamp: new Date().toISOString(), parent_id: this.events.at(-1)?.id ?? null, ...partial }));
    this.deps.outbox.append(event);
    this.events.push(event);
    this.updatedAt = event.timestamp;
    return event;
  }

  private emitTransient(partial: NewEvent): void {
    this.deps.outbox.sendTransient(EventSchema.parse({ id: randomUUID(), timestamp: new Date().toISOString(), ...partial }));
  }

  private setStatus(status: ExecutionStatus): void {
    if (status === this.status && this.events.some((e) => e.kind === 'ConversationStateUpdateEvent')) return;
    this.status = status;
    this.emit({ kind: 'ConversationStateUpdateEvent', key: 'execution_status', value: status });
  }

  /** Runs the hooks of a moment; what they report is masked like any tool output. */
  private async hooks(type: HookEventType, input: Record<string, unknown>, action?: ActionEvent, signal?: AbortSignal) {
    const runs = (await runHooks(this.settings.hooks, type, input, { cwd: this.deps.workspace, env: this.env(), toolName: action?.tool_name ?? null, signal })).map((r) => this.mask(r));
    for (const r of runs) this.emit({ kind: 'HookExecutionEvent', ...r, action_id: action?.id ?? null });
    return runs;
  }

  // ---- the tools' world ----

  private env(): NodeJS.ProcessEnv {
    return { ...this.deps.baseEnv, ...this.settings.secrets };
  }

  private toolContext(signal: AbortSignal): ToolContext {
    return { workspace: this.deps.workspace, env: this.env(), maxOutputBytes: this.deps.maxOutputBytes, signal, tasks: this.tasks };
  }

  /** Secret values never reach the LLM or the event log: every string of `value` has them masked. */
  private mask<T>(value: T): T {
    // The conversation's secrets and its LLM key (readable in the sandbox, so it may show up in output).
    const secrets = [...Object.values(this.settings.secrets), this.settings.agent.llm.api_key ?? ''].filter((s) => s.length >= 4);
    if (secrets.length === 0) return value;
    const walk = (v: unknown): unknown => {
      if (typeof v === 'string') return secrets.reduce((s, secret) => s.split(secret).join(SECRET_MASK), v);
      if (Array.isArray(v)) return v.map(walk);
      if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, walk(x)]));
      return v;
    };
    return walk(value) as T;
  }
}

/**
 * The log_data of an LLMCompletionLogEvent: the exchange as JSON. The request holds the whole history, so
 * when it would not fit an event its messages are left out (the log stays valid JSON).
 */
function completionLog(c: Completion): string {
  const timestamp = Date.now() / 1000;
  const whole = JSON.stringify({ request: c.request, response: c.response, timestamp });
  if (whole.length < MAX_EVENT_BYTES / 2) return whole;
  const { messages, ...request } = c.request as { messages?: unknown[] };
  return JSON.stringify({ request: { ...request, messages_left_out: messages?.length ?? 0 }, response: c.response, timestamp });
}

/** Where a conversation keeps its settings beside its outbox. */
export const SETTINGS_FILE = 'conversation.json';

export function writeSettings(dir: string, stored: { id: string; created_at: string; settings: CreateConversation }): void {
  fs.mkdirSync(dir, { recursive: true });
  const file = path.join(dir, SETTINGS_FILE);
  fs.writeFileSync(`${file}.tmp`, JSON.stringify(stored), { mode: 0o600 });
  fs.renameSync(`${file}.tmp`, file);
}
