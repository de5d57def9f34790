/**
 * Reads of a log by its blocks (src/store/event-blocks.ts), each an equality on `block`: a span of seqs,
 * the end of the log past its recorded end, and the first seq at or after a time in an ordered log.
 */
import { BLOCK_SIZE, blockKey, blockOf, firstSeqOf, lastSeqOf, type EventLayout } from './event-blocks';
import { PAGE_PROJECTION, takeWithin, type PageDoc, type Taken } from './events-read-bounds';
import type { EventsReader } from './events-reader';

/** Block reads in flight for one page or range: a page with its cursor's event and the seq after it spans three. */
const READS_IN_FLIGHT = 3;

/** The seqs `lo`..`hi` a span read may cover, in its direction, and what bounds it. */
export interface SpanRequest {
  lo: number;
  hi: number;
  descending: boolean;
  limit: number;
  maxBytes: number;
  deadline: number;
}

export interface SpanRead {
  docs: PageDoc[];
  /** The bytes stopped it. */
  cut: boolean;
}

/**
 * Reads seqs `lo`.. up (or `hi`.. down), at most `limit` of them and `maxBytes` of text (at least one
 * event), from the blocks they lie in: the seqs of a page are known before it is read. At most
 * READS_IN_FLIGHT blocks are read at a time (all of a page's at once). `cut` tells that the bytes
 * stopped it. The seqs read are checked to follow one another; null when one is missing.
 */
export async function readSpan(
  reader: EventsReader,
  operation: string,
  conversationId: string,
  o: SpanRequest,
): Promise<SpanRead | null> {
  const from = o.descending ? Math.max(o.lo, o.hi - o.limit + 1) : o.lo;
  const to = o.descending ? o.hi : Math.min(o.hi, o.lo + o.limit - 1);
  const blocks: number[] = [];
  for (let b = blockOf(from); b <= blockOf(to); b++) blocks.push(b);
  if (o.descending) blocks.reverse();
  const dir = o.descending ? -1 : 1;
  const readBlock = (b: number) => readBlockPart(reader, operation, conversationId, b, from, to, o);
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

/** The seqs `from`..`to` that lie in block `b`, in the span's direction and within its bounds. */
function readBlockPart(
  reader: EventsReader,
  operation: string,
  conversationId: string,
  b: number,
  from: number,
  to: number,
  o: SpanRequest,
): Promise<Taken<PageDoc>> {
  const p = reader.readBy(operation, o.deadline, (maxTimeMS) =>
    takeWithin(
      reader.events
        .find(
          {
            block: blockKey(conversationId, b),
            seq: { $gte: Math.max(from, firstSeqOf(b)), $lte: Math.min(to, lastSeqOf(b)) },
          },
          { projection: PAGE_PROJECTION, maxTimeMS },
        )
        .sort({ seq: o.descending ? -1 : 1 })
        .limit(o.limit),
      o.limit,
      o.maxBytes,
    ),
  );
  p.catch(() => undefined); // a read ahead that is not awaited (the page was cut) fails quietly
  return p;
}

/**
 * The end of a log in blocks, looking from `afterSeq` on (where the recorded end says it is): the
 * blocks after it, seqs and times only, until one that is not full. What a reader or a writer reads
 * when the recorded end may be behind, at the cost of the events stored past it, not of the
 * conversation. `highest` is the highest time among them and `since`; `backwards` tells that one of
 * them is below an earlier one (or below `since`).
 */
export async function endAfter(
  reader: EventsReader,
  conversationId: string,
  afterSeq: number,
  deadline: number,
  since: string | null,
): Promise<{ seq: number; highest: string | null; backwards: boolean }> {
  let seq = afterSeq;
  let highest = since;
  let backwards = false;
  for (let b = blockOf(afterSeq + 1); ; b++) {
    const docs = await reader.readBy('endAfter', deadline, (maxTimeMS) =>
      reader.events
        .find(
          { block: blockKey(conversationId, b), seq: { $gt: seq } },
          { projection: { _id: 0, seq: 1, timestamp: 1 }, maxTimeMS, batchSize: BLOCK_SIZE + 1 },
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

/**
 * Where the log ends: the recorded last seq, or past it when events were stored after it (a writer that
 * died before recording them): one read of the block after it. Null when those go back in time.
 */
export async function endOf(
  reader: EventsReader,
  conversationId: string,
  layout: EventLayout,
  deadline: number,
): Promise<number | null> {
  const end = await endAfter(reader, conversationId, layout.lastSeq, deadline, layout.lastTimestamp);
  // Past the record, times going back (a mark that did not land yet, or was lost): not ordered.
  return end.backwards ? null : end.seq;
}

/**
 * The first seq whose timestamp is at or after `ts` in an ordered log ending at `end` (end + 1 when
 * none): a binary search over the blocks' first events, then one read of the block found.
 */
export async function firstSeqFrom(
  reader: EventsReader,
  conversationId: string,
  ts: string,
  end: number,
  deadline: number,
): Promise<number> {
  if (end === 0) return 1;
  const firstTime = async (b: number) => {
    const [d] = await reader.readBy('search', deadline, (maxTimeMS) =>
      reader.events
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
  const times = await reader.readBy('search', deadline, (maxTimeMS) =>
    reader.events
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
