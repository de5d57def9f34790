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

/** The (timestamp, seq) order of the log. */
const key = (d: { timestamp: string; seq: number }) => [d.timestamp, d.seq] as const;
const before = (a: readonly [string, number], b: readonly [string, number]) =>
  a[0] < b[0] || (a[0] === b[0] && a[1] < b[1]);

/** Block reads in flight for one page or range: a page with its cursor's event and the seq after it spans three. */
const READS_IN_FLIGHT = 3;

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

async function takeWithin<T extends { json: string }>(
  cursor: FindCursor<T>,
  limit: number,
  maxBytes: number,
): Promise<Taken<T>> {
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
  /**
   * Whether pages and ranges read blocks (one equality query per block). Off where the database scans
   * the collection for every query but one by `_id` (FerretDB on SQLite): there one sorted query a page
   * costs one scan, where the blocks of a page cost one each. `probeBlockReads` sets it from the database.
   * @default true
   */
  blockReads?: boolean;
}

export const defaultEventsStoreOptions = (): Required<EventsStoreOptions> => ({
  queryTimeoutMs: 15_000,
  blockReads: true,
});

export class EventsStore {
  private readonly maxTimeMS: number;
  /** See EventsStoreOptions.blockReads. */
  private blockReads: boolean;

  constructor(
    private readonly db: Db,
    options: EventsStoreOptions = {},
  ) {
    this.maxTimeMS = options.queryTimeoutMs ?? defaultEventsStoreOptions().queryTimeoutMs;
    this.blockReads = options.blockReads ?? defaultEventsStoreOptions().blockReads;
  }

