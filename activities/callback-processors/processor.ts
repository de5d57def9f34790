/**
 * The one interface every callback processor implements (SPEC 2.4; one file per kind beside this one,
 * registered by kind in index.ts). The callbacks workflow runs each processor of a conversation on each
 * new range of its events, through the runCallback activity, which records what the processor did.
 */
import type { Logger } from '@temporalio/common';
import type { ConversationService } from '../../src/app-conversations/conversation-service';
import type { SecretBox } from '../../src/auth/secret-box';
import type { Config } from '../../src/config';
import type { StartSettingsResolver } from '../../src/orgs/start-settings';
import type { CallbackProcessorKind } from '../../src/schemas/app-conversations';
import type { Event } from '../../src/schemas/events';
import type { AppConversationRecord, AppConversationsStore } from '../../src/store/app-conversations-store';
import type { CallbacksStore } from '../../src/store/callbacks-store';
import type { EventsStore } from '../../src/store/events-store';
import type { StartTasksStore } from '../../src/store/start-tasks-store';

/** What the processors reach beyond the events of their round. */
export interface CallbackProcessorDeps {
  appConversations: AppConversationsStore;
  events: EventsStore;
  callbacks: CallbacksStore;
  startTasks: StartTasksStore;
  settings: StartSettingsResolver;
  box: SecretBox;
  /** Asks a conversation's agent (the summary a processor posts). */
  agents: Pick<ConversationService, 'askAgent'>;
  /** REST API of git host A (GIT_HOST_A_API_URL). */
  gitHostAApiUrl: string;
  /** Where the other processors post (GIT_HOST_B_API_URL, ...). */
  hosts: Config['callbackHosts'];
}

/** One round of one processor. */
export interface CallbackRun {
  conversationId: string;
  app: AppConversationRecord;
  /** The processor's position in `app.processors`: what its records are kept under. */
  index: number;
  /** The processor as registered, fields as sent. */
  processor: Record<string, unknown>;
  /** The events of this round, oldest first. */
  events: Event[];
  log: Logger;
  /** Aborted when Temporal gives the attempt up (a heartbeat it did not get, a cancellation). */
  signal?: AbortSignal;
}

export interface CallbackProcessorImpl<K extends CallbackProcessorKind = CallbackProcessorKind> {
  readonly kind: K;
  /**
   * Does what the processor is for with the round's events, and says what it did (kept as the round's
   * record; nothing done, no record). Safe to repeat: a failed round is retried whole.
   */
  process(run: CallbackRun, deps: CallbackProcessorDeps): Promise<string[]>;
}

/** The text parts of a message's content. */
export const textOf = (content: unknown): string =>
  Array.isArray(content) ? content.map((c: { text?: string }) => c.text ?? '').join('\n') : '';
