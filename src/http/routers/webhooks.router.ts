import type { ApiMetrics } from '../../observability/metrics';
import type { CallbackDispatch } from '../../app-conversations/callback-dispatch';
import { droppedAnything, fitEvents, fitNestedFields, noneDropped, type Dropped } from '../../events/fit-events';
import type { EventIngest } from '../../events/ingest';
import type { SandboxService } from '../../sandboxes/sandbox-service';
import { EventBatchSchema } from '../../schemas/events';
import {
  ConversationInfoSchema,
  IngestResultSchema,
  WebhookAckSchema,
  WebhookConversationPathSchema,
} from '../../schemas/event-queries';
import type { ConversationsStore } from '../../store/conversations-store';
import { unauthorized } from '../../web/errors';
import { type ApiRouter, type RouteContext, errorResponse } from '../../web/route';
import { SESSION_KEY_HEADER } from '../../web/security';

/** /api/v1/webhooks: what runtimes in sandboxes report, with their session key. */
export function webhooksRoutes(
  router: ApiRouter,
  ingest: EventIngest,
  sandboxes: Pick<SandboxService, 'touchConversation'>,
  callbacks: Pick<CallbackDispatch, 'notify'>,
  conversations: Pick<ConversationsStore, 'sessionKeyMatches'>,
  metrics?: Pick<ApiMetrics, 'ingestBatches' | 'ingestEvents' | 'ingestDropped'>,
): ApiRouter {
  /** What the fitting took out, counted and logged (a sample of names, bounded). */
  const reportDropped = (ctx: RouteContext, dropped: Dropped) => {
    if (!droppedAnything(dropped)) return;
    const events = [...dropped.kinds.values()].reduce((a, b) => a + b, 0);
    const fields = [...dropped.fields.values()].reduce((a, b) => a + b, 0);
    if (events) metrics?.ingestDropped.inc({ what: 'event' }, events);
    if (fields) metrics?.ingestDropped.inc({ what: 'field' }, fields);
    const sample = [...dropped.kinds.keys(), ...dropped.fields.keys()].slice(0, 20);
    ctx.state.log?.info(
      { conversation_id: ctx.params.conversation_id, events, fields, sample },
      'dropped what the event schemas do not know',
    );
  };
  return router
    .route(
      {
        method: 'post',
        path: '/conversations',
        operationId: 'conversationInfo',
        summary: "A runtime's conversation info (the OpenHands agent server's webhook); acknowledged",
        description:
          'The conversation named by `id` must be one the session key reports for. Nothing is stored: its execution status and figures arrive in order as ConversationStateUpdateEvents.',
        security: 'SessionAPIKeyHeader',
        body: ConversationInfoSchema,
        responses: { 200: { description: 'Taken', schema: WebhookAckSchema } },
      },
      async (ctx, { body }) => {
        if (!(await conversations.sessionKeyMatches(body.id, ctx.get(SESSION_KEY_HEADER))))
          throw unauthorized(`${SESSION_KEY_HEADER} does not authorize this conversation`);
        sandboxes.touchConversation(body.id);
        ctx.body = { success: true };
      },
    )
    .route(
      {
        method: 'post',
        path: '/events/:conversation_id',
        operationId: 'ingestEvents',
        summary: "Append a batch of events to a conversation's log",
        description:
          'All or nothing: one invalid event rejects the batch (422, its loc names the event), and nothing is stored. ' +
          'Idempotent on event id: a retried batch stores nothing twice. StreamingDeltaEvents and full_state snapshots (a ConversationStateUpdateEvent with key full_state) are published live and never stored. ' +
          'What a newer runtime adds is dropped, not refused: an event of an unknown kind, a field an event has beyond its schema.',
        security: 'SessionAPIKeyHeader',
        params: WebhookConversationPathSchema,
        body: EventBatchSchema,
        // An event is stored as its JSON text, where U+0000 is the escape \u0000; its id is checked by the schema.
        bodyMayHoldNul: true,
        prepareBody: (raw, ctx) => {
          const { batch, dropped } = fitEvents(raw);
          reportDropped(ctx, dropped);
          return batch;
        },
        refitBody: (batch, issues, ctx) => {
          const dropped = noneDropped();
          const refitted = fitNestedFields(batch, issues, dropped);
          reportDropped(ctx, dropped);
          return refitted;
        },
        responses: {
          200: { description: 'What the batch added', schema: IngestResultSchema },
          409: errorResponse('The batch would pass the per-conversation cap; nothing was stored'),
          503: errorResponse('Another batch of the conversation is being stored; retry'),
        },
      },
      async (ctx, { params, body }) => {
        const result = await ingest.ingest(params.conversation_id, body);
        ctx.body = result;
        metrics?.ingestBatches.inc();
        metrics?.ingestEvents.inc(result.stored);
        sandboxes.touchConversation(params.conversation_id); // events are use: no idle auto-pause
        if (result.stored > 0) callbacks.notify(params.conversation_id); // its processors run in the callbacks workflow
      },
    );
}
