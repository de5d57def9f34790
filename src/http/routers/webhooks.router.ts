import type { ApiMetrics } from '../../observability/metrics';
import type { CallbackDispatch } from '../../app-conversations/callback-dispatch';
import type { EventIngest } from '../../events/ingest';
import type { SandboxService } from '../../sandboxes/sandbox-service';
import { EventBatchSchema } from '../../schemas/events';
import { ConversationPathSchema, IngestResultSchema } from '../../schemas/event-queries';
import { ErrorResponseSchema } from '../../schemas/errors';
import type { ApiRouter } from '../../web/route';

/** /api/v1/webhooks: what runtimes in sandboxes report, with their session key. */
export function webhooksRoutes(
  router: ApiRouter,
  ingest: EventIngest,
  sandboxes: Pick<SandboxService, 'touchConversation'>,
  callbacks: Pick<CallbackDispatch, 'notify'>,
  metrics?: Pick<ApiMetrics, 'ingestBatches' | 'ingestEvents'>,
): ApiRouter {
  return router.route(
    {
      method: 'post',
      path: '/events/:conversation_id',
      operationId: 'ingestEvents',
      summary: "Append a batch of events to a conversation's log",
      description:
        'All or nothing: one invalid event rejects the batch (422, its loc names the event), and nothing is stored. ' +
        'Idempotent on event id: a retried batch stores nothing twice. StreamingDeltaEvents are published live and never stored.',
      security: 'SessionAPIKeyHeader',
      params: ConversationPathSchema,
      body: EventBatchSchema,
      // An event is stored as its JSON text, where U+0000 is the escape \u0000; its id is checked by the schema.
      bodyMayHoldNul: true,
      responses: {
        200: { description: 'What the batch added', schema: IngestResultSchema },
        409: { description: 'The batch would pass the per-conversation cap; nothing was stored', schema: ErrorResponseSchema },
        503: { description: 'Another batch of the conversation is being stored; retry', schema: ErrorResponseSchema },
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
