/** Query and path parameters of the event log endpoints (SPEC 4.1). */
import { z } from 'zod';
import { pageIdParam } from './page-cursor';
import { canonicalConversationId, dateTimeQuery, pageLimit, uuidString } from './common';
import { EVENT_KINDS } from './events';

export const EVENTS_LISTING = 'events';
const NORMALIZED_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/;

export const ConversationPathSchema = z.object({
  conversation_id: z
    .string()
    .regex(/^[A-Za-z0-9._-]{1,200}$/, { error: 'a conversation id: 1-200 letters, digits, ".", "_" or "-"' })
    .meta({ description: 'The conversation.' }),
});

/** A runtime's webhook path: the conversation as runtimes spell it (32 hex digits: the same UUID). */
export const WebhookConversationPathSchema = z.object({
  conversation_id: ConversationPathSchema.shape.conversation_id.transform(canonicalConversationId),
});

/**
 * What the OpenHands agent server posts to `{base}/conversations` when a conversation changes
 * (ConversationInfo). Acknowledged, not stored: its execution status and figures reach the control plane
 * in order as ConversationStateUpdateEvents, which the ingest keeps.
 */
export const ConversationInfoSchema = z.looseObject({ id: uuidString() }).meta({ id: 'ConversationInfo' });

export const WebhookAckSchema = z.object({ success: z.boolean() }).meta({ id: 'WebhookAck' });

export const EventFilterQuerySchema = z.object({
  kind__eq: z.enum(EVENT_KINDS).optional().meta({ description: 'Keep only events of this kind.' }),
  timestamp__gte: dateTimeQuery('Keep events at or after this time.'),
  timestamp__lt: dateTimeQuery('Keep events before this time.'),
});

export const EventSearchQuerySchema = EventFilterQuerySchema.extend({
  sort_order: z
    .enum(['TIMESTAMP', 'TIMESTAMP_DESC'])
    .default('TIMESTAMP')
    .meta({ description: 'Order by event time (ties in append order).' }),
  page_id: pageIdParam(EVENTS_LISTING, z.tuple([z.string().regex(NORMALIZED_TIME), z.number().int().positive()]))
    .optional()
    .meta({ type: 'string', description: 'The next_page_id of the previous page (an opaque cursor).' }),
  limit: pageLimit(),
});

export const EventBatchGetQuerySchema = z.object({
  id: z
    .array(z.string().min(1).max(200))
    .min(1)
    .max(100)
    .meta({ description: 'Event ids (1..100); repeat the parameter.' }),
});

export const IngestResultSchema = z
  .object({
    stored: z.number().int().meta({ description: 'Events written to the log by this call.' }),
    already_stored: z.number().int().meta({ description: 'Events the log held already (a retry): not written again.' }),
    published_only: z.number().int().meta({ description: 'StreamingDeltaEvents: published live, never stored.' }),
  })
  .meta({ id: 'EventIngestResult' });
