/**
 * The event log: one `events` collection keyed by conversation. Each event is kept as its validated
 * JSON text (served as is, never parsed again) beside the fields queries need. `timestamp` here is the
 * normalized UTC key of src/events/event-time.ts; `seq` numbers a conversation's events 1, 2, 3, ...
 * in append order, so (timestamp, seq) orders the log totally.
 */
import type { Db, Filter, FindCursor } from 'mongodb';
import type { EventKind, EventSource } from '../schemas/events';
import { DatabaseBusyError, isDuplicateKey, withinBudget } from './errors';
import { BLOCK_SIZE, blockKey, blockOf, firstSeqOf, lastSeqOf, LEGACY_LAYOUT, type EventLayout } from './event-blocks';
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

/** Updates in flight while a migration gives a log's events their blocks. */
const ADD_BLOCKS_CONCURRENCY = 8;

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
interface Taken<T> {
  docs: T[];
  more: boolean;
}

type PageDoc = Pick<StoredEvent, 'timestamp' | 'seq' | 'json'>;
const PAGE_PROJECTION = { _id: 0, timestamp: 1, seq: 1, json: 1 } as const;

async function takeWithin<T extends { json: string }>(cursor: FindCursor<T>, limit: number, maxBytes: number): Promise<Taken<T>> {
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

  /**
   * Gives every event of the conversation that has none its block (a log stored before the block
   * layout), and tells what the walk learnt: whether timestamps ever go back in seq order, and the highest.
   * One pass over the conversation (no sort), then updates by `_id` in batches. The caller holds the
   * ingest lease: nothing is appended meanwhile.
   */
  async addBlocks(conversationId: string, onProgress?: () => void): Promise<{ updated: number; ordered: boolean; lastTimestamp: string | null }> {
    const times: string[] = [];
    const missing: { _id: string; block: string }[] = [];
    const cursor = this.events.find({ conversation_id: conversationId }, { projection: { _id: 1, seq: 1, timestamp: 1, block: 1 }, batchSize: 1000 });
    for await (const d of cursor) {
      times[d.seq - 1] = d.timestamp;
      const block = blockKey(conversationId, blockOf(d.seq));
      if (d.block !== block) missing.push({ _id: d._id, block });
    }
    let ordered = true;
    let highest: string | null = null;
    for (const t of times) {
      if (t === undefined) continue;
      if (highest !== null && t < highest) ordered = false;
      else highest = t;
    }
    // One updateOne per event, a few at a time. Measured on FerretDB 1.24 on PostgreSQL: an update by
    // `_id` answers in about 2 ms, while one update command of 50 such statements (a bulkWrite) ran past
    // the driver's socket timeout (FerretDB/FerretDB#5549 reports the same slowness of bulk updates).
    let next = 0;
    const worker = async () => {
      for (let i = next++; i < missing.length; i = next++) {
        await this.events.updateOne({ _id: missing[i]!._id }, { $set: { block: missing[i]!.block } });
        if (i % 500 === 499) onProgress?.();
      }
    };
    await Promise.all(Array.from({ length: Math.min(ADD_BLOCKS_CONCURRENCY, missing.length) }, worker));
    return { updated: missing.length, ordered, lastTimestamp: highest };
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

  /**
   * The last event of a log in blocks, looking from `afterSeq` on (where the recorded end says it is):
   * the blocks after it, seqs and times only, until one that is not full. What a writer reads when the
   * recorded end fell behind, at the cost of the events stored past it, not of the conversation.
   */
  async endAfter(conversationId: string, afterSeq: number): Promise<{ seq: number; timestamp: string | null }> {
    let end: { seq: number; timestamp: string | null } = { seq: afterSeq, timestamp: null };
    for (let b = blockOf(afterSeq + 1); ; b++) {
      const docs = await this.read('endAfter', (maxTimeMS) =>
        this.events
          .find({ block: blockKey(conversationId, b), seq: { $gt: end.seq } }, { projection: { _id: 0, seq: 1, timestamp: 1 }, maxTimeMS, batchSize: BLOCK_SIZE + 1 })
          .sort({ seq: 1 })
          .toArray(),
      );
      for (const d of docs) if (d.seq === end.seq + 1) end = { seq: d.seq, timestamp: d.timestamp };
      if (end.seq !== lastSeqOf(b)) return end;
    }
  }

  /** The last event in the conversation's log, seq 0 when empty (a scan on FerretDB: recovery only). */
  async lastInLog(conversationId: string): Promise<{ seq: number; timestamp: string | null }> {
    const [last] = await this.read('lastInLog', (maxTimeMS) =>
      this.events
        .find({ conversation_id: conversationId }, { projection: { _id: 0, seq: 1, timestamp: 1 }, maxTimeMS })
        .sort({ seq: -1 })
        .limit(1)
        .toArray(),
    );
    return { seq: last?.seq ?? 0, timestamp: last?.timestamp ?? null };
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

  /**
   * One page in (timestamp, seq) order after `after`; `last` is the cursor for the next page, if any.
   * An ordered log in blocks is read block by block (seq order is then (timestamp, seq) order); any other
   * log with one query that sorts the conversation.
   */
  async search(
    f: EventFilter,
    opts: { descending: boolean; limit: number; after?: EventCursor },
    layout: EventLayout = LEGACY_LAYOUT,
  ): Promise<{ jsons: string[]; last: EventCursor | null }> {
    const { docs, more } = layout.blocks && layout.ordered ? await this.searchBlocks(f, opts, layout) : await this.searchSorted(f, opts);
    const tail = docs[docs.length - 1];
    return { jsons: docs.map((d) => d.json), last: more && tail ? [tail.timestamp, tail.seq] : null };
  }

  private async searchSorted(f: EventFilter, opts: { descending: boolean; limit: number; after?: EventCursor }): Promise<Taken<PageDoc>> {
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
    return this.read('search', (maxTimeMS) =>
      takeWithin(
        this.events.find(filter, { projection: PAGE_PROJECTION, maxTimeMS }).sort({ timestamp: dir, seq: dir }).limit(opts.limit + 1),
        opts.limit,
        PAGE_BYTES,
      ),
    );
  }

  /** The seq window [lo, hi] of an ordered log that the time bounds and the cursor leave. */
  private async window(f: EventFilter, after: EventCursor | undefined, descending: boolean, lastSeq: number): Promise<{ lo: number; hi: number }> {
    let lo = 1;
    let hi = lastSeq;
    if (after) {
      if (descending) hi = Math.min(hi, after[1] - 1);
      else lo = Math.max(lo, after[1] + 1);
    }
    // In an ordered log a time bound is a seq bound; a cursor already past it (its time says so) needs no search.
    const gte = f.timestampGte;
    if (gte !== undefined && !(after && !descending && after[0] >= gte)) lo = Math.max(lo, await this.firstSeqFrom(f.conversationId, gte, lastSeq));
    const lt = f.timestampLt;
    if (lt !== undefined && !(after && descending && after[0] < lt)) hi = Math.min(hi, (await this.firstSeqFrom(f.conversationId, lt, lastSeq)) - 1);
    return { lo, hi };
  }

  private async searchBlocks(f: EventFilter, opts: { descending: boolean; limit: number; after?: EventCursor }, layout: EventLayout): Promise<Taken<PageDoc>> {
    const { lo, hi } = await this.window(f, opts.after, opts.descending, layout.lastSeq);
    if (lo > hi) return { docs: [], more: false };
    if (f.kind === undefined) return this.readSpan('search', f.conversationId, { lo, hi, descending: opts.descending, limit: opts.limit, maxBytes: PAGE_BYTES });
    // Ascending without a time bound, events appended since the layout was read are read too.
    const open = !opts.descending && f.timestampLt === undefined;
    return this.walkBlocks('search', f.conversationId, {
      lo,
      hi: open ? Number.MAX_SAFE_INTEGER : hi,
      knownLast: hi,
      descending: opts.descending,
      kind: f.kind,
      limit: opts.limit,
      maxBytes: PAGE_BYTES,
    });
  }

  /**
   * Without a kind filter the seqs of a page are known before reading: from `lo` up (or `hi` down),
   * `limit` of them. The one or two blocks they lie in are read at once, each for its part of them, and
   * joined; a page cut short by `maxBytes` (at least one document) says so with `more`. Whether more
   * follow is known from the window (`hi`, `lo`), without reading the next block.
   */
  private async readSpan(
    operation: string,
    conversationId: string,
    o: { lo: number; hi: number; descending: boolean; limit: number; maxBytes: number },
  ): Promise<Taken<PageDoc>> {
    const from = o.descending ? Math.max(o.lo, o.hi - o.limit + 1) : o.lo;
    const to = o.descending ? o.hi : Math.min(o.hi, o.lo + o.limit - 1);
    const blocks: number[] = [];
    for (let b = blockOf(from); b <= blockOf(to); b++) blocks.push(b);
    if (o.descending) blocks.reverse();
    const dir = o.descending ? -1 : 1;
    const parts = await this.read(operation, (maxTimeMS) =>
      Promise.all(
        blocks.map((b) =>
          takeWithin(
            this.events
              .find({ block: blockKey(conversationId, b), seq: { $gte: Math.max(from, firstSeqOf(b)), $lte: Math.min(to, lastSeqOf(b)) } }, { projection: PAGE_PROJECTION, maxTimeMS })
              .sort({ seq: dir })
              .limit(o.limit),
            o.limit,
            o.maxBytes,
          ),
        ),
      ),
    );
    const docs: PageDoc[] = [];
    let bytes = 0;
    let cut = false;
    outer: for (const part of parts) {
      for (const d of part.docs) {
        if (docs.length > 0 && bytes >= o.maxBytes) {
          cut = true;
          break outer;
        }
        docs.push(d);
        bytes += d.json.length;
      }
      if (part.more) {
        cut = true; // this block's part was cut by its bytes: what follows is read by the next page
        break;
      }
    }
    const tail = docs[docs.length - 1];
    if (!tail) return { docs, more: false };
    const more = cut || (o.descending ? tail.seq > o.lo : tail.seq < o.hi);
    return { docs, more };
  }

  /**
   * Reads the blocks of [lo, hi] in seq order (reverse when descending), at most `limit` documents or
   * `maxBytes` of text (at least one document); `more` tells whether a further document was met.
   * Ascending, blocks past the one holding `knownLast` are read while they are full (events appended
   * since the caller's snapshot); with a kind filter fullness cannot be seen, so the walk stops there.
   * Each read has the time budget's rest; a walk that outlasts the budget throws DatabaseBusyError.
   */
  private async walkBlocks(
    operation: string,
    conversationId: string,
    o: { lo: number; hi: number; knownLast: number; descending: boolean; kind?: EventKind; limit: number; maxBytes: number },
  ): Promise<Taken<PageDoc>> {
    const docs: PageDoc[] = [];
    let bytes = 0;
    const deadline = Date.now() + this.maxTimeMS;
    const step = o.descending ? -1 : 1;
    const lastKnownBlock = blockOf(Math.max(1, o.knownLast));
    for (let b = blockOf(o.descending ? o.hi : o.lo); ; b += step) {
      const from = Math.max(o.lo, firstSeqOf(b));
      const to = Math.min(o.hi, lastSeqOf(b));
      if (b < 0 || from > to) return { docs, more: false };
      const left = deadline - Date.now();
      if (left <= 0) throw new DatabaseBusyError(`events ${operation}`, this.maxTimeMS);
      const filter: Filter<StoredEvent> = { block: blockKey(conversationId, b), seq: { $gte: from, $lte: to } };
      if (o.kind) filter.kind = o.kind;
      let lastRead = 0;
      const stop = await this.read(operation, async (maxTimeMS) => {
        const cursor = this.events
          .find(filter, { projection: PAGE_PROJECTION, maxTimeMS: Math.min(maxTimeMS, left) })
          .sort({ seq: step })
          .limit(o.limit + 1 - docs.length)
          .batchSize(Math.min(o.limit + 1 - docs.length, TAKE_BATCH));
        try {
          for (let d = await cursor.next(); d; d = await cursor.next()) {
            if (docs.length >= o.limit || (docs.length > 0 && bytes >= o.maxBytes)) return true;
            docs.push(d);
            bytes += d.json.length;
            lastRead = d.seq;
          }
          return false;
        } finally {
          await cursor.close();
        }
      });
      if (stop) return { docs, more: true };
      if (!o.descending && b >= lastKnownBlock && (o.kind !== undefined || lastRead !== lastSeqOf(b))) return { docs, more: false };
    }
  }

  /**
   * The first seq whose timestamp is at or after `ts` in an ordered log (lastSeq + 1 when none): a binary
   * search over the blocks' first events, then one read of the block found (seqs and times, no text).
   */
  private async firstSeqFrom(conversationId: string, ts: string, lastSeq: number): Promise<number> {
    if (lastSeq === 0) return 1;
    const firstTime = async (b: number) => {
      const [d] = await this.read('search', (maxTimeMS) =>
        this.events.find({ block: blockKey(conversationId, b) }, { projection: { _id: 0, timestamp: 1 }, maxTimeMS }).sort({ seq: 1 }).limit(1).toArray(),
      );
      return d?.timestamp;
    };
    // The last block whose first event is before `ts`; none: the log starts at or after it.
    let lo = 0;
    let hi = blockOf(lastSeq);
    let found = -1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      const t = await firstTime(mid);
      if (t !== undefined && t < ts) {
        found = mid;
        lo = mid + 1;
      } else hi = mid - 1;
    }
    if (found < 0) return 1;
    const times = await this.read('search', (maxTimeMS) =>
      this.events
        .find({ block: blockKey(conversationId, found) }, { projection: { _id: 0, seq: 1, timestamp: 1 }, maxTimeMS, batchSize: BLOCK_SIZE + 1 })
        .sort({ seq: 1 })
        .toArray(),
    );
    const at = times.find((d) => d.timestamp >= ts);
    return at ? at.seq : (times[times.length - 1]?.seq ?? firstSeqOf(found)) + 1;
  }

  /** How many events match; in an ordered log in blocks, without a kind filter, from seq bounds alone. */
  async count(f: EventFilter, layout: EventLayout = LEGACY_LAYOUT): Promise<number> {
    if (layout.blocks && f.kind === undefined) {
      if (f.timestampGte === undefined && f.timestampLt === undefined) return layout.lastSeq;
      if (layout.ordered) {
        const { lo, hi } = await this.window(f, undefined, false, layout.lastSeq);
        return Math.max(0, hi - lo + 1);
      }
    }
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

  /**
   * Events with afterSeq < seq <= untilSeq (when given), in seq order, at most `limit` or RANGE_BYTES of
   * text. With `blocks` (the conversation's layout says every event has its block), read block by block.
   */
  async range(conversationId: string, afterSeq: number, limit: number, untilSeq?: number, blocks = false): Promise<{ seq: number; json: string }[]> {
    if (blocks) {
      const hi = untilSeq ?? Number.MAX_SAFE_INTEGER;
      const { docs } = await this.readSpan('range', conversationId, { lo: afterSeq + 1, hi, descending: false, limit, maxBytes: RANGE_BYTES });
      return docs.map((d) => ({ seq: d.seq, json: d.json }));
    }
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
  async *inSeqOrder(conversationId: string, pageSize = 500, blocks = false): AsyncGenerator<{ seq: number; json: string }, void, undefined> {
    const read = (after: number) => {
      const p = this.range(conversationId, after, pageSize, undefined, blocks);
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
