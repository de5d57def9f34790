/**
 * GET /api/v1/app-conversations/{conversation_id}/download: the conversation's metadata and whole event
 * log as a zip, streamed as the log is read (src/app-conversations/conversation-export.ts).
 */
import { z } from 'zod';
import { conversationZip, exportFileName } from '../../app-conversations/conversation-export';
import { ConversationPathSchema } from '../../schemas/app-conversation-actions';
import type { AppConversationRecord, AppConversationsStore } from '../../store/app-conversations-store';
import type { EventLayout } from '../../store/event-blocks';
import type { EventsStore } from '../../store/events-store';
import { notFound } from '../../web/errors';
import { type ApiRouter, errorResponse } from '../../web/route';
import { callerId } from '../state';

/** Events per read of the log while a zip is written. */
const EXPORT_PAGE_SIZE = 500;

export interface AppConversationExportDeps {
  appConversations: Pick<AppConversationsStore, 'get'>;
  events: Pick<EventsStore, 'inSeqOrder'>;
  /** How the conversation's log is laid out (src/store/event-blocks.ts): read in blocks when it is. */
  layout: (conversationId: string) => Promise<EventLayout | null>;
  /** What meta.json holds: the conversation as GET /api/v1/app-conversations shows it. */
  view: (record: AppConversationRecord) => Promise<unknown>;
}

export function appConversationExportRoutes(router: ApiRouter, deps: AppConversationExportDeps): ApiRouter {
  return router.route(
    {
      method: 'get',
      path: '/:conversation_id/download',
      operationId: 'downloadAppConversation',
      summary: 'Download the conversation: its metadata and every event, as a zip',
      description:
        'A zip streamed as the log is read: `meta.json` (the conversation as GET /api/v1/app-conversations shows it) and one entry per ' +
        'stored event in append order, `events/00000001.json`, `events/00000002.json`, ..., each holding the event exactly as stored.',
      security: 'APIKeyHeader',
      params: ConversationPathSchema,
      responses: {
        200: {
          description: 'The zip (Content-Disposition: attachment; filename="conversation_<id>.zip")',
          schema: z.string().meta({ format: 'binary' }),
          contentType: 'application/zip',
        },
        404: errorResponse('No such conversation of the caller'),
      },
    },
    async (ctx, { params }) => {
      const id = params.conversation_id;
      // Ownership first: nothing of the log is read for a conversation that is not the caller's.
      const record = await deps.appConversations.get(id);
      if (!record || record.created_by_user_id !== callerId(ctx)) throw notFound('Conversation not found');
      const blocks = (await deps.layout(id))?.blocks ?? false;
      const zip = conversationZip({
        meta: await deps.view(record),
        events: deps.events.inSeqOrder(id, EXPORT_PAGE_SIZE, blocks),
      });
      ctx.status = 200;
      ctx.set('Content-Disposition', `attachment; filename="${exportFileName(id)}"`);
      ctx.set('Cache-Control', 'no-store');
      ctx.body = zip;
      ctx.type = 'application/zip';
    },
  );
}
