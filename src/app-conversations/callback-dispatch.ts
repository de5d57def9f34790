/**
 * After ingest stores events of a conversation that has callback processors, its callbacks workflow is
 * signalled (and started when it does not run). Fire and forget, with a few retries: ingest never waits
 * for it, and a lost signal costs only delay, because each round processes everything stored since the
 * last one.
 */
import type { Client } from '@temporalio/client';
import type { Logger } from '../logger';
import type { AppConversationsStore } from '../store/app-conversations-store';
import {
  callbacksEventsSignal,
  callbacksWorkflowId,
  WORKFLOW_TYPES,
  workflowSummaries,
  type CallbacksWorkflow,
  type CallbacksWorkflowInput,
} from '../temporal/shared';
import { setTimeout as sleep } from 'node:timers/promises';

/** How long "this conversation has no processors" is believed (an app conversation may be recorded later). */
const NEGATIVE_TTL_MS = 30_000;
const MAX_REMEMBERED = 10_000;

export interface CallbackDispatchDeps {
  temporal: Client;
  taskQueue: string;
  appConversations: AppConversationsStore;
  log: Logger;
  /** A callbacks workflow with nothing new for this long ends (CALLBACKS_IDLE_MS); the next event starts it again. */
  idleMs: number;
}

export class CallbackDispatch {
  /** Conversation id -> its owner when it has processors, or until when "no processors" holds. */
  private readonly known = new Map<string, { owner: string } | { until: number }>();

  constructor(private readonly deps: CallbackDispatchDeps) {}

  notify(conversationId: string): void {
    void this.signal(conversationId).catch((e: Error) =>
      this.deps.log.warn({ conversation_id: conversationId, err: e.message }, 'callbacks could not be signalled'),
    );
  }

  /** The owner of a conversation that has callback processors; undefined when it has none. */
  private async ownerWithProcessors(conversationId: string): Promise<string | undefined> {
    const known = this.known.get(conversationId);
    if (known && 'owner' in known) return known.owner;
    if (known && known.until > Date.now()) return undefined;
    const app = await this.deps.appConversations.get(conversationId);
    const owner = app && app.processors.length > 0 ? app.created_by_user_id : undefined;
    if (this.known.size >= MAX_REMEMBERED) this.known.clear();
    this.known.set(conversationId, owner !== undefined ? { owner } : { until: Date.now() + NEGATIVE_TTL_MS });
    return owner;
  }

  private async signal(conversationId: string): Promise<void> {
    const ownerUserId = await this.ownerWithProcessors(conversationId);
    if (ownerUserId === undefined) return;
    const input: CallbacksWorkflowInput = { conversationId, ownerUserId, idleMs: this.deps.idleMs };
    for (let attempt = 1; ; attempt++) {
      try {
        await this.deps.temporal.workflow.signalWithStart<CallbacksWorkflow, []>(WORKFLOW_TYPES.callbacks, {
          workflowId: callbacksWorkflowId(conversationId),
          taskQueue: this.deps.taskQueue,
          args: [input],
          signal: callbacksEventsSignal,
          signalArgs: [],
          ...workflowSummaries.callbacks(input),
        });
        return;
      } catch (e) {
        if (attempt >= 3) throw e;
        await sleep(200 * attempt);
      }
    }
  }
}
