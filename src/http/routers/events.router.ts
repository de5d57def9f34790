import { callerId } from '../state';
import { z } from 'zod';
import { EventSchema, EventPageSchema } from '../../schemas/events';
import {
  ConversationPathSchema,
  EVENTS_LISTING,
  EventBatchGetQuerySchema,
  EventFilterQuerySchema,
  EventSearchQuerySchema,
} from '../../schemas/event-queries';
import type { ConversationsStore } from '../../store/conversations-store';
import type { EventFilter } from '../../store/events-collection';
import type { EventsStore } from '../../store/events-store';
import { HttpError, notFound } from '../../web/errors';
import { encodeCursor } from '../../schemas/page-cursor';
import { type ApiRouter, type RouteContext, errorResponse } from '../../web/route';

const NOT_FOUND = errorResponse('No such conversation of the caller');

/** /api/v1/conversation/{conversation_id}/events: search, count and get the conversation's log. */
export function eventsRoutes(
  router: ApiRouter,
  deps: { events: EventsStore; conversations: ConversationsStore },
): ApiRouter {
  /** The caller's conversation's log layout (how to read it); 404 for anyone else's. */
  const owned = async (ctx: RouteContext, conversationId: string) => {
    const conversation = await deps.conversations.getOwned(conversationId, callerId(ctx));
    if (!conversation) throw notFound('Conversation not found');
    return conversation.layout;
  };
  const filterOf = (conversationId: string, q: z.output<typeof EventFilterQuerySchema>): EventFilter => ({
    conversationId,
    kind: q.kind__eq,
    timestampGte: q.timestamp__gte,
    timestampLt: q.timestamp__lt,
  });

  return router
    .route(
      {
        method: 'get',
        path: '/:conversation_id/events/search',
        operationId: 'searchEvents',
        summary: 'Search the events of a conversation',
        description:
          'Ordered by event time, ties in append order. `page_id` is an opaque cursor over (timestamp, seq): ' +
          'pages never repeat or skip an event while the conversation grows, and every page costs the same.',
        security: 'APIKeyHeader',
        params: ConversationPathSchema,
        query: EventSearchQuerySchema,
        responses: { 200: { description: 'A page of events', schema: EventPageSchema }, 404: NOT_FOUND },
      },
      async (ctx, { params, query }) => {
        const layout = await owned(ctx, params.conversation_id);
        const page = await deps.events.search(
          filterOf(params.conversation_id, query),
          { descending: query.sort_order === 'TIMESTAMP_DESC', limit: query.limit, after: query.page_id },
          layout,
        );
        const next = page.last && encodeCursor(EVENTS_LISTING, page.last);
        // The stored text of each event goes out as it is: no parse, no re-serialisation.
        ctx.type = 'application/json';
        ctx.body = `{"items":[${page.jsons.join(',')}],"next_page_id":${JSON.stringify(next)}}`;
      },
    )
    .route(
      {
        method: 'get',
        path: '/:conversation_id/events/count',
        operationId: 'countEvents',
        summary: 'Count the events of a conversation that match the filters',
        security: 'APIKeyHeader',
        params: ConversationPathSchema,
        query: EventFilterQuerySchema,
        responses: { 200: { description: 'The number of matching events', schema: z.number().int() }, 404: NOT_FOUND },
      },
      async (ctx, { params, query }) => {
        const layout = await owned(ctx, params.conversation_id);
        ctx.body = await deps.events.count(filterOf(params.conversation_id, query), layout);
      },
    )
    .route(
      {
        method: 'get',
        path: '/:conversation_id/events',
        operationId: 'batchGetEvents',
        summary: 'Get events by id, in the order asked; null for an id the log does not hold',
        security: 'APIKeyHeader',
        params: ConversationPathSchema,
        query: EventBatchGetQuerySchema,
        responses: {
          // Not EventSchema.nullable(): the generator writes that as the bare $ref, which null does not satisfy.
          200: { description: 'One entry per id', schema: z.array(z.union([EventSchema, z.null()])) },
          404: NOT_FOUND,
        },
      },
      async (ctx, { params, query }) => {
        await owned(ctx, params.conversation_id);
        const found = await deps.events.getByIds(params.conversation_id, query.id);
        ctx.type = 'application/json';
        ctx.body = `[${query.id.map((id) => found.get(id) ?? 'null').join(',')}]`;
      },
    )
    .route(
      {
        method: 'get',
        path: '/:conversation_id/events/socket',
        operationId: 'subscribeEvents',
        summary: 'Live events of a conversation over a WebSocket',
        description:
          'Open a WebSocket here (ws:// or wss://). Authenticate with the X-Access-Token header, or send ' +
          '{"type":"auth","access_token":"..."} as the first frame within 10 s. Each message is one event as JSON. ' +
          'With after_id, every stored event after that one comes first, then live events; with resend_all=true ' +
          'the whole log comes first; with neither, only live events (with the key in the header, every event stored ' +
          'after the socket opened). Every stored event arrives exactly once, in ' +
          'append order; StreamingDeltaEvents arrive as they are published. Close codes: 4001 bad credential, ' +
          '4004 unknown or foreign conversation, 4000 bad parameters, 1013 subscriber too slow (it did not read).',
        security: 'APIKeyHeader',
        params: ConversationPathSchema,
        query: z.object({
          after_id: z.string().optional().meta({ description: 'Send the stored events after this event id first.' }),
          resend_all: z.enum(['true', 'false']).optional().meta({ description: 'Send the whole stored log first.' }),
        }),
        responses: {
          101: { description: 'Switching to the WebSocket protocol' },
          426: errorResponse('A plain HTTP request: open a WebSocket instead'),
        },
      },
      () => {
        throw new HttpError(426, 'Upgrade Required: open a WebSocket on this URL', { Upgrade: 'websocket' });
      },
    );
}
