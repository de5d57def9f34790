/**
 * The `ls` and `show` commands' common shape: pages of the service read until `--limit`, one line (or JSON
 * object) per item; one item looked up by its id.
 */
import { Command, Option } from 'commander';
import { ProtocolError, type AgentControlClient } from '../client';
import { NotFoundError, UsageError } from './agent-control-errors';
import { json, jsonOption, out } from './agent-control-output';
import { client } from './agent-control-session';

type Page<T> = { items: T[]; next_page_id: string | null };

/** Pages until `limit` items, the last page, or a page that cannot be the service's (empty yet not the last, or a page id seen before). */
async function listPages<T>(fetchPage: (pageId?: string) => Promise<Page<T>>, limit: number, each: (item: T) => void) {
  let pageId: string | undefined;
  let left = limit;
  const seen = new Set<string>();
  do {
    const page = await fetchPage(pageId);
    if (!Array.isArray(page?.items)) throw new ProtocolError('the service', 'a page without items');
    for (const item of page.items.slice(0, left)) each(item);
    left -= page.items.length;
    pageId = page.next_page_id ?? undefined;
    if (pageId && (page.items.length === 0 || seen.has(pageId)))
      throw new ProtocolError(
        'the service',
        `paging does not advance (next_page_id ${JSON.stringify(pageId).slice(0, 80)})`,
      );
    if (pageId) seen.add(pageId);
  } while (pageId && left > 0);
}

const limitOption = () =>
  new Option('-n, --limit <n>', 'at most this many').default(50).argParser((v) => {
    const n = Number(v);
    if (!Number.isInteger(n) || n < 1) throw new UsageError(`--limit wants a positive integer, not ${v}`);
    return n;
  });

/** The request options of one page of a search, newest first. */
export const newestFirst = (pageId: string | undefined, limit: number) => ({
  params: { query: { sort_order: 'CREATED_AT_DESC' as const, page_id: pageId, limit } },
});

/** An `ls`-like command: pages of the service read until `--limit`, one line (or JSON object) per item. */
export function listCommand<T>(
  parent: Command,
  name: string,
  fetchPage: (
    c: AgentControlClient,
    pageId: string | undefined,
    limit: number,
    args: string[],
    o: Record<string, string | undefined>,
  ) => Promise<Page<T>>,
  line: (item: T) => string,
): Command {
  return parent
    .command(name)
    .addOption(limitOption())
    .addOption(jsonOption())
    .action(async (...given: unknown[]) => {
      const cmd = given.at(-1) as Command;
      const o = cmd.opts<{ limit: number; json?: boolean } & Record<string, string | undefined>>();
      const c = client();
      await listPages(
        (pageId) => fetchPage(c, pageId, Math.min(100, o.limit), cmd.processedArgs as string[], o),
        o.limit,
        (x) => (o.json ? json(x) : out(line(x).replace(/\s+/g, ' '))),
      );
    });
}

/** A `show` command: the item with the id given, as indented JSON (`fetchById` answers a list of at most it). */
export function showCommand(
  parent: Command,
  argument: string,
  what: string,
  fetchById: (c: AgentControlClient, id: string) => Promise<unknown>,
): Command {
  return parent
    .command('show')
    .argument(argument)
    .action(async (id: string) => {
      const c = client();
      const found = await fetchById(c, id);
      const item: unknown = Array.isArray(found) ? found[0] : undefined;
      if (!item) throw new NotFoundError(`no ${what} ${id}`);
      json(item, 2);
    });
}
