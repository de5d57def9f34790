/**
 * The event log: one `events` collection keyed by conversation. Each event is kept as its validated
 * JSON text (served as is, never parsed again) beside the fields queries need. `timestamp` here is the
 * normalized UTC key of src/events/event-time.ts; `seq` numbers a conversation's events 1, 2, 3, ...
 * in append order, so (timestamp, seq) orders the log totally.
 */
import type { Db, Filter, FindCursor } from 'mongodb';
import type { EventKind, EventSource } from '../schemas/events';
import { isDuplicateKey, withinBudget } from './errors';
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

/** The `_id` of an event: a single event is looked up by `_id`, the one query FerretDB's SQLite backend indexes. */
export const eventKey = (conversationId: string, eventId: string) => `${conversationId}/${eventId}`;

/**
 * Events per insert command. FerretDB 1.24 runs an insert in batches of 100 documents (its default
 * `--batch-size`) and, in an ordered insert, goes on with the next batch after a duplicate key: the new
 * events of a partly stored batch past its first 100 would be stored after a hole in the seqs (seen with
 * a resent batch of 2,000 plus 10 new events). An insert of at most one such batch stops where it should.
 */
const APPEND_CHUNK = 100;

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

/**
 * Bytes of event text one page may hold, besides its count limit: a page of large events (a runtime may
 * send events of megabytes) is cut short, so no answer or catch-up step holds the log in memory.
 * A page always has at least one event.
 */
const PAGE_BYTES = 8 * 1024 * 1024;
const RANGE_BYTES = 4 * 1024 * 1024;
const TAKE_BATCH = 8;

/**
 * Reads a cursor's documents until `limit` of them or `maxBytes` of `json` text; `more` tells whether the
 * cursor had more. Fetched TAKE_BATCH at a time, so a call holds at most about `maxBytes` plus one batch
 * (TAKE_BATCH events of at most MAX_BODY_BYTES each), never the whole page's worth of large events.
 */
async function takeWithin<T extends { json: string }>(cursor: FindCursor<T>, limit: number, maxBytes: number): Promise<{ docs: T[]; more: boolean }> {
  const docs: T[] = [];
  let bytes = 0;
  cursor.batchSize(Math.min(limit + 1, TAKE_BATCH));
  try {
    while (docs.length < limit && (docs.length === 0 || bytes < maxBytes)) {
      const d = await cursor.next();
      if (!d) return { docs, more: false };
      docs.push(d);
      bytes += d.json.length;
    }
    return { docs, more: await cursor.hasNext() };
  } finally {
    await cursor.close();
  }
}

export interface EventsStoreOptions {
  /**
   * Time budget of each read of the log, sent as the server's `maxTimeMS`. A read that runs out of it
   * throws DatabaseBusyError (the api answers 503 with Retry-After) instead of holding the database.
   * @default 15000
   */
  queryTimeoutMs?: number;
}

export const defaultEventsStoreOptions = (): Required<EventsStoreOptions> => ({ queryTimeoutMs: 15_000 });

export class EventsStore {
  private readonly maxTimeMS: number;

  constructor(
    private readonly db: Db,
    options: EventsStoreOptions = {},
  ) {
    this.maxTimeMS = options.queryTimeoutMs ?? defaultEventsStoreOptions().queryTimeoutMs;
  }

  private get events() {
    return this.db.collection<StoredEvent>('events');
  }

  private read<T>(operation: string, run: (maxTimeMS: number) => Promise<T>): Promise<T> {
    return withinBudget(`events ${operation}`, this.maxTimeMS, () => run(this.maxTimeMS));
  }

  /**
   * The conversation's stored events among these ids: one query per batch, whatever its size (the
   * `conversation_event_id` index on MongoDB; on FerretDB one pass over the collection, not one per id).
   * The whole answer is asked for in the first batch (one more than can match: FerretDB keeps a cursor
   * open after a full batch), so the server's `maxTimeMS` bounds all of it (FerretDB's does not bound
   * the getMores that follow a find).
   */
  private byIds(operation: string, conversationId: string, ids: readonly string[], withJson: boolean) {
    const unique = [...new Set(ids)];
    const projection = withJson ? { _id: 0, id: 1, json: 1 } : { _id: 0, id: 1 };
    return this.read(operation, (maxTimeMS) =>
      this.events
        .find({ conversation_id: conversationId, id: { $in: unique } }, { projection, maxTimeMS, batchSize: unique.length + 1 })
        .toArray(),
    );
  }

  /** Removes the conversation's whole log (deleting a conversation). */
  async deleteConversation(conversationId: string): Promise<number> {
    return (await this.events.deleteMany({ conversation_id: conversationId })).deletedCount;
  }

  /** Which of these event ids the conversation's log already holds (one query). */
  async existingIds(conversationId: string, ids: readonly string[]): Promise<Set<string>> {
    if (ids.length === 0) return new Set();
    const found = await this.byIds('existingIds', conversationId, ids, false);
    return new Set(found.map((d) => d.id));
  }

