/**
 * The git searches' paging without servers: collectPage answers a page of the service's own size over the
 * host's pages (filtered or not, over several listings), reading a bounded number of host pages per answer.
 */
import { collectPage, MAX_HOST_PAGES_PER_ANSWER } from '../src/git/git-paging';
import type { HostListing } from '../src/git/git-host';

describe('collectPage (pages over host pages)', () => {
  const listing =
    (all: number[]): HostListing<number> =>
    async (page, perPage) => ({
      items: all.slice((page - 1) * perPage, page * perPage),
      hasNext: page * perPage < all.length,
    });
  const range = (n: number, from = 0) => Array.from({ length: n }, (_, i) => from + i);

  it('follows the host pages one for one when the host filters', async () => {
    const plan = { parts: [listing(range(5))] };
    expect(await collectPage(plan, { part: 0, page: 1, perPage: 2, skip: 0 }, 2)).toEqual({
      items: [0, 1],
      next: { part: 0, page: 2, perPage: 2, skip: 0 },
    });
    expect(await collectPage(plan, { part: 0, page: 3, perPage: 2, skip: 0 }, 2)).toEqual({ items: [4], next: null });
  });

  it('starts a page mid host page where a filtered one stopped, and walks the parts in turn', async () => {
    const even = { parts: [listing(range(10))], keep: (n: number) => n % 2 === 0 };
    expect(await collectPage(even, { part: 0, page: 1, perPage: 4, skip: 0 }, 3)).toEqual({
      items: [0, 2, 4],
      next: { part: 0, page: 2, perPage: 4, skip: 2 },
    });
    expect(await collectPage(even, { part: 0, page: 2, perPage: 4, skip: 2 }, 3)).toEqual({
      items: [6, 8],
      next: null,
    });
    const two = { parts: [listing([1, 2, 3]), listing([10, 11])] };
    expect(await collectPage(two, { part: 0, page: 1, perPage: 2, skip: 0 }, 4)).toEqual({
      items: [1, 2, 3, 10],
      next: { part: 1, page: 1, perPage: 2, skip: 1 },
    });
    expect(await collectPage(two, { part: 1, page: 1, perPage: 2, skip: 1 }, 4)).toEqual({ items: [11], next: null });
  });

  it('reads a bounded number of host pages for one answer', async () => {
    let reads = 0;
    const counted: HostListing<number> = async (page, perPage) => {
      reads++;
      return listing(range(10_000))(page, perPage);
    };
    const got = await collectPage(
      { parts: [counted], keep: () => false },
      { part: 0, page: 1, perPage: 100, skip: 0 },
      10,
    );
    expect(got).toEqual({ items: [], next: { part: 0, page: MAX_HOST_PAGES_PER_ANSWER + 1, perPage: 100, skip: 0 } });
    expect(reads).toBe(MAX_HOST_PAGES_PER_ANSWER);
  });
});
