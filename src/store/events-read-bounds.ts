/**
 * How much one read of the log may hold: the byte bounds of a page and of a range, the fields a page
 * reads, and the cursor reader that keeps to them.
 */
import type { FindCursor } from 'mongodb';
import type { StoredEvent } from './events-collection';

/**
 * Bytes of event text one page may hold, besides its count limit: a page of large events (a runtime may
 * send events of megabytes) is cut short, so no answer or catch-up step holds the log in memory.
 * A page always has at least one event.
 */
export const PAGE_BYTES = 8 * 1024 * 1024;
export const RANGE_BYTES = 4 * 1024 * 1024;
const TAKE_BATCH = 8;

export interface Taken<T> {
  docs: T[];
  more: boolean;
}

export type PageDoc = Pick<StoredEvent, 'timestamp' | 'seq' | 'json'>;
export const PAGE_PROJECTION = { _id: 0, timestamp: 1, seq: 1, json: 1 } as const;

/**
 * Reads a cursor's documents until `limit` of them or `maxBytes` of `json` text; `more` tells whether the
 * cursor had more. Fetched TAKE_BATCH at a time, so a call holds at most about `maxBytes` plus one batch
 * (TAKE_BATCH events of at most MAX_BODY_BYTES each), never the whole page's worth of large events.
 */
export async function takeWithin<T extends { json: string }>(
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
