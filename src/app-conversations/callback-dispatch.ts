/**
 * After ingest stores events of a conversation that has callback processors, its callbacks workflow is
 * signalled (and started when it does not run). Fire and forget, with a few retries: ingest never waits
 * for it, and a lost signal costs only delay, because each round processes everything stored since the
 * last one.
 */
import type { Client } from '@temporalio/client';
import type { Logger } from '../logger';
import type { AppConversationsStore } from '../store/app-conversations-store';
import { callbacksEventsSignal, callbacksWorkflowId, WORKFLOW_TYPES, workflowSummaries, type CallbacksWorkflow, type CallbacksWorkflowInput } from '../temporal/shared';

/** How long "this conversation has no processors" is believed (an app conversation may be recorded later). */
const NEGATIVE_TTL_MS = 30_000;
const MAX_REMEMBERED = 10_000;

export class CallbackDispatch {
  /** Conversation id -> until when "no processors" holds (0: it has processors). */
  private readonly known = new Map<string, number>();

  constructor(private readonly deps: { temporal: Client; taskQueue: string; appConversations: AppConversationsStore; log: Logger }) {}

  notify(conversationId: string): void {
    void this.signal(conversationId).catch((e: Error) => this.deps.log.warn({ conversation_id: conversationId, err: e.message }, 'callbacks could not be signalled'));
  }

  private async hasProcessors(conversationId: string): Promise<boolean> {
    const until = this.known.get(conversationId);
    if (until === 0) return true;
    if (until !== undefined && until > Date.now()) return false;
    const app = await this.deps.appConversations.get(conversationId);
    const has = (app?.processors.length ?? 0) > 0;
    if (this.known.size >= MAX_REMEMBERED) this.known.clear();
    this.known.set(conversationId, has ? 0 : Date.now() + NEGATIVE_TTL_MS);
    return has;
  }

  private async signal(conversationId: string): Promise<void> {
    if (!(await this.hasProcessors(conversationId))) return;
    const input: CallbacksWorkflowInput = { conversationId };
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
        await new Promise((r) => setTimeout(r, 200 * attempt));
      }
    }
  }
}
