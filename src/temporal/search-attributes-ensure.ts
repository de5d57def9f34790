import type { NativeConnection } from '@temporalio/worker';
import { temporal } from '@temporalio/proto';
import { SEARCH_ATTRIBUTES } from './search-attributes';

const TYPES = temporal.api.enums.v1.IndexedValueType;
const TYPE_OF: Record<string, temporal.api.enums.v1.IndexedValueType> = {
  Keyword: TYPES.INDEXED_VALUE_TYPE_KEYWORD,
  Text: TYPES.INDEXED_VALUE_TYPE_TEXT,
  Int: TYPES.INDEXED_VALUE_TYPE_INT,
  Bool: TYPES.INDEXED_VALUE_TYPE_BOOL,
  Datetime: TYPES.INDEXED_VALUE_TYPE_DATETIME,
};

/**
 * Registers the project's custom search attributes on a Temporal server that lacks them (a shared
 * cluster, docker-compose). The dev server started by the launcher already has them.
 */
export async function ensureSearchAttributes(connection: NativeConnection, namespace: string): Promise<string[]> {
  const existing = await connection.operatorService.listSearchAttributes({ namespace });
  const known = new Set(Object.keys(existing.customAttributes ?? {}));
  const missing = Object.entries(SEARCH_ATTRIBUTES).filter(([name]) => !known.has(name));
  if (missing.length === 0) return [];
  await connection.operatorService.addSearchAttributes({
    namespace,
    searchAttributes: Object.fromEntries(missing.map(([name, type]) => [name, TYPE_OF[type]!])),
  });
  return missing.map(([name]) => name);
}