  /**
   * Asks the database how it would answer a block read: FerretDB's `explain` tells whether the filter
   * reaches the backend (`filterPushdown`); MongoDB's has no such field and answers from the index. Block
   * reads stay on unless the answer says the filter is applied to a scan. Answers whether they are on.
   */
  async probeBlockReads(): Promise<boolean> {
    const plan = await this.db.command({ explain: { find: 'events', filter: { block: '' }, limit: 1 } });
    this.blockReads = plan.filterPushdown !== false;
    return this.blockReads;
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
        .find(
          { conversation_id: conversationId, id: { $in: unique } },
          { projection, maxTimeMS, batchSize: unique.length + 1 },
        )
        .toArray(),
    );
  }

  /**
   * Gives every event of the conversation that has none its block (a log stored before the block
   * layout), and tells what the walk learnt: the highest seq, whether the seqs 1..highest are all there,
   * whether timestamps ever go back in seq order, and the highest time. One pass over the conversation
   * (no sort; seqs and times only, about 60 bytes an event are kept), the updates made meanwhile by `_id`,
   * at most ADD_BLOCKS_CONCURRENCY at a time. The caller holds the ingest lease: nothing is appended meanwhile.
   */
  async addBlocks(
    conversationId: string,
    onProgress?: () => void,
  ): Promise<{ updated: number; lastSeq: number; complete: boolean; ordered: boolean; lastTimestamp: string | null }> {
    const times: string[] = [];
    let updated = 0;
    const inFlight = new Set<Promise<void>>();
    let failed: unknown;
    const cursor = this.events.find(
      { conversation_id: conversationId },
      { projection: { _id: 1, seq: 1, timestamp: 1, block: 1 }, batchSize: 1000 },
    );
    try {
      for await (const d of cursor) {
        times[d.seq - 1] = d.timestamp;
        const block = blockKey(conversationId, blockOf(d.seq));
        if (d.block === block) continue;
        // One updateOne per event. Measured on FerretDB 1.24 on PostgreSQL: an update by `_id` answers in
        // about 2 ms, while one update command of 50 such statements (a bulkWrite) ran past the driver's
        // socket timeout (FerretDB/FerretDB#5549 reports the same slowness of bulk updates).
        const p = this.events.updateOne({ _id: d._id }, { $set: { block } }).then(
          () => {
            if (++updated % 500 === 0) onProgress?.();
          },
          (e: unknown) => {
            failed ??= e;
          },
        );
        inFlight.add(p);
        void p.finally(() => inFlight.delete(p));
        if (inFlight.size >= ADD_BLOCKS_CONCURRENCY) await Promise.race(inFlight);
        if (failed) throw failed;
      }
    } finally {
      await Promise.all(inFlight);
      await cursor.close();
    }
    if (failed) throw failed;
    let ordered = true;
    let highest: string | null = null;
    let complete = true;
    for (let i = 0; i < times.length; i++) {
      const t = times[i];
      if (t === undefined) {
        complete = false;
        continue;
      }
      if (highest !== null && t < highest) ordered = false;
      else highest = t;
    }
    return { updated, lastSeq: times.length, complete, ordered, lastTimestamp: highest };
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
   * The end of a log in blocks, looking from `afterSeq` on (where the recorded end says it is): the
   * blocks after it, seqs and times only, until one that is not full. What a reader or a writer reads
   * when the recorded end may be behind, at the cost of the events stored past it, not of the
   * conversation. `highest` is the highest time among them and `since`; `backwards` tells that one of
   * them is below an earlier one (or below `since`).
   */
  async endAfter(
    conversationId: string,
    afterSeq: number,
    deadline = Date.now() + this.maxTimeMS,
    since: string | null = null,
  ): Promise<{ seq: number; highest: string | null; backwards: boolean }> {
    let seq = afterSeq;
    let highest = since;
    let backwards = false;
    for (let b = blockOf(afterSeq + 1); ; b++) {
      const left = deadline - Date.now();
      if (left <= 0) throw new DatabaseBusyError('events endAfter', this.maxTimeMS);
      const docs = await this.read('endAfter', (maxTimeMS) =>
        this.events
          .find(
            { block: blockKey(conversationId, b), seq: { $gt: seq } },
            {
              projection: { _id: 0, seq: 1, timestamp: 1 },
              maxTimeMS: Math.min(maxTimeMS, left),
              batchSize: BLOCK_SIZE + 1,
            },
          )
          .sort({ seq: 1 })
          .toArray(),
      );
      for (const d of docs) {
        if (d.seq !== seq + 1) break;
        seq = d.seq;
        if (highest !== null && d.timestamp < highest) backwards = true;
        else highest = d.timestamp;
      }
      if (seq !== lastSeqOf(b)) return { seq, highest, backwards };
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
      await this.events.insertMany(
        docs.map((d) => ({ ...d })),
        { ordered: true },
      );
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
   * An ordered log in blocks, without a kind filter, is read from the blocks the page lies in (seq order
   * is then (timestamp, seq) order); any other query, and any block read whose answer does not hold
   * together (see `fromBlocks`), with one query that sorts the conversation.
   */
  async search(
    f: EventFilter,
    opts: { descending: boolean; limit: number; after?: EventCursor },
    layout: EventLayout = LEGACY_LAYOUT,
  ): Promise<{ jsons: string[]; last: EventCursor | null }> {
    const inBlocks =
      this.blockReads && layout.blocks && layout.ordered && f.kind === undefined
        ? await this.searchBlocks(f, opts, layout)
        : null;
    const { docs, more } = inBlocks ?? (await this.searchSorted(f, opts));
    const tail = docs[docs.length - 1];
    return { jsons: docs.map((d) => d.json), last: more && tail ? [tail.timestamp, tail.seq] : null };
  }

  private async searchSorted(
    f: EventFilter,
    opts: { descending: boolean; limit: number; after?: EventCursor },
  ): Promise<Taken<PageDoc>> {
    const filter = baseFilter(f);
    if (opts.after) {
      const [ts, seq] = opts.after;
      const beyond = opts.descending ? '$lt' : '$gt';
      filter.$or = [{ timestamp: { [beyond]: ts } }, { timestamp: ts, seq: { [beyond]: seq } }];
    }
    const dir = opts.descending ? -1 : 1;
    return this.read('search', (maxTimeMS) =>
      takeWithin(
        this.events
          .find(filter, { projection: PAGE_PROJECTION, maxTimeMS })
          .sort({ timestamp: dir, seq: dir })
          .limit(opts.limit + 1),
        opts.limit,
        PAGE_BYTES,
      ),
    );
  }

  /**
   * Where the log ends: the recorded last seq, or past it when events were stored after it (a writer that
   * died before recording them): one read of the block after it. Null when those go back in time.
   */
  private async endOf(conversationId: string, layout: EventLayout, deadline: number): Promise<number | null> {
    const end = await this.endAfter(conversationId, layout.lastSeq, deadline, layout.lastTimestamp);
    // Past the record, times going back (a mark that did not land yet, or was lost): not ordered.
    return end.backwards ? null : end.seq;
  }

  /** The seq window [lo, hi] of an ordered log ending at `end` that the time bounds and the cursor leave. */
  private async window(
    f: EventFilter,
    after: EventCursor | undefined,
    descending: boolean,
    end: number,
    deadline: number,
  ): Promise<{ lo: number; hi: number }> {
    let lo = 1;
    let hi = end;
    if (after) {
      if (descending) hi = Math.min(hi, after[1] - 1);
      else lo = Math.max(lo, after[1] + 1);
    }
    // In an ordered log a time bound is a seq bound. A genuine cursor already past it (its time says so)
    // needs no search; a forged one is caught by `fromBlocks`.
    const gte = f.timestampGte;
    if (gte !== undefined && !(after && !descending && after[0] >= gte))
      lo = Math.max(lo, await this.firstSeqFrom(f.conversationId, gte, end, deadline));
    const lt = f.timestampLt;
    if (lt !== undefined && !(after && descending && after[0] < lt))
      hi = Math.min(hi, (await this.firstSeqFrom(f.conversationId, lt, end, deadline)) - 1);
    return { lo, hi };
  }

  /** A page of an ordered log in blocks, or null when the blocks' answer does not hold together. */
  private async searchBlocks(
    f: EventFilter,
    opts: { descending: boolean; limit: number; after?: EventCursor },
    layout: EventLayout,
  ): Promise<Taken<PageDoc> | null> {
    const deadline = Date.now() + this.maxTimeMS;
    // Ascending with no time bound needs no end: the page reads on from the cursor (the common case).
    const bounded = opts.descending || f.timestampGte !== undefined || f.timestampLt !== undefined;
    const end = bounded ? await this.endOf(f.conversationId, layout, deadline) : Number.MAX_SAFE_INTEGER;
    if (end === null) return null;
    const { lo, hi } = await this.window(f, opts.after, opts.descending, end, deadline);
    if (lo > hi) return opts.after ? null : { docs: [], more: false };
    // The cursor's own event is read too and must be the one the cursor names (its time and seq): a
    // forged cursor is then answered by the sorted query, as any cursor would be.
    const at = opts.after?.[1];
    const withCursor = at !== undefined && (opts.descending ? at === hi + 1 : at === lo - 1);
    const span = withCursor ? (opts.descending ? { lo, hi: at } : { lo: at, hi }) : { lo, hi };
    // Ascending with no bound, a page that may reach the recorded end is read with one seq more: whether
    // it exists says whether more follow, in the same reads (events stored past the record included).
    const lookahead = !bounded && lo + opts.limit - 1 >= layout.lastSeq ? 1 : 0;
    const limit = opts.limit + (withCursor ? 1 : 0) + lookahead;
    const read = await this.readSpan('search', f.conversationId, {
      ...span,
      descending: opts.descending,
      limit,
      maxBytes: PAGE_BYTES,
      deadline,
    });
    if (!read) return null;
    if (withCursor) {
      const own = read.docs.shift();
      if (!own || own.timestamp !== opts.after![0]) return null;
      // The cursor's event took the page's bytes (a very large one): the sorted query answers this one.
      if (read.docs.length === 0 && read.cut) return null;
      const next = read.docs[0];
      if (next && !(opts.descending ? before(key(next), key(own)) : before(key(own), key(next)))) return null;
    } else if (opts.after) return null; // a cursor outside the window its own bounds make: not one of ours
    return this.fromBlocks(f, opts, layout, read, { lo, hi, bounded, lookahead });
  }

  /**
   * Checks a page read from blocks against what the sorted query would answer, cheaply, and tells whether
   * more follow; null sends the request to the sorted query. It does not hold together when its times go
   * back (the log turned unordered after its layout was read), when its first event is outside the time
   * bounds, or when it stops short of the recorded end (an event without its block: written by an api
   * older than the layout).
   */
  private fromBlocks(
    f: EventFilter,
    opts: { descending: boolean; limit: number; after?: EventCursor },
    layout: EventLayout,
    page: { docs: PageDoc[]; cut: boolean },
    w: { lo: number; hi: number; bounded: boolean; lookahead: number },
  ): Taken<PageDoc> | null {
    const { docs } = page;
    for (let i = 1; i < docs.length; i++) {
      const [p, c] = opts.descending ? [docs[i]!, docs[i - 1]!] : [docs[i - 1]!, docs[i]!];
      if (!before(key(p), key(c))) return null;
    }
    const first = docs[0];
    if (first) {
      if (f.timestampGte !== undefined && first.timestamp < f.timestampGte && !opts.descending) return null;
      if (f.timestampLt !== undefined && first.timestamp >= f.timestampLt && opts.descending) return null;
    }
    if (page.cut) return { docs: docs.slice(0, opts.limit), more: true };
    if (opts.descending || w.bounded) {
      // The window lies within the end of the log: a page short of it misses an event.
      if (docs.length < Math.min(w.hi - w.lo + 1, opts.limit)) return null;
      const tail = docs[docs.length - 1];
      return { docs, more: !!tail && (opts.descending ? tail.seq > w.lo : tail.seq < w.hi) };
    }
    // Unbounded ascending: the seq after the page was read when the page could reach the recorded end.
    if (docs.length > opts.limit) return { docs: docs.slice(0, opts.limit), more: true };
    if (docs.length === opts.limit) return { docs, more: w.lookahead === 0 };
    // Short: the end of the log, unless the record says more were stored (an event without its block).
    const tail = docs[docs.length - 1];
    return (tail ? tail.seq : w.lo - 1) < layout.lastSeq ? null : { docs, more: false };
  }

  /**
   * Reads seqs `lo`.. up (or `hi`.. down), at most `limit` of them and `maxBytes` of text (at least one
   * event), from the blocks they lie in: the seqs of a page are known before it is read. At most
   * READS_IN_FLIGHT blocks are read at a time (all of a page's at once). `cut` tells that the bytes
   * stopped it. The seqs read are checked to follow one another; null when one is missing.
   */
  private async readSpan(
    operation: string,
    conversationId: string,
    o: { lo: number; hi: number; descending: boolean; limit: number; maxBytes: number; deadline: number },
  ): Promise<{ docs: PageDoc[]; cut: boolean } | null> {
    const from = o.descending ? Math.max(o.lo, o.hi - o.limit + 1) : o.lo;
    const to = o.descending ? o.hi : Math.min(o.hi, o.lo + o.limit - 1);
    const blocks: number[] = [];
    for (let b = blockOf(from); b <= blockOf(to); b++) blocks.push(b);
    if (o.descending) blocks.reverse();
    const dir = o.descending ? -1 : 1;
    const readBlock = (b: number) => {
      const left = o.deadline - Date.now();
      const p =
        left <= 0
          ? Promise.reject(new DatabaseBusyError(`events ${operation}`, this.maxTimeMS))
          : this.read(operation, (maxTimeMS) =>
              takeWithin(
                this.events
                  .find(
                    {
                      block: blockKey(conversationId, b),
                      seq: { $gte: Math.max(from, firstSeqOf(b)), $lte: Math.min(to, lastSeqOf(b)) },
                    },
                    { projection: PAGE_PROJECTION, maxTimeMS: Math.min(maxTimeMS, left) },
                  )
                  .sort({ seq: dir })
                  .limit(o.limit),
                o.limit,
                o.maxBytes,
              ),
            );
      p.catch(() => undefined); // a read ahead that is not awaited (the page was cut) fails quietly
      return p;
    };
    const docs: PageDoc[] = [];
    let bytes = 0;
    let expect = o.descending ? to : from;
    // A page spans at most three blocks (its cursor's, its own, the one after it): read together.
    const reads = blocks.slice(0, READS_IN_FLIGHT).map(readBlock);
    for (let i = 0; i < blocks.length; i++) {
      const part = await reads[i]!;
      if (i + READS_IN_FLIGHT < blocks.length) reads.push(readBlock(blocks[i + READS_IN_FLIGHT]!));
      for (const d of part.docs) {
        if (docs.length > 0 && bytes >= o.maxBytes) return { docs, cut: true };
        if (d.seq !== expect) return null; // a seq missing inside the block: read it the sorted way
        docs.push(d);
        bytes += d.json.length;
        expect += dir;
      }
      if (part.more) return { docs, cut: true }; // this block's part was cut by its bytes
      // A block that holds less than its part: the log ends (or an event is missing) here.
      const partEnd = o.descending ? Math.max(from, firstSeqOf(blocks[i]!)) : Math.min(to, lastSeqOf(blocks[i]!));
      if (expect !== partEnd + dir) return { docs, cut: false };
    }
    return { docs, cut: false };
  }

  /**
   * The first seq whose timestamp is at or after `ts` in an ordered log ending at `end` (end + 1 when
   * none): a binary search over the blocks' first events, then one read of the block found.
   */
  private async firstSeqFrom(conversationId: string, ts: string, end: number, deadline: number): Promise<number> {
    if (end === 0) return 1;
    const within = <T>(run: (maxTimeMS: number) => Promise<T>) => {
      const left = deadline - Date.now();
      if (left <= 0) throw new DatabaseBusyError('events search', this.maxTimeMS);
      return this.read('search', (maxTimeMS) => run(Math.min(maxTimeMS, left)));
    };
    const firstTime = async (b: number) => {
      const [d] = await within((maxTimeMS) =>
        this.events
          .find({ block: blockKey(conversationId, b) }, { projection: { _id: 0, timestamp: 1 }, maxTimeMS })
          .sort({ seq: 1 })
          .limit(1)
          .toArray(),
      );
      return d?.timestamp;
    };
    // The last block whose first event is before `ts`; none: the log starts at or after it.
    let lo = 0;
    let hi = blockOf(end);
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
    const times = await within((maxTimeMS) =>
      this.events
        .find(
          { block: blockKey(conversationId, found) },
          { projection: { _id: 0, seq: 1, timestamp: 1 }, maxTimeMS, batchSize: BLOCK_SIZE + 1 },
        )
        .sort({ seq: 1 })
        .toArray(),
    );
    const at = times.find((d) => d.timestamp >= ts && d.seq <= end);
    return at ? at.seq : Math.min(end, lastSeqOf(found)) + 1;
  }

  /**
   * How many events match. In an ordered log in blocks, without a kind filter, from seq bounds alone:
   * the end of the log (the recorded one, checked past), or the difference of two time bounds.
   */
  async count(f: EventFilter, layout: EventLayout = LEGACY_LAYOUT): Promise<number> {
    if (this.blockReads && layout.blocks && f.kind === undefined) {
      const deadline = Date.now() + this.maxTimeMS;
      if (f.timestampGte === undefined && f.timestampLt === undefined)
        return (await this.endAfter(f.conversationId, layout.lastSeq, deadline)).seq;
      const end = layout.ordered ? await this.endOf(f.conversationId, layout, deadline) : null;
      if (end !== null) {
        const { lo, hi } = await this.window(f, undefined, false, end, deadline);
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
  async range(
    conversationId: string,
    afterSeq: number,
    limit: number,
    untilSeq?: number,
    blocks = false,
  ): Promise<{ seq: number; json: string }[]> {
    if (blocks && this.blockReads) {
      const hi = untilSeq ?? Number.MAX_SAFE_INTEGER;
      const read = await this.readSpan('range', conversationId, {
        lo: afterSeq + 1,
        hi,
        descending: false,
        limit,
        maxBytes: RANGE_BYTES,
        deadline: Date.now() + this.maxTimeMS,
      });
      // A seq missing inside a block (an event written without its block): read the range the sorted way.
      if (read) return read.docs.map((d) => ({ seq: d.seq, json: d.json }));
    }
    const seq = untilSeq === undefined ? { $gt: afterSeq } : { $gt: afterSeq, $lte: untilSeq };
    const { docs } = await this.read('range', (maxTimeMS) =>
      takeWithin(
        this.events
          .find({ conversation_id: conversationId, seq }, { projection: { _id: 0, seq: 1, json: 1 }, maxTimeMS })
          .sort({ seq: 1 })
          .limit(limit),
        limit,
        RANGE_BYTES,
      ),
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
  async *inSeqOrder(
    conversationId: string,
    pageSize = 500,
    blocks = false,
  ): AsyncGenerator<{ seq: number; json: string }, void, undefined> {
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
