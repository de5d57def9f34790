import type { NativeConnection } from '@temporalio/worker';
import { temporal } from '@temporalio/proto';
import { SEARCH_ATTRIBUTES } from './search-attributes';
import { setTimeout as sleep } from 'node:timers/promises';

const TYPES = temporal.api.enums.v1.IndexedValueType;
const TYPE_OF: Record<string, temporal.api.enums.v1.IndexedValueType> = {
  Keyword: TYPES.INDEXED_VALUE_TYPE_KEYWORD,
  Text: TYPES.INDEXED_VALUE_TYPE_TEXT,
  Int: TYPES.INDEXED_VALUE_TYPE_INT,
  Bool: TYPES.INDEXED_VALUE_TYPE_BOOL,
  Datetime: TYPES.INDEXED_VALUE_TYPE_DATETIME,
};

/**
 * gRPC codes of a cluster still coming up: the namespace not registered yet (NOT_FOUND; on SQL visibility
 * the server answers it as UNAVAILABLE), the server not answering, a race between two registrations.
 */
const NOT_YET: ReadonlySet<number> = new Set([4 /* DEADLINE_EXCEEDED */, 5 /* NOT_FOUND */, 14 /* UNAVAILABLE */]);
const notYet = (e: unknown) => NOT_YET.has((e as { code?: unknown }).code as number);

export interface EnsureOptions {
  /** Told once in a while why it waits. */
  log?: (line: string) => void;
  /** Longest wait between tries (ms). @default 5000 */
  maxWaitMs?: number;
  /** Gives up after this long (ms). @default forever: a worker waits for its cluster */
  giveUpMs?: number;
}

/**
 * Registers the project's custom search attributes on a Temporal server that lacks them (a cluster,
 * docker-compose); the dev server started by the launcher already has them. It waits for a cluster that
 * is still coming up (the namespace not registered yet, the frontend not answering) and for another
 * worker registering them at the same moment (the server answers that race as Unavailable): it looks
 * again, and adds only what is still missing. Answers the names it added.
 */
export async function ensureSearchAttributes(
  connection: NativeConnection,
  namespace: string,
  options: EnsureOptions = {},
): Promise<string[]> {
  const added: string[] = [];
  const started = Date.now();
  for (let attempt = 1; ; attempt++) {
    try {
      const existing = await connection.operatorService.listSearchAttributes({ namespace });
      const known = new Set(Object.keys(existing.customAttributes ?? {}));
      const missing = Object.entries(SEARCH_ATTRIBUTES).filter(([name]) => !known.has(name));
      if (missing.length === 0) return added;
      await connection.operatorService.addSearchAttributes({
        namespace,
        searchAttributes: Object.fromEntries(missing.map(([name, type]) => [name, TYPE_OF[type]!])),
      });
      added.push(...missing.map(([name]) => name).filter((name) => !added.includes(name)));
    } catch (e) {
      if (!notYet(e) || (options.giveUpMs !== undefined && Date.now() - started > options.giveUpMs)) throw e;
      if (attempt === 1 || attempt % 10 === 0)
        options.log?.(
          `search attributes of namespace ${namespace} not registered yet (${(e as Error).message}); trying again`,
        );
      await sleep(Math.min(options.maxWaitMs ?? 5000, 250 * attempt));
    }
  }
}
