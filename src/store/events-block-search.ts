/**
 * Search pages of an ordered log read from the blocks they lie in (seq order is then (timestamp, seq)
 * order), checked against what the sorted query would answer; and the seq window of a query's bounds.
 */
import type { EventLayout } from './event-blocks';
import { endOf, firstSeqFrom, readSpan, type SpanRead } from './events-block-reads';
import { precedes, type EventCursor, type EventFilter, type SearchOptions } from './events-collection';
import { PAGE_BYTES, type PageDoc, type Taken } from './events-read-bounds';
import type { EventsReader } from './events-reader';

/** The seq window [lo, hi] of an ordered log ending at `end` that the time bounds and the cursor leave. */
export async function seqWindow(
  reader: EventsReader,
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
  // needs no search; a forged one is caught by `verifyBlockPage`.
  const gte = f.timestampGte;
  if (gte !== undefined && !(after && !descending && after[0] >= gte))
    lo = Math.max(lo, await firstSeqFrom(reader, f.conversationId, gte, end, deadline));
  const lt = f.timestampLt;
  if (lt !== undefined && !(after && descending && after[0] < lt))
    hi = Math.min(hi, (await firstSeqFrom(reader, f.conversationId, lt, end, deadline)) - 1);
  return { lo, hi };
}

/** Where a block page lies: its seq window, whether bounds made it, and whether it read one seq past it. */
interface PageWindow {
  lo: number;
  hi: number;
  bounded: boolean;
  lookahead: number;
}

/** A page of an ordered log in blocks, or null when the blocks' answer does not hold together. */
export async function searchBlocks(
  reader: EventsReader,
  f: EventFilter,
  opts: SearchOptions,
  layout: EventLayout,
): Promise<Taken<PageDoc> | null> {
  const deadline = Date.now() + reader.maxTimeMS;
  // Ascending with no time bound needs no end: the page reads on from the cursor (the common case).
  const bounded = opts.descending || f.timestampGte !== undefined || f.timestampLt !== undefined;
  const end = bounded ? await endOf(reader, f.conversationId, layout, deadline) : Number.MAX_SAFE_INTEGER;
  if (end === null) return null;
  const { lo, hi } = await seqWindow(reader, f, opts.after, opts.descending, end, deadline);
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
  const read = await readSpan(reader, 'search', f.conversationId, {
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
    if (next && !(opts.descending ? precedes(next, own) : precedes(own, next))) return null;
  } else if (opts.after) return null; // a cursor outside the window its own bounds make: not one of ours
  return verifyBlockPage(f, opts, layout, read, { lo, hi, bounded, lookahead });
}

/**
 * Checks a page read from blocks against what the sorted query would answer, cheaply, and tells whether
 * more follow; null sends the request to the sorted query. It does not hold together when its times go
 * back (the log turned unordered after its layout was read), when its first event is outside the time
 * bounds, or when it stops short of the recorded end (an event without its block: written by an api
 * older than the layout).
 */
function verifyBlockPage(
  f: EventFilter,
  opts: SearchOptions,
  layout: EventLayout,
  page: SpanRead,
  w: PageWindow,
): Taken<PageDoc> | null {
  const { docs } = page;
  for (let i = 1; i < docs.length; i++) {
    const [p, c] = opts.descending ? [docs[i]!, docs[i - 1]!] : [docs[i - 1]!, docs[i]!];
    if (!precedes(p, c)) return null;
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
