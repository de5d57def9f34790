/**
 * What a conversation has recorded: its ordered events (each written to the outbox before anything else
 * sees it), its status, and the state its events give back after a runtime restart. The agent loop
 * (conversation-loop.ts) and what clients do (conversation.ts) build on it.
 */
import { randomUUID } from 'node:crypto';
import { EventSchema, type Event } from '../../schemas/events';
import { ActionRunner } from './action-runner';
import type { ActionEvent, NewEvent } from './conversation-events';
import { emptyMetrics, lastMetrics, type MetricsSnapshot } from './conversation-metrics';
import { replay, restartReport } from './conversation-replay';
import type { CreateConversation, ExecutionStatus } from './conversation-schemas';
import { fitEvent } from './event-size';
import type { EventOutbox } from './outbox';
import type { TaskItem } from './tools/tool';

export interface ConversationDeps {
  outbox: EventOutbox;
  /** Absolute workspace directory of this conversation. */
  workspace: string;
  /** The command environment without the conversation's secrets. */
  baseEnv: NodeJS.ProcessEnv;
  maxOutputBytes: number;
  log: (msg: string, fields?: object) => void;
}

export abstract class ConversationRecord {
  protected readonly events: Event[] = [];
  protected status: ExecutionStatus = 'idle';
  protected pending: ActionEvent[] = [];
  protected tasks: TaskItem[] = [];
  protected activatedSkills = new Set<string>();
  /** A client asked for a condensation (CondensationRequest); the next step condenses. */
  protected condenseRequested = false;
  protected updatedAt: string;
  protected readonly runner: ActionRunner;
  protected metrics: MetricsSnapshot;
  /** The kind of every recorded event by its id: a message id already held is not added again. */
  protected readonly eventKinds = new Map<string, string>();
  /** Deleted: nothing more is written, the loop stops at its next step. */
  protected discarded = false;

  constructor(
    readonly id: string,
    readonly settings: CreateConversation,
    readonly createdAt: string,
    protected readonly deps: ConversationDeps,
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

  // ---- events ----

  protected emit(partial: NewEvent): Event {
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

  protected emitTransient(partial: NewEvent): void {
    if (this.discarded) return;
    this.deps.outbox.sendTransient(
      EventSchema.parse({ id: randomUUID(), timestamp: new Date().toISOString(), ...partial }),
    );
  }

  protected setStatus(status: ExecutionStatus): void {
    if (status === this.status && this.events.some((e) => e.kind === 'ConversationStateUpdateEvent')) return;
    this.status = status;
    this.emit({ kind: 'ConversationStateUpdateEvent', key: 'execution_status', value: status });
  }
}
