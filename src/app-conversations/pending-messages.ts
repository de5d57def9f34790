/**
 * Messages for a conversation that is still starting (POST /api/v1/conversations/{id}/pending-messages).
 * Each is stored (once per id), then its start-task workflow is signalled; once the start is READY the
 * workflow delivers every waiting message in the order they came, and a worker killed in between leaves
 * them waiting for the next attempt (the runtime adds a message id it has once). A start that ends in
 * ERROR marks them UNDELIVERED with the reason. A message for a conversation already READY goes to it
 * at once.
 */
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { randomUUID } from 'node:crypto';
import { Conflict, DomainError, NotFound, TooMany, Unavailable } from '../errors';
import type { PendingMessageRequest } from '../schemas/app-conversation-actions';
import type { AppConversationsStore } from '../store/app-conversations-store';
import type { MessageContent } from '../schemas/messages';
import type { PendingMessageRecord, PendingMessagesStore } from '../store/pending-messages-store';
import type { StartTasksStore } from '../store/start-tasks-store';
import { pendingMessagesSignal, startTaskWorkflowId } from '../temporal/shared';
import type { ConversationService } from './conversation-service';

/** Waiting messages a conversation may hold (the reference's limit). */
export const MAX_PENDING_MESSAGES = 10;

export interface PendingMessageServiceDeps {
  startTasks: StartTasksStore;
  pendingMessages: PendingMessagesStore;
  appConversations: AppConversationsStore;
  conversations: ConversationService;
  temporal: Client;
}

export interface QueuedAnswer {
  id: string;
  queued: boolean;
  position: number;
  conversation_id: string;
}

export class PendingMessageService {
  constructor(private readonly deps: PendingMessageServiceDeps) {}

  private async ownedTask(userId: string, conversationId: string) {
    const task = await this.deps.startTasks.get(conversationId);
    if (!task || task.created_by_user_id !== userId) throw new NotFound('Conversation not found');
    return task;
  }

  async queue(userId: string, conversationId: string, req: PendingMessageRequest): Promise<QueuedAnswer> {
    const task = await this.ownedTask(userId, conversationId);
    const id = req.id ?? randomUUID();
    if (task.status === 'ERROR')
      throw new Conflict(
        `The start of conversation ${conversationId} failed (${task.detail ?? 'no detail'}); the message was not queued`,
      );
    const waiting = await this.deps.pendingMessages.queuedIds(conversationId);
    if (!waiting.includes(id) && waiting.length >= MAX_PENDING_MESSAGES) {
      throw new TooMany(
        `Conversation ${conversationId} already has ${MAX_PENDING_MESSAGES} messages waiting for its start`,
      );
    }
    await this.deps.pendingMessages.add({
      id,
      conversation_id: conversationId,
      created_by_user_id: userId,
      role: req.role,
      content: req.content,
    });
    if (task.status === 'READY') {
      // Through the one ordered path: a message never overtakes one queued before it.
      await this.deliverQueued(userId, conversationId);
    } else {
      await this.wakeStart(userId, conversationId);
    }
    const position = await this.deps.pendingMessages.position(conversationId, id);
    return { id, queued: position > 0, position, conversation_id: conversationId };
  }

  /**
   * Tells the start there is something to deliver. A start whose workflow has ended is past READY or
   * ERROR: then the delivery (or the giving up) happens here. A workflow that is not there yet (its
   * record is written first) delivers what waits when it gets to READY.
   */
  private async wakeStart(userId: string, conversationId: string): Promise<void> {
    try {
      await this.deps.temporal.workflow.getHandle(startTaskWorkflowId(conversationId)).signal(pendingMessagesSignal);
      return;
    } catch (e) {
      if (!(e instanceof WorkflowNotFoundError))
        throw new Unavailable(
          'The workflow service did not take the message; it is stored: send it again (same id) to have it delivered',
          5,
          { cause: e },
        );
    }
    const task = await this.deps.startTasks.get(conversationId);
    if (task?.status === 'READY') await this.deliverQueued(userId, conversationId);
    else if (task?.status === 'ERROR')
      await this.giveUp(conversationId, `the start failed: ${task.detail ?? 'no detail'}`);
  }

  /** The conversation's pending messages, waiting or not, in the order they came (without their content). */
  async list(userId: string, conversationId: string): Promise<Omit<PendingMessageRecord, 'content'>[]> {
    await this.ownedTask(userId, conversationId);
    return this.deps.pendingMessages.list(conversationId);
  }

  /**
   * Delivers every waiting message, in order, one read at a time; answers how many went. A message the
   * agent cannot run on now (it waits for a confirmation) is added without running it; one the runtime
   * refuses for good (blocked by a hook) is UNDELIVERED with why, and the rest go on; a runtime out of
   * reach stops the delivery, which the next attempt (the workflow's retry, the client sending again)
   * takes up where it stopped.
   */
  async deliverQueued(userId: string, conversationId: string): Promise<number> {
    const waiting = await this.deps.pendingMessages.queuedIds(conversationId);
    if (waiting.length === 0) return 0;
    const c = await this.deps.conversations.owned(userId, conversationId);
    let delivered = 0;
    for (const id of waiting) {
      const m = await this.deps.pendingMessages.get(conversationId, id);
      if (m?.status !== 'QUEUED') continue;
      const message = { role: 'user' as const, content: m.content as MessageContent, id };
      try {
        await this.deps.conversations.deliver(userId, c, { ...message, run: true }).catch((e: unknown) => {
          if (!(e instanceof Conflict)) throw e;
          return this.deps.conversations.deliver(userId, c, { ...message, run: false });
        });
      } catch (e) {
        if (e instanceof DomainError && !e.transient) {
          await this.deps.pendingMessages.mark(conversationId, id, 'UNDELIVERED', e.message);
          continue;
        }
        throw e;
      }
      await this.deps.pendingMessages.mark(conversationId, id, 'DELIVERED');
      delivered++;
    }
    return delivered;
  }

  /** Marks what still waits UNDELIVERED (the start failed); answers how many. */
  giveUp(conversationId: string, detail: string): Promise<number> {
    return this.deps.pendingMessages.giveUp(conversationId, detail);
  }
}
