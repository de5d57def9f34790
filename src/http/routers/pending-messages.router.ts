/**
 * /api/v1/conversations/{conversation_id}/pending-messages: messages for a conversation that is still
 * starting, delivered in order once it is READY (at once when it is READY already). Listing them shows
 * what went and what did not (a start that failed leaves them UNDELIVERED with why).
 */
import { z } from 'zod';
import type { PendingMessageService } from '../../app-conversations/pending-messages';
import {
  ConversationPathSchema,
  PendingMessageRequestSchema,
  PendingMessageResponseSchema,
  PendingMessageSchema,
} from '../../schemas/app-conversation-actions';
import { errorResponse, type ApiRouter } from '../../web/route';
import { callerId } from '../state';

export function pendingMessagesRoutes(router: ApiRouter, deps: { pendingMessages: PendingMessageService }): ApiRouter {
  const service = deps.pendingMessages;
  return router
    .route(
      {
        method: 'post',
        path: '/:conversation_id/pending-messages',
        operationId: 'queuePendingMessage',
        summary: 'Queue a message for a conversation that is starting; it is delivered once the conversation is READY',
        description:
          'The conversation id is the start task id. Messages go to the agent in the order they came, each once: send an `id` to make a ' +
          'retry safe. At most 10 wait per conversation (429). A conversation already READY gets the message at once (queued: false).',
        security: 'APIKeyHeader',
        params: ConversationPathSchema,
        body: PendingMessageRequestSchema,
        responses: {
          201: { description: 'Queued (or delivered at once)', schema: PendingMessageResponseSchema },
          404: errorResponse('No such start of the caller'),
          409: errorResponse('The start failed; nothing was queued'),
          429: errorResponse('Ten messages wait already'),
          503: errorResponse('The workflow service or the sandbox did not answer; a queued message stays queued'),
        },
      },
      async (ctx, { params, body }) => {
        ctx.body = await service.queue(callerId(ctx), params.conversation_id, body);
        ctx.status = 201;
      },
    )
    .route(
      {
        method: 'get',
        path: '/:conversation_id/pending-messages',
        operationId: 'listPendingMessages',
        summary: "The conversation's queued messages and what became of each (QUEUED, DELIVERED, UNDELIVERED with why)",
        security: 'APIKeyHeader',
        params: ConversationPathSchema,
        responses: {
          200: { description: 'In the order they came', schema: z.array(PendingMessageSchema) },
          404: errorResponse('No such start of the caller'),
        },
      },
      async (ctx, { params }) => {
        const list = await service.list(callerId(ctx), params.conversation_id);
        ctx.body = list.map(({ created_by_user_id: _owner, ...m }) => ({
          ...m,
          created_at: m.created_at.toISOString(),
          updated_at: m.updated_at.toISOString(),
        }));
      },
    );
}
