/**
 * The migration of a log stored before the block layout (src/store/event-blocks.ts): gives each of its
 * events its block, and learns on the way what the conversation's layout record needs.
 */
import type { Collection } from 'mongodb';
import { blockKey, blockOf } from './event-blocks';
import type { StoredEvent } from './events-collection';

/** Updates in flight while a migration gives a log's events their blocks. */
const ADD_BLOCKS_CONCURRENCY = 8;

/** What a walk over the log learnt about its seqs and times. */
interface SeqTimes {
  /** The highest seq. */
  lastSeq: number;
  /** The seqs 1..lastSeq are all there. */
  complete: boolean;
  /** No timestamp goes back in seq order. */
  ordered: boolean;
  /** The highest time; null for an empty log. */
  lastTimestamp: string | null;
}

export interface AddBlocksResult extends SeqTimes {
  /** Events that were given their block. */
  updated: number;
}

/**
 * Gives every event of the conversation that has none its block (a log stored before the block
 * layout), and tells what the walk learnt: the highest seq, whether the seqs 1..highest are all there,
 * whether timestamps ever go back in seq order, and the highest time. One pass over the conversation
 * (no sort; seqs and times only, about 60 bytes an event are kept), the updates made meanwhile by `_id`,
 * at most ADD_BLOCKS_CONCURRENCY at a time. The caller holds the ingest lease: nothing is appended meanwhile.
 */
export async function addBlocksToLog(
  events: Collection<StoredEvent>,
  conversationId: string,
  onProgress?: () => void,
): Promise<AddBlocksResult> {
  const times: string[] = [];
  let updated = 0;
  const inFlight = new Set<Promise<void>>();
  let failed: unknown;
  const cursor = events.find(
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
      const p = events.updateOne({ _id: d._id }, { $set: { block } }).then(
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
  return { updated, ...whatTimesTell(times) };
}

/** Reads the times the walk kept by seq (times[seq - 1]; a hole where a seq is missing). */
function whatTimesTell(times: readonly string[]): SeqTimes {
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
  return { lastSeq: times.length, complete, ordered, lastTimestamp: highest };
}
