/**
 * The custom search attributes (keys in the Temporal contract, shared.ts) by their type as the Temporal
 * CLI and server spell it. The launcher passes them to the dev server; the worker registers any that a
 * shared Temporal server lacks.
 */
import type { SearchAttributeType } from '@temporalio/common';
import { SEARCH_ATTRIBUTE_KEYS, type SearchAttributeName } from './shared';

const SERVER_TYPE = {
  TEXT: 'Text',
  KEYWORD: 'Keyword',
  INT: 'Int',
  DOUBLE: 'Double',
  BOOL: 'Bool',
  DATETIME: 'Datetime',
  KEYWORD_LIST: 'KeywordList',
} as const satisfies Record<SearchAttributeType, string>;

type Keys = typeof SEARCH_ATTRIBUTE_KEYS;

export const SEARCH_ATTRIBUTES = Object.fromEntries(
  Object.entries(SEARCH_ATTRIBUTE_KEYS).map(([name, key]) => [name, SERVER_TYPE[key.type]]),
) as {
  readonly [K in SearchAttributeName]: (typeof SERVER_TYPE)[Keys[K]['type']];
};

export type { SearchAttributeName };