  /** The highest seq in the conversation's log, 0 when empty (a scan on FerretDB: recovery only). */
  async lastSeqInLog(conversationId: string): Promise<number> {
    const [last] = await this.read('lastSeqInLog', (maxTimeMS) =>
      this.events
        .find({ conversation_id: conversationId }, { projection: { _id: 0, seq: 1 }, maxTimeMS })
        .sort({ seq: -1 })
        .limit(1)
        .toArray(),
    );
    return last?.seq ?? 0;
  }

  /**
   * Appends in seq order and stops at the first document that hits a unique index, so the log keeps a
   * contiguous prefix and never a hole. Ordered inserts of at most APPEND_CHUNK documents, one after
   * the other (see there why).
   */
  async append(docs: readonly StoredEvent[]): Promise<AppendResult> {
    let inserted = 0;
    for (let from = 0; from < docs.length; from += APPEND_CHUNK) {
      const r = await this.appendChunk(docs.slice(from, from + APPEND_CHUNK));
      inserted += r.inserted;
      if (r.conflictAt !== undefined) return { inserted, conflictAt: from + r.conflictAt };
    }
    return { inserted };
  }

  private async appendChunk(docs: readonly StoredEvent[]): Promise<AppendResult> {
    try {
      await this.events.insertMany(docs.map((d) => ({ ...d })), { ordered: true });
      return { inserted: docs.length };
    } catch (e) {
      const err = e as { insertedCount?: number; writeErrors?: { index: number }[] | { index: number } };
      const first = Array.isArray(err.writeErrors) ? err.writeErrors[0] : err.writeErrors;
      if (!isDuplicateKey(e)) throw e;
      const at = first?.index ?? err.insertedCount ?? 0;
      if ((err.insertedCount ?? at) > at) {
        // The server went on past the conflict: documents after it are stored with seqs beyond a hole.
        throw new Error(
          `an ordered insert of ${docs.length} events stopped at #${at} but stored ${err.insertedCount}: the server inserts in batches smaller than ${APPEND_CHUNK} (FerretDB --batch-size)`,
          { cause: e },
        );
      }
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
    const { docs, more } = await this.read('search', (maxTimeMS) =>
      takeWithin(
        this.events.find(filter, { projection: { _id: 0, timestamp: 1, seq: 1, json: 1 }, maxTimeMS }).sort({ timestamp: dir, seq: dir }).limit(opts.limit + 1),
        opts.limit,
        PAGE_BYTES,
      ),
    );
    const tail = docs[docs.length - 1];
    return { jsons: docs.map((d) => d.json), last: more && tail ? [tail.timestamp, tail.seq] : null };
  }

  async count(f: EventFilter): Promise<number> {
    return this.read('count', (maxTimeMS) => this.events.countDocuments(baseFilter(f), { maxTimeMS }));
  }

  /** The stored text of each id the log holds, by id (one query). */
  async getByIds(conversationId: string, ids: readonly string[]): Promise<Map<string, string>> {
    if (ids.length === 0) return new Map();
    const docs = await this.byIds('getByIds', conversationId, ids, true);
    return new Map(docs.map((d) => [d.id, d.json]));
  }

  async seqOf(conversationId: string, id: string): Promise<number | null> {
    const d = await this.read('seqOf', (maxTimeMS) =>
      this.events.findOne({ _id: eventKey(conversationId, id) }, { projection: { _id: 0, seq: 1 }, maxTimeMS }),
    );
    return d?.seq ?? null;
  }

  /** Events with afterSeq < seq <= untilSeq (when given), in seq order, at most `limit`. */
  async range(conversationId: string, afterSeq: number, limit: number, untilSeq?: number): Promise<{ seq: number; json: string }[]> {
    const seq = untilSeq === undefined ? { $gt: afterSeq } : { $gt: afterSeq, $lte: untilSeq };
    const { docs } = await this.read('range', (maxTimeMS) =>
      takeWithin(this.events.find({ conversation_id: conversationId, seq }, { projection: { _id: 0, seq: 1, json: 1 }, maxTimeMS }).sort({ seq: 1 }).limit(limit), limit, RANGE_BYTES),
    );
    return docs;
  }

  /**
   * The conversation's whole log in seq order, read a page at a time (one `range` query on the
   * `conversation_seq` index per page of at most `pageSize` events or RANGE_BYTES of text, its cursor
   * closed before the page is handed on); the next page is read while this one is consumed, so at most
   * two pages are held, never the log. A consumer that stops iterating (break, return, a thrown error)
   * stops the reads after the page being read; no cursor stays open between pages.
   */
  async *inSeqOrder(conversationId: string, pageSize = 500): AsyncGenerator<{ seq: number; json: string }, void, undefined> {
    const read = (after: number) => {
      const p = this.range(conversationId, after, pageSize);
      void p.catch(() => undefined); // a read ahead that nobody awaits (the consumer stopped) fails quietly
      return p;
    };
    let next = read(0);
    for (;;) {
      const page = await next;
      if (page.length === 0) return;
      next = read(page[page.length - 1]!.seq);
      yield* page;
    }
  }
}
