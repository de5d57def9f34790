/**
 * The timed requests of the events bench's main case, each checked against the events it must return
 * (pages, count and batch get of one conversation through the api, the raw driver and one sorted query),
 * and the interleaved rounds that time them.
 */
import type { Collection } from 'mongodb';
import { rawBlockPage } from './event-documents';
import { median, progress } from './report';
import { EVENTS_LISTING } from '../src/schemas/event-queries';
import { encodeCursor } from '../src/schemas/page-cursor';
import type { StoredEvent } from '../src/store/events-collection';

/** Events per page: the limit of every page read here, and the number of ids in the batch get. */
export const PAGE = 100;

const now = () => performance.now();

/** The conversation timed, and where the api and the raw driver read it. */
export interface TimedConversation {
  apiBase: string;
  /** The caller's API key, for the X-Access-Token header. */
  key: string;
  /** The `events` collection the api reads. */
  events: Collection<StoredEvent>;
  conv: string;
  /** Its events (`per` of them), as stored. */
  target: StoredEvent[];
  per: number;
}

type Measure =
  | 'apiFirst'
  | 'rawFirst'
  | 'apiLast'
  | 'rawLast'
  | 'apiCount'
  | 'rawCount'
  | 'apiBatch'
  | 'rawBatch'
  | 'sortedFirst'
  | 'sortedLast';

/** The median time of each measure, in ms. */
export type ConversationMedians = Record<Measure, number>;

/** What the requests must return, from the conversation's stored events. */
function expectedEvents({ target, per }: TimedConversation) {
  return {
    firstPage: target.slice(0, PAGE),
    lastPage: target.slice(per - PAGE),
    picked: target.filter((_, i) => i % (per / PAGE) === 0), // 100 ids spread over the conversation
    /** The event before the last page: the last page's cursor. */
    lastCursorDoc: target[per - PAGE - 1]!,
  };
}
type Expected = ReturnType<typeof expectedEvents>;

function expectIds(what: string, got: readonly unknown[], want: readonly StoredEvent[]): void {
  const bad = got.findIndex((g, i) => (g as { id?: string } | null)?.id !== want[i]?.id);
  if (got.length !== want.length || bad >= 0) {
    throw new Error(
      `${what}: ${got.length} items (expected ${want.length})${bad >= 0 ? `, item ${bad} is not the expected event` : ''}`,
    );
  }
}

/** The requests through the api; each returns its time in ms, after it checked what it got. */
function apiRequests({ apiBase, key, conv, per }: TimedConversation, x: Expected) {
  const headers = { 'X-Access-Token': key };
  const lastCursor = encodeCursor(EVENTS_LISTING, [x.lastCursorDoc.timestamp, x.lastCursorDoc.seq]);
  const idsQuery = x.picked.map((d) => `id=${encodeURIComponent(d.id)}`).join('&');
  const get = async (url: string) => {
    const s = now();
    const r = await fetch(`${apiBase}/api/v1/conversation/${conv}${url}`, {
      headers,
      signal: AbortSignal.timeout(300_000),
    });
    const body: unknown = await r.json();
    const ms = now() - s;
    if (r.status !== 200)
      throw new Error(`GET ${url.slice(0, 80)} answered ${r.status}: ${JSON.stringify(body).slice(0, 300)}`);
    return { ms, body };
  };
  const apiPage = async (last: boolean) => {
    const { ms, body } = await get(`/events/search?limit=${PAGE}${last ? `&page_id=${lastCursor}` : ''}`);
    const page = body as { items: unknown[]; next_page_id: string | null };
    expectIds(`api ${last ? 'last' : 'first'} page`, page.items, last ? x.lastPage : x.firstPage);
    if ((page.next_page_id === null) !== last)
      throw new Error(`api ${last ? 'last' : 'first'} page: next_page_id ${page.next_page_id}`);
    return ms;
  };
  const apiCount = async () => {
    const { ms, body } = await get('/events/count');
    if (body !== per) throw new Error(`api count: ${JSON.stringify(body)}, expected ${per}`);
    return ms;
  };
  const apiBatch = async () => {
    const { ms, body } = await get(`/events?${idsQuery}`);
    expectIds('api batch get', body as unknown[], x.picked);
    return ms;
  };
  return { apiPage, apiCount, apiBatch };
}

/**
 * The same requests with the raw driver on the same collection; each returns its time in ms, after it
 * checked what it got.
 */
