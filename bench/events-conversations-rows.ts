/**
 * The events bench's main case as rows of its table: the fill, then each request's median through the
 * api beside the raw driver.
 */
import { PAGE, type ConversationMedians } from './events-conversations-requests';

export interface ManyConversationsFigures {
  /** Conversations in the database, events in each, events in all. */
  count: number;
  per: number;
  total: number;
  fillMs: number;
  /** The page query's plan on PostgreSQL, or why it is not known. */
  plan: string;
  reps: number;
  /** The median of each measure. */
  m: ConversationMedians;
}

export function manyConversationsRows({
  count,
  per,
  total,
  fillMs,
  plan,
  reps,
  m,
}: ManyConversationsFigures): string[][] {
  const label = `1 of ${count} conversations of ${per} (${total} events)`;
  const ms = (x: number) => `${x.toFixed(1)} ms`;
  const vs = (a: number, r: number) => `${(a / r).toFixed(2)}x (api/raw time)`;
  return [
    [
      `fill: ${total} events, ${count} conversations of ${per}`,
      '-',
      `${Math.round((total / fillMs) * 1000)} ev/s`,
      `${(fillMs / 1000).toFixed(1)} s`,
      plan,
    ],
    [
      `${label}: first page of ${PAGE}, p50 of ${reps}`,
      ms(m.apiFirst),
      ms(m.rawFirst),
      vs(m.apiFirst, m.rawFirst),
      '<= 50 ms (api); <= 1.5x',
    ],
    [
      `${label}: last page (page_id), p50 of ${reps}`,
      ms(m.apiLast),
      ms(m.rawLast),
      vs(m.apiLast, m.rawLast),
      '<= 50 ms (api); <= 1.5x',
    ],
    [
      `${label}: first / last page as one sorted query (before blocks)`,
      '-',
      `${ms(m.sortedFirst)} / ${ms(m.sortedLast)}`,
      `${(m.sortedFirst / m.apiFirst).toFixed(1)}x the api's first page`,
      '(reference)',
    ],
    [
      `${label}: last / first page`,
      `${(m.apiLast / m.apiFirst).toFixed(2)}x`,
      `${(m.rawLast / m.rawFirst).toFixed(2)}x`,
      '(last/first time)',
      '<= 1.5x (api)',
    ],
    [`${label}: count, p50 of ${reps}`, ms(m.apiCount), ms(m.rawCount), vs(m.apiCount, m.rawCount), '<= 1.5x'],
    [
      `${label}: batch get of ${PAGE} ids, p50 of ${reps}`,
      ms(m.apiBatch),
      ms(m.rawBatch),
      vs(m.apiBatch, m.rawBatch),
      '<= 1.5x',
    ],
  ];
}
