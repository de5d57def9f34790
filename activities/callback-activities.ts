/**
 * The callbacks workflow's activities (SPEC 2.4): the range of events a conversation's processors have
 * not seen, and one processor's run on it. What each kind does is in callback-processors/, one file per
 * kind; a kind this version does not know does nothing. Every run is recorded per processor and range,
 * with its failure when the target failed; a side effect done once (a comment posted) is never repeated.
 */
import { Context } from '@temporalio/activity';
import type { Event } from '../src/schemas/events';
import type { ConversationsStore } from '../src/store/conversations-store';
import type { CallbackRange } from '../src/temporal/shared';
import { processorFor, type CallbackProcessorDeps } from './callback-processors';

/** How often a processor's round tells Temporal it is alive (its heartbeatTimeout is 10 s). */
const HEARTBEAT_MS = 2000;

export interface CallbackActivityDeps extends CallbackProcessorDeps {
  conversations: ConversationsStore;
}

export function createCallbackActivities(deps: CallbackActivityDeps) {
  const { appConversations, callbacks } = deps;

  return {
    /** The events not processed yet, and how many processors the conversation has. */
    async callbackRange(conversationId: string): Promise<CallbackRange> {
      const [app, fromSeq, toSeq] = await Promise.all([
        appConversations.get(conversationId),
        callbacks.processedSeq(conversationId),
        deps.conversations.lastSeq(conversationId),
      ]);
      return { fromSeq, toSeq, processors: app?.processors.length ?? 0 };
    },

    async markCallbacksProcessed(conversationId: string, seq: number): Promise<void> {
      await callbacks.markProcessed(conversationId, seq);
    },

    /** Runs processor `index` on the events with fromSeq < seq <= toSeq; records what it did or why it failed. */
    async runCallback(conversationId: string, index: number, fromSeq: number, toSeq: number): Promise<void> {
      const app = await appConversations.get(conversationId);
      const processor = app?.processors[index];
      if (!app || !processor) return;
      const kind = String(processor.kind);
      const base = { conversation_id: conversationId, processor_index: index, kind, from_seq: fromSeq, to_seq: toSeq };
      const context = Context.current();
      const attempt = context.info.attempt;
      const beat = setInterval(() => context.heartbeat(), HEARTBEAT_MS);
      try {
        const events = (await deps.events.range(conversationId, fromSeq, 100_000, toSeq)).map(
          (r) => JSON.parse(r.json) as Event,
        );
        const run = {
          conversationId,
          app,
          index,
          processor,
          events,
          log: context.log,
          signal: context.cancellationSignal,
        };
        const actions = (await processorFor(kind)?.process(run, deps)) ?? [];
        // Only what was done is kept (a round that asked for nothing leaves no record: no unbounded growth).
        if (actions.length > 0)
          await callbacks.record({ ...base, status: 'ok', actions, detail: null, attempts: attempt });
      } catch (e) {
        // An attempt Temporal gave up records nothing: the next one may have done the work meanwhile.
        if (!context.cancellationSignal.aborted)
          await callbacks.record({
            ...base,
            status: 'failed',
            actions: [],
            detail: (e as Error).message,
            attempts: attempt,
          });
        throw e;
      } finally {
        clearInterval(beat);
      }
    },
  };
}
