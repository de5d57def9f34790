/**
 * The event log: one `events` collection keyed by conversation. Each event is kept as its validated
 * JSON text (served as is, never parsed again) beside the fields queries need. `timestamp` here is the
 * normalized UTC key of src/events/event-time.ts; `seq` numbers a conversation's events 1, 2, 3, ...
 * in append order, so (timestamp, seq) orders the log totally. This file holds the store's API; the
 * collection's shape is in events-collection.ts, and each read or write path in an events-*.ts beside it.
 */
import type { Db } from 'mongodb';
import { LEGACY_LAYOUT, type EventLayout } from './event-blocks';
import { addBlocksToLog, type AddBlocksResult } from './events-add-blocks';
import { appendInOrder, type AppendResult } from './events-append';
import { endAfter, endOf, readSpan } from './events-block-reads';
import { searchBlocks, seqWindow } from './events-block-search';
import {
  eventKey,
  type EventCursor,
  type EventFilter,
  type SearchOptions,
  type StoredEvent,
} from './events-collection';
import { filterOf, rangeSorted, searchSorted } from './events-query';
import { RANGE_BYTES } from './events-read-bounds';
import { EventsReader } from './events-reader';

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
  private readonly reader: EventsReader;
  /** See EventsStoreOptions.blockReads. */
  private blockReads: boolean;

  constructor(
    private readonly db: Db,
    options: EventsStoreOptions = {},
  ) {
    this.reader = new EventsReader(db, options.queryTimeoutMs ?? defaultEventsStoreOptions().queryTimeoutMs);
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
    return this.reader.read(operation, (maxTimeMS) =>
      this.reader.events
        .find(
          { conversation_id: conversationId, id: { $in: unique } },
          { projection, maxTimeMS, batchSize: unique.length + 1 },
        )
        .toArray(),
    );
  }

  /**
   * Gives every event of a log stored before the block layout its block, and tells what the walk learnt
   * (src/store/events-add-blocks.ts). The caller holds the ingest lease.
   */
  async addBlocks(conversationId: string, onProgress?: () => void): Promise<AddBlocksResult> {
    return addBlocksToLog(this.reader.events, conversationId, onProgress);
  }

  /** Removes the conversation's whole log (deleting a conversation). */
  async deleteConversation(conversationId: string): Promise<number> {
    return (await this.reader.events.deleteMany({ conversation_id: conversationId })).deletedCount;
  }

  /** Which of these event ids the conversation's log already holds (one query). */
  async existingIds(conversationId: string, ids: readonly string[]): Promise<Set<string>> {
    if (ids.length === 0) return new Set();
    const found = await this.byIds('existingIds', conversationId, ids, false);
    return new Set(found.map((d) => d.id));
  }

  /**
   * The end of a log in blocks, looking from `afterSeq` on (where the recorded end says it is), with the
   * highest time seen and whether times went back (src/store/events-block-reads.ts).
   */
  async endAfter(
    conversationId: string,
    afterSeq: number,
    deadline = Date.now() + this.reader.maxTimeMS,
    since: string | null = null,
  ): Promise<{ seq: number; highest: string | null; backwards: boolean }> {
    return endAfter(this.reader, conversationId, afterSeq, deadline, since);
  }

  /** The last event in the conversation's log, seq 0 when empty (a scan on FerretDB: recovery only). */
  async lastInLog(conversationId: string): Promise<{ seq: number; timestamp: string | null }> {
    const [last] = await this.reader.read('lastInLog', (maxTimeMS) =>
      this.reader.events
        .find({ conversation_id: conversationId }, { projection: { _id: 0, seq: 1, timestamp: 1 }, maxTimeMS })
        .sort({ seq: -1 })
        .limit(1)
        .toArray(),
    );
    return { seq: last?.seq ?? 0, timestamp: last?.timestamp ?? null };
  }

  /**
   * Appends in seq order and stops at the first document that hits a unique index, so the log keeps a
   * contiguous prefix and never a hole (src/store/events-append.ts).
   */
  async append(docs: readonly StoredEvent[]): Promise<AppendResult> {
    return appendInOrder(this.reader.events, docs);
  }

  /**
   * One page in (timestamp, seq) order after `after`; `last` is the cursor for the next page, if any.
   * An ordered log in blocks, without a kind filter, is read from the blocks the page lies in (seq order
   * is then (timestamp, seq) order); any other query, and any block read whose answer does not hold
   * together (see `verifyBlockPage` in events-block-search.ts), with one query that sorts the conversation.
   */
  async search(
    f: EventFilter,
    opts: SearchOptions,
    layout: EventLayout = LEGACY_LAYOUT,
  ): Promise<{ jsons: string[]; last: EventCursor | null }> {
    const inBlocks =
      this.blockReads && layout.blocks && layout.ordered && f.kind === undefined
        ? await searchBlocks(this.reader, f, opts, layout)
        : null;
    const { docs, more } = inBlocks ?? (await searchSorted(this.reader, f, opts));
    const tail = docs[docs.length - 1];
    return { jsons: docs.map((d) => d.json), last: more && tail ? [tail.timestamp, tail.seq] : null };
  }

  /**
   * How many events match. In an ordered log in blocks, without a kind filter, from seq bounds alone:
   * the end of the log (the recorded one, checked past), or the difference of two time bounds.
   */
  async count(f: EventFilter, layout: EventLayout = LEGACY_LAYOUT): Promise<number> {
    if (this.blockReads && layout.blocks && f.kind === undefined) {
      const deadline = Date.now() + this.reader.maxTimeMS;
      if (f.timestampGte === undefined && f.timestampLt === undefined)
        return (await this.endAfter(f.conversationId, layout.lastSeq, deadline)).seq;
      const end = layout.ordered ? await endOf(this.reader, f.conversationId, layout, deadline) : null;
      if (end !== null) {
        const { lo, hi } = await seqWindow(this.reader, f, undefined, false, end, deadline);
        return Math.max(0, hi - lo + 1);
      }
    }
    return this.reader.read('count', (maxTimeMS) => this.reader.events.countDocuments(filterOf(f), { maxTimeMS }));
  }

  /** The stored text of each id the log holds, by id (one query). */
  async getByIds(conversationId: string, ids: readonly string[]): Promise<Map<string, string>> {
    if (ids.length === 0) return new Map();
    const docs = await this.byIds('getByIds', conversationId, ids, true);
    return new Map(docs.map((d) => [d.id, d.json]));
  }

  async seqOf(conversationId: string, id: string): Promise<number | null> {
    const d = await this.reader.read('seqOf', (maxTimeMS) =>
      this.reader.events.findOne({ _id: eventKey(conversationId, id) }, { projection: { _id: 0, seq: 1 }, maxTimeMS }),
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
      const read = await readSpan(this.reader, 'range', conversationId, {
        lo: afterSeq + 1,
        hi,
        descending: false,
        limit,
        maxBytes: RANGE_BYTES,
        deadline: Date.now() + this.reader.maxTimeMS,
      });
      // A seq missing inside a block (an event written without its block): read the range the sorted way.
      if (read) return read.docs.map((d) => ({ seq: d.seq, json: d.json }));
    }
    return rangeSorted(this.reader, conversationId, afterSeq, limit, untilSeq);
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
