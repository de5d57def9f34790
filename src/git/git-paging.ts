/**
 * Pages of the git searches over a host's own pages. A position is a host page number and the items of
 * that page already answered, so a page_id names exactly where the next page starts whether the host
 * filters (one host page per answer) or we do (host pages of 100 read until the answer is full).
 */
import { createHash } from 'node:crypto';
import type { GitPagePosition } from '../schemas/git-searches';
import type { HostListingPlan } from './git-host';

export type HostPosition = Omit<GitPagePosition, 'scope'>;

/** Host pages one answer reads at most (the walk goes on from the next page_id). */
export const MAX_HOST_PAGES_PER_ANSWER = 10;
/** Host page size of a listing filtered here. */
export const FILTERED_PAGE_SIZE = 100;

/** A short digest of a search's parameters: the scope a page_id is valid for. */
export function searchScope(...params: (string | number | null | undefined)[]): string {
  return createHash('sha256').update(JSON.stringify(params)).digest('hex').slice(0, 16);
}

/**
 * Up to `limit` items from `start`, and where the next page starts (null at the end). Reads at most
 * MAX_HOST_PAGES_PER_ANSWER host pages: a filter that matches little answers fewer items, with a next page.
 */
export async function collectPage<T>(
  plan: HostListingPlan<T>,
  start: HostPosition,
  limit: number,
): Promise<{ items: T[]; next: HostPosition | null }> {
  const { perPage } = start;
  const keep = plan.keep ?? (() => true);
  const items: T[] = [];
  let { part, page, skip } = start;
  for (let reads = 0; part < plan.parts.length; reads++) {
    if (reads === MAX_HOST_PAGES_PER_ANSWER) return { items, next: { part, page, perPage, skip } };
    const got = await plan.parts[part]!(page, perPage);
    // A host that answers more than it was asked for: only a page's worth is read (a skip stays in a page).
    const onPage = got.items.slice(0, perPage);
    for (let i = skip; i < onPage.length; i++) {
      if (!keep(onPage[i]!)) continue;
      // The answer is full and the host page holds another: the next page starts there.
      if (items.length === limit) return { items, next: { part, page, perPage, skip: i } };
      items.push(onPage[i]!);
    }
    if (got.hasNext) page++;
    else [part, page] = [part + 1, 1];
    skip = 0;
    if (items.length === limit) return { items, next: part < plan.parts.length ? { part, page, perPage, skip } : null };
  }
  return { items, next: null };
}
