/**
 * The queries of the log that sort the conversation, for any backend and any filter: the filter of an
 * EventFilter, a page in (timestamp, seq) order after a cursor, and a range in seq order.
 */
import type { Filter } from 'mongodb';
import type { EventFilter, SearchOptions, StoredEvent } from './events-collection';
import { PAGE_BYTES, PAGE_PROJECTION, RANGE_BYTES, takeWithin, type PageDoc, type Taken } from './events-read-bounds';
import type { EventsReader } from './events-reader';

/** The conversation's events that match `f`: its kind, its time bounds. */
export function filterOf(f: EventFilter): Filter<StoredEvent> {
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

/** One page of a search with one query that sorts the conversation's matching events. */
export async function searchSorted(reader: EventsReader, f: EventFilter, opts: SearchOptions): Promise<Taken<PageDoc>> {
  const filter = filterOf(f);
  if (opts.after) {
    const [ts, seq] = opts.after;
    const beyond = opts.descending ? '$lt' : '$gt';
    filter.$or = [{ timestamp: { [beyond]: ts } }, { timestamp: ts, seq: { [beyond]: seq } }];
  }
  const dir = opts.descending ? -1 : 1;
  return reader.read('search', (maxTimeMS) =>
    takeWithin(
      reader.events
        .find(filter, { projection: PAGE_PROJECTION, maxTimeMS })
        .sort({ timestamp: dir, seq: dir })
        .limit(opts.limit + 1),
      opts.limit,
      PAGE_BYTES,
    ),
  );
}

/** Events with afterSeq < seq <= untilSeq (when given) with one query sorted by seq (`conversation_seq`). */
export async function rangeSorted(
  reader: EventsReader,
  conversationId: string,
  afterSeq: number,
  limit: number,
  untilSeq: number | undefined,
): Promise<{ seq: number; json: string }[]> {
  const seq = untilSeq === undefined ? { $gt: afterSeq } : { $gt: afterSeq, $lte: untilSeq };
  const { docs } = await reader.read('range', (maxTimeMS) =>
    takeWithin(
      reader.events
        .find({ conversation_id: conversationId, seq }, { projection: { _id: 0, seq: 1, json: 1 }, maxTimeMS })
        .sort({ seq: 1 })
        .limit(limit),
      limit,
      RANGE_BYTES,
    ),
  );
  return docs;
}
