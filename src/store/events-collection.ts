/**
 * The `events` collection's shape: the stored document and its indexes, an event's key, and the filter,
 * cursor and (timestamp, seq) order that queries of the log use.
 */
import type { EventKind, EventSource } from '../schemas/events';
import type { CollectionIndexes } from './mongo';

export interface StoredEvent {
  /** `<conversation_id>/<event id>` (conversation ids hold no '/'): the unique event key. */
  _id: string;
  conversation_id: string;
  id: string;
  kind: EventKind;
  source: EventSource;
  timestamp: string;
  seq: number;
  /** `<conversation_id>/<block>` (src/store/event-blocks.ts); absent on events stored before the block layout. */
  block?: string;
  json: string;
}

export const eventsIndexes: CollectionIndexes = {
  collection: 'events',
  indexes: [
    { key: { conversation_id: 1, id: 1 }, name: 'conversation_event_id', unique: true },
    { key: { conversation_id: 1, seq: 1 }, name: 'conversation_seq', unique: true },
    { key: { conversation_id: 1, timestamp: 1, seq: 1 }, name: 'conversation_time' },
    { key: { conversation_id: 1, kind: 1, timestamp: 1, seq: 1 }, name: 'conversation_kind_time' },
    // Block reads (src/store/event-blocks.ts): `block` leads, so FerretDB on PostgreSQL gets a GIN index on it.
    { key: { block: 1, seq: 1 }, name: 'block_seq' },
  ],
};

/** The `_id` of an event: a single event is looked up by `_id`, the one query FerretDB's SQLite backend indexes. */
export const eventKey = (conversationId: string, eventId: string) => `${conversationId}/${eventId}`;

export interface EventFilter {
  conversationId: string;
  kind?: EventKind;
  timestampGte?: string;
  timestampLt?: string;
}

export type EventCursor = readonly [timestamp: string, seq: number];

/** What a page of a search asks for: its direction, its size, and the cursor it follows. */
export interface SearchOptions {
  descending: boolean;
  limit: number;
  after?: EventCursor;
}

/** The (timestamp, seq) order of the log: whether `a` comes before `b`. */
export const precedes = (a: { timestamp: string; seq: number }, b: { timestamp: string; seq: number }): boolean =>
  a.timestamp < b.timestamp || (a.timestamp === b.timestamp && a.seq < b.seq);
