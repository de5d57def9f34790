/**
 * Delivering the messages queued while a conversation started (after READY), or recording that they
 * never will be (after ERROR). The delivery is safe to repeat: each message goes with its id, which the
 * runtime adds once.
 */
import type { PendingMessageService } from '../src/app-conversations/pending-messages';

export interface PendingMessageActivityDeps {
  pendingMessages: PendingMessageService;
}

export function createPendingMessageActivities(deps: PendingMessageActivityDeps) {
  return {
    /** Delivers the waiting messages in order; answers how many went. */
    async deliverPendingMessages(input: { userId: string; conversationId: string }): Promise<number> {
      return deps.pendingMessages.deliverQueued(input.userId, input.conversationId);
    },

    /** Marks the waiting messages UNDELIVERED with the reason; answers how many. */
    async givePendingMessagesUp(input: { conversationId: string; detail: string }): Promise<number> {
      return deps.pendingMessages.giveUp(input.conversationId, input.detail);
    },
  };
}
