/**
 * The append path of the log: events are inserted in seq order, in ordered chunks that stop at the first
 * document that hits a unique index, so the log keeps a contiguous prefix and never a hole.
 */
import type { Collection } from 'mongodb';
import { isDuplicateKey } from './errors';
import type { StoredEvent } from './events-collection';

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

/**
 * Appends in seq order and stops at the first document that hits a unique index. Ordered inserts of at
 * most APPEND_CHUNK documents, one after the other (see there why).
 */
export async function appendInOrder(
  events: Collection<StoredEvent>,
  docs: readonly StoredEvent[],
): Promise<AppendResult> {
  let inserted = 0;
  for (let from = 0; from < docs.length; from += APPEND_CHUNK) {
    const r = await appendChunk(events, docs.slice(from, from + APPEND_CHUNK));
    inserted += r.inserted;
    if (r.conflictAt !== undefined) return { inserted, conflictAt: from + r.conflictAt };
  }
  return { inserted };
}

async function appendChunk(events: Collection<StoredEvent>, docs: readonly StoredEvent[]): Promise<AppendResult> {
  try {
    await events.insertMany(
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
