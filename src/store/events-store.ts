/**
 * The event log: one `events` collection keyed by conversation. Each event is kept as its validated
 * JSON text (served as is, never parsed again) beside the fields queries need. `timestamp` here is the
 * normalized UTC key of src/events/event-time.ts; `seq` numbers a conversation's events 1, 2, 3, ...
 * in append order, so (timestamp, seq) orders the log totally.
 */
import type { Db, Filter } from 'mongodb';
import type { EventKind, EventSource } from '../schemas/events';
import type { CollectionIndexes } from './mongo';

export interface StoredEvent {
  /** `<conversation_id>/<event id>` (conversation ids hold no '/'): the unique event key, looked up by `_id`. */
  _id: string;
  conversation_id: string;
  id: string;
  kind: EventKind;
  source: EventSource;
  timestamp: string;
  seq: number;
  json: string;
}

export const eventsIndexes: CollectionIndexes = {
  collection: 'events',
  indexes: [
    { key: { conversation_id: 1, id: 1 }, name: 'conversation_event_id', unique: true },
    { key: { conversation_id: 1, seq: 1 }, name: 'conversation_seq', unique: true },
    { key: { conversation_id: 1, timestamp: 1, seq: 1 }, name: 'conversation_time' },
    { key: { conversation_id: 1, kind: 1, timestamp: 1, seq: 1 }, name: 'conversation_kind_time' },
  ],
};

export interface EventFilter {
  conversationId: string;
  kind?: EventKind;
  timestampGte?: string;
  timestampLt?: string;
}

export type EventCursor = readonly [timestamp: string, seq: number];

/** The `_id` of an event: point lookups by `_id` are the one query FerretDB's SQLite backend indexes. */
export const eventKey = (conversationId: string, eventId: string) => `${conversationId}/${eventId}`;

export interface AppendResult {
  inserted: number;
  /** Index of the document that hit a unique index (its event id or its seq exists); the rest were not tried. */
  conflictAt?: number;
}

function baseFilter(f: EventFilter): Filter<StoredEvent> {
  const filter: Filter<StoredEvent> = { conversation_id: f.conversationId };
  if (f.kind) filter.kind = f.kind;
  if (f.timestampGte !== undefined || f.timestampLt !== undefined) {
    filter.timestamp = {
      ...(f.timestampGte !== undefined ? { $gte: f.timestampGte } : {}),
      ...(f.timestampLt !== undefined ? { $lt: f.timestampLt } : {}),
    };
  }
  return filter;
}

export class EventsStore {
  constructor(private readonly db: Db) {}

  private get events() {
    return this.db.collection<StoredEvent>('events');
  }

  /** Which of these event ids the conversation's log already holds (one `_id` lookup each, in parallel). */
  async existingIds(conversationId: string, ids: readonly string[]): Promise<Set<string>> {
    const found = await Promise.all(
      ids.map((id) => this.events.findOne({ _id: eventKey(conversationId, id) }, { projection: { _id: 1 } })),
    );
    return new Set(ids.filter((_, i) => found[i] !== null));
  }

  /** The highest seq in the conversation's log, 0 when empty (a scan on FerretDB: recovery only). */
  async lastSeqInLog(conversationId: string): Promise<number> {
    const [last] = await this.events
      .find({ conversation_id: conversationId }, { projection: { _id: 0, seq: 1 } })
      .sort({ seq: -1 })
      .limit(1)
      .toArray();
    return last?.seq ?? 0;
  }

  /**
   * Appends in seq order and stops at the first document that hits a unique index, so the log keeps a
   * contiguous prefix and never a hole.
   */
  async append(docs: readonly StoredEvent[]): Promise<AppendResult> {
    if (docs.length === 0) return { inserted: 0 };
    try {
      await this.events.insertMany(docs.map((d) => ({ ...d })), { ordered: true });
      return { inserted: docs.length };
    } catch (e) {
      const err = e as { code?: number; insertedCount?: number; writeErrors?: { index: number; code: number }[] | { index: number; code: number } };
      const first = Array.isArray(err.writeErrors) ? err.writeErrors[0] : err.writeErrors;
      if ((first?.code ?? err.code) !== 11000) throw e;
      const at = first?.index ?? err.insertedCount ?? 0;
      return { inserted: at, conflictAt: at };
    }
  }

  /** One page in (timestamp, seq) order after `after`; `last` is the cursor for the next page, if any. */
  async search(
    f: EventFilter,
    opts: { descending: boolean; limit: number; after?: EventCursor },
  ): Promise<{ jsons: string[]; last: EventCursor | null }> {
    const filter = baseFilter(f);
    if (opts.after) {
      const [ts, seq] = opts.after;
      const beyond = opts.descending ? '$lt' : '$gt';
      filter.$or = [
        { timestamp: { [beyond]: ts } },
        { timestamp: ts, seq: { [beyond]: seq } },
      ];
    }
    const dir = opts.descending ? -1 : 1;
    const docs = await this.events
      .find(filter, { projection: { _id: 0, timestamp: 1, seq: 1, json: 1 } })
      .sort({ timestamp: dir, seq: dir })
      .limit(opts.limit + 1)
      .toArray();
    const page = docs.slice(0, opts.limit);
    const tail = page[page.length - 1];
    return { jsons: page.map((d) => d.json), last: docs.length > opts.limit && tail ? [tail.timestamp, tail.seq] : null };
  }

  async count(f: EventFilter): Promise<number> {
    return this.events.countDocuments(baseFilter(f));
  }

  /** The stored text of each id, by id (`_id` lookups). */
  async getByIds(conversationId: string, ids: readonly string[]): Promise<Map<string, string>> {
    const docs = await Promise.all(
      [...new Set(ids)].map((id) => this.events.findOne({ _id: eventKey(conversationId, id) }, { projection: { _id: 0, id: 1, json: 1 } })),
    );
    return new Map(docs.filter((d) => d !== null).map((d) => [d.id, d.json]));
  }

  async seqOf(conversationId: string, id: string): Promise<number | null> {
    const d = await this.events.findOne({ _id: eventKey(conversationId, id) }, { projection: { _id: 0, seq: 1 } });
    return d?.seq ?? null;
  }

  /** Events with afterSeq < seq <= untilSeq (when given), in seq order, at most `limit`. */
  async range(conversationId: string, afterSeq: number, limit: number, untilSeq?: number): Promise<{ seq: number; json: string }[]> {
    const seq = untilSeq === undefined ? { $gt: afterSeq } : { $gt: afterSeq, $lte: untilSeq };
    return this.events
      .find({ conversation_id: conversationId, seq }, { projection: { _id: 0, seq: 1, json: 1 } })
      .sort({ seq: 1 })
      .limit(limit)
      .toArray();
  }
}
