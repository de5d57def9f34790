/**
 * What acts on started conversations, built over the stores and the sandboxes' service: messages (now or
 * queued), run control, rename, delete, workspace views.
 */
import type { Client } from '@temporalio/client';
import { ConversationService } from '../app-conversations/conversation-service';
import { ConversationViews } from '../app-conversations/conversation-views';
import { PendingMessageService } from '../app-conversations/pending-messages';
import type { SecretBox } from '../auth/secret-box';
import type { StartSettingsResolver } from '../orgs/start-settings';
import type { SandboxService } from '../sandboxes/sandbox-service';
import type { Stores } from './stores';

/** What acts on started conversations: messages (now or queued), run control, rename, delete, workspace views. */
export interface ConversationServices {
  conversationService: ConversationService;
  pendingMessages: PendingMessageService;
  conversationViews: ConversationViews;
}

export function createConversationServices(
  stores: Stores,
  deps: {
    box: SecretBox;
    temporal: Client;
    sandboxService: SandboxService;
    sandboxWaitMs: number;
    startSettings?: StartSettingsResolver;
  },
): ConversationServices {
  const conversationService = new ConversationService({
    ...stores,
    startSettings: deps.startSettings,
    sandboxService: deps.sandboxService,
    box: deps.box,
    temporal: deps.temporal,
    // A message waits at most a minute for a sandbox to come back; a runtime call at most 30 s.
    settings: { runtimeCallTimeoutMs: 30_000, sandboxWaitMs: Math.min(deps.sandboxWaitMs, 60_000) },
  });
  return {
    conversationService,
    pendingMessages: new PendingMessageService({
      ...stores,
      conversations: conversationService,
      temporal: deps.temporal,
    }),
    conversationViews: new ConversationViews({ ...stores, box: deps.box }),
  };
}
