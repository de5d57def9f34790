/**
 * Keyset paging by a time field, ties broken by `_id`: the page after the (time in ms, id) of the last
 * row seen, in either order. The condition on the cursor goes beside the caller's filter (in `$and`),
 * never over a range the filter may hold on the same field.
 */
import type { Document, Sort } from 'mongodb';

export interface KeysetSort {
  field: string;
  order: 'asc' | 'desc';
}

/** A page and the (time ms, id) of its last row when more follow (null at the end). */
export interface KeysetPage<R> {
  items: R[];
  last: [number, string] | null;
}

/**
 * Runs `query` with the cursor's condition (null on the first page), the sort and one row more than
 * `limit` (to know whether more follow).
 */
export async function keysetPage<R extends { id: string }>(
  query: (cursor: Document | null, sort: Sort, limit: number) => Promise<R[]>,
  sort: KeysetSort,
  limit: number,
  after: readonly [atMs: number, id: string] | undefined,
  timeOf: (row: R) => Date,
): Promise<KeysetPage<R>> {
  const dir = sort.order === 'asc' ? 1 : -1;
  const beyond = dir === 1 ? '$gt' : '$lt';
  const at = after && new Date(after[0]);
  const cursor = after
    ? { $or: [{ [sort.field]: { [beyond]: at } }, { [sort.field]: at, _id: { [beyond]: after[1] } }] }
    : null;
  const rows = await query(cursor, { [sort.field]: dir, _id: dir }, limit + 1);
  const items = rows.slice(0, limit);
  const last = rows.length > limit ? items.at(-1)! : null;
  return { items, last: last ? [timeOf(last).getTime(), last.id] : null };
}