function rawRequests({ events, conv, per }: TimedConversation, x: Expected) {
  const filter = { conversation_id: conv };
  const { lastCursorDoc } = x;
  const checkRaw = (what: string, last: boolean, docs: readonly StoredEvent[]) => {
    // One more than a page is asked for, as the api does: the first page has a next one, the last none.
    const items = docs.slice(0, PAGE).map((d) => JSON.parse(d.json) as unknown);
    expectIds(`${what} ${last ? 'last' : 'first'} page`, items, last ? x.lastPage : x.firstPage);
    if ((docs.length === PAGE) !== last)
      throw new Error(`${what} ${last ? 'last' : 'first'} page: ${docs.length} documents for a limit of ${PAGE + 1}`);
  };
  /** The same page raw, the way the block layout reads it. */
  const rawPage = async (last: boolean) => {
    const s = now();
    const docs = await rawBlockPage(events, conv, last ? lastCursorDoc.seq : 0, PAGE);
    const ms = now() - s;
    checkRaw('raw', last, docs);
    return ms;
  };
  /** The same page raw, as one query sorting the conversation (how it was read before the block layout). */
  const sortedPage = async (last: boolean) => {
    const s = now();
    const f: Record<string, unknown> = { ...filter };
    if (last)
      f.$or = [
        { timestamp: { $gt: lastCursorDoc.timestamp } },
        { timestamp: lastCursorDoc.timestamp, seq: { $gt: lastCursorDoc.seq } },
      ];
    const docs = await events
      .find(f, { projection: { _id: 0, timestamp: 1, seq: 1, json: 1 } })
      .sort({ timestamp: 1, seq: 1 })
      .limit(PAGE + 1)
      .toArray();
    const ms = now() - s;
    checkRaw('sorted', last, docs);
    return ms;
  };
  const rawCount = async () => {
    const s = now();
    const n = await events.countDocuments(filter);
    const ms = now() - s;
    if (n !== per) throw new Error(`raw count: ${n}, expected ${per}`);
    return ms;
  };
  const rawBatch = async () => {
    const s = now();
    const docs = await events
      .find(
        { conversation_id: conv, id: { $in: x.picked.map((d) => d.id) } },
        { projection: { _id: 0, id: 1, json: 1 }, batchSize: PAGE + 1 },
      )
      .toArray();
    const ms = now() - s;
    if (docs.length !== PAGE) throw new Error(`raw batch get: ${docs.length} documents, expected ${PAGE}`);
    return ms;
  };
  return { rawPage, sortedPage, rawCount, rawBatch };
}

/** Every request `reps` times after one untimed round; the medians. */
export async function timeConversation(c: TimedConversation, reps: number): Promise<ConversationMedians> {
  const expected = expectedEvents(c);
  const { apiPage, apiCount, apiBatch } = apiRequests(c, expected);
  const { rawPage, sortedPage, rawCount, rawBatch } = rawRequests(c, expected);
  const times: Record<Measure, number[]> = {
    apiFirst: [],
    rawFirst: [],
    apiLast: [],
    rawLast: [],
    apiCount: [],
    rawCount: [],
    apiBatch: [],
    rawBatch: [],
    sortedFirst: [],
    sortedLast: [],
  };
  for (let rep = -1; rep < reps; rep++) {
    // Interleaved, so a slow moment of the machine falls on both sides.
    const round = {
      apiFirst: await apiPage(false),
      rawFirst: await rawPage(false),
      apiLast: await apiPage(true),
      rawLast: await rawPage(true),
      apiCount: await apiCount(),
      rawCount: await rawCount(),
      apiBatch: await apiBatch(),
      rawBatch: await rawBatch(),
      sortedFirst: await sortedPage(false),
      sortedLast: await sortedPage(true),
    };
    if (rep < 0) continue;
    for (const k of Object.keys(times) as Measure[]) times[k].push(round[k]);
    progress(
      `  rep ${rep + 1}: first ${round.apiFirst.toFixed(0)}/${round.rawFirst.toFixed(0)}, last ${round.apiLast.toFixed(0)}/${round.rawLast.toFixed(0)}, ` +
        `count ${round.apiCount.toFixed(0)}/${round.rawCount.toFixed(0)}, batch ${round.apiBatch.toFixed(0)}/${round.rawBatch.toFixed(0)} ms (api/raw)`,
    );
  }
  return Object.fromEntries(Object.entries(times).map(([k, v]) => [k, median(v)])) as ConversationMedians;
}
