/**
 * The block layout of a conversation's log. Event `seq` s lies in block floor((s - 1) / BLOCK_SIZE) and
 * carries that block's key, `<conversation_id>/<block>`, in its `block` field. A read of one block is an
 * equality on one field: the one kind of filter FerretDB 1.24 pushes down to PostgreSQL (and answers
 * from a GIN index there), so a page costs what its blocks hold, not what the conversation holds.
 *
 * Full blocks never change (seqs are contiguous and only appended), so what a reader learns about one
 * (its first timestamp, for a time bound) holds for good.
 */

/** Events per block: one page (at most 100 events) spans at most two blocks. */
export const BLOCK_SIZE = 100;

export const blockOf = (seq: number): number => Math.floor((seq - 1) / BLOCK_SIZE);
export const blockKey = (conversationId: string, block: number): string => `${conversationId}/${block}`;
/** The first and last seq a block can hold. */
export const firstSeqOf = (block: number): number => block * BLOCK_SIZE + 1;
export const lastSeqOf = (block: number): number => (block + 1) * BLOCK_SIZE;

/**
 * How a conversation's log can be read; kept on its conversation record, written under the ingest lease.
 * `blocks` only ever turns true (new conversations start so; older ones when migrated) and `ordered` only
 * ever turns false, so a reader holding an older copy reads correctly, at worst the slower way.
 */
export interface EventLayout {
  /** Every stored event carries its block. False for a log stored before the layout, until migrated. */
  blocks: boolean;
  /** No event's timestamp is below an earlier seq's: (timestamp, seq) order is seq order. */
  ordered: boolean;
  /** Seq of the last stored event when the record was read (events appended since may exist). */
  lastSeq: number;
  /** Highest time stored when the record was read; null when not known. */
  lastTimestamp: string | null;
}

/** The layout of a log read with the older one-scan queries only. */
export const LEGACY_LAYOUT: EventLayout = { blocks: false, ordered: false, lastSeq: 0, lastTimestamp: null };
