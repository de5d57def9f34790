/**
 * The event-blocks suites' log (test/events-blocks*.test.ts): the api with a user and the stores over its
 * database, events to ingest (three to a timestamp, kinds in turn), and the comparison of every read
 * from blocks with the one sorted query over the conversation.
 *
 * A suite calls `useEventBlocksApi()` inside its describe and imports the bindings below (`t`, `userId`,
 * `key`, `events`, `conversations`) and the checks that use them: the beforeAll it registers assigns them,
 * its afterAll closes the api. Sharing them this way is safe: jest gives each test file its own module
 * registry, so each file has its own instance of this module and of its bindings; and the SWC transform
 * jest uses compiles an import to a property read of the module object at each use, so the file sees the
 * values the beforeAll assigned (live bindings).
 */
import { ConversationsStore } from '../../src/store/conversations-store';
import { eventKey, type EventCursor, type EventFilter, type StoredEvent } from '../../src/store/events-collection';
import { EventsStore } from '../../src/store/events-store';
import { normalizeEventTime } from '../../src/schemas/event-time';
import { startTestApi, type TestApi } from './api';
import { sample } from './event-samples';

export const KINDS = ['MessageEvent', 'ActionEvent', 'ObservationEvent', 'PauseEvent'] as const;

/** `n` events from `start`, three to a timestamp (ties), kinds in turn. */
export function eventsFrom(n: number, start: number, stepMs = 1000): Record<string, unknown>[] {
  return Array.from({ length: n }, (_, i) =>
    sample(KINDS[i % KINDS.length]!, { timestamp: new Date(start + Math.floor(i / 3) * stepMs).toISOString() }),
  );
}

export const base = Date.parse('2025-03-01T08:00:00Z');
/** `s` seconds after `base`, in microseconds as the api writes times. */
export const at = (s: number) => new Date(base + s * 1000).toISOString().replace('Z', '000Z');

/** Every page of a walk: the ids of each and the cursor after it. */
export async function pages(
  filter: EventFilter,
  descending: boolean,
  limit: number,
  read: (after?: EventCursor) => ReturnType<EventsStore['search']>,
) {
  const out: { ids: string[]; last: EventCursor | null }[] = [];
  let after: EventCursor | undefined;
  for (let i = 0; i < 1000; i++) {
    const p = await read(after);
    out.push({ ids: p.jsons.map((j) => (JSON.parse(j) as { id: string }).id), last: p.last });
    if (!p.last) return out;
    after = p.last;
  }
  throw new Error(`${JSON.stringify(filter)}: no end after 1000 pages`);
}

/** The filters to compare: none, a kind, time bounds on ties, bounds outside the log, both bounds. */
export const filtersOf = (conversationId: string): EventFilter[] => [
  { conversationId },
  { conversationId, kind: 'ActionEvent' },
  { conversationId, kind: 'PauseEvent', timestampGte: at(20) },
  { conversationId, timestampGte: at(33) },
  { conversationId, timestampLt: at(33) },
  { conversationId, timestampGte: at(7), timestampLt: at(71) },
  { conversationId, timestampGte: at(-5) },
  { conversationId, timestampGte: at(5000) },
  { conversationId, timestampLt: at(0) },
  { conversationId, kind: 'MessageEvent', timestampGte: at(40), timestampLt: at(41) },
];

/** The api `useEventBlocksApi` started. */
export let t: TestApi;
/** The user the suites' conversations are made for, and their API key. */
export let userId: string;
export let key: string;
/** The stores over the api's database. */
export let events: EventsStore;
export let conversations: ConversationsStore;

/**
 * Starts the api and a user in a beforeAll of the describe it is called in, assigning the bindings above,
 * and closes it in its afterAll.
 */
export function useEventBlocksApi(): void {
  beforeAll(async () => {
    t = await startTestApi();
    ({ userId, key } = await t.newUser());
    events = new EventsStore(t.database.db);
    conversations = new ConversationsStore(t.database.db);
  });
  afterAll(() => t.close());
}

/** Every query of the layout read both ways: the same pages, cursors, counts and catch-up ranges. */
export async function expectSameAsSorted(conversationId: string, stored: number, recorded = stored) {
  const layout = (await conversations.layout(conversationId))!;
  expect(layout).toMatchObject({ blocks: true, lastSeq: recorded });
  for (const f of filtersOf(conversationId)) {
    for (const descending of [false, true]) {
      for (const limit of [1, 7, 100]) {
        if (limit === 1 && stored > 100) continue; // a page of one over hundreds of events says nothing more
        const inBlocks = await pages(f, descending, limit, (after) =>
          events.search(f, { descending, limit, after }, layout),
        );
        const sorted = await pages(f, descending, limit, (after) => events.search(f, { descending, limit, after }));
        expect({ f, descending, limit, pages: inBlocks }).toEqual({ f, descending, limit, pages: sorted });
      }
    }
    expect({ f, count: await events.count(f, layout) }).toEqual({ f, count: await events.count(f) });
  }
  for (const [after, limit, until] of [
    [0, 500, undefined],
    [0, 37, undefined],
    [99, 2, undefined],
    [150, 100, 260],
    [Math.max(0, stored - 1), 10, undefined],
    [stored, 10, undefined],
  ] as const) {
    expect(await events.range(conversationId, after, limit, until, true)).toEqual(
      await events.range(conversationId, after, limit, until, false),
    );
  }
}

/** A conversation as stored before the block layout: no block on its events, no mark on its record. */
export async function legacyConversation(times: string[]): Promise<{ conversationId: string; sessionKey: string }> {
  const c = await t.newConversation(userId);
  const docs: StoredEvent[] = times.map((ts, i) => {
    const e = sample(KINDS[i % KINDS.length]!, { timestamp: ts });
    return {
      _id: eventKey(c.conversationId, e.id as string),
      conversation_id: c.conversationId,
      id: e.id as string,
      kind: e.kind as StoredEvent['kind'],
      source: 'agent',
      timestamp: normalizeEventTime(ts)!,
      seq: i + 1,
      json: JSON.stringify(e),
    };
  });
  await t.database.db.collection<StoredEvent>('events').insertMany(docs);
  await t.database.db
    .collection('conversations')
    .updateOne({ _id: c.conversationId } as never, { $set: { last_seq: docs.length }, $unset: { event_blocks: '' } });
  return c;
}

/** What a client sees of a conversation: pages both ways, a kind, a window, the counts. */
export async function seen(conversationId: string) {
  const q = async (query: string) => {
    const ids: string[] = [];
    let pageId: string | null = null;
    do {
      const r: { status: number; body: any } = await t.request(
        'GET',
        `/api/v1/conversation/${conversationId}/events/search?${query}${pageId ? `&page_id=${pageId}` : ''}`,
        { key },
      );
      expect(r.status).toBe(200);
      ids.push(...r.body.items.map((e: { id: string }) => e.id));
      pageId = r.body.next_page_id;
    } while (pageId);
    return ids;
  };
  const count = async (query: string) =>
    (await t.request('GET', `/api/v1/conversation/${conversationId}/events/count?${query}`, { key })).body as number;
  return {
    asc: await q('limit=40'),
    desc: await q('limit=33&sort_order=TIMESTAMP_DESC'),
    kind: await q('limit=9&kind__eq=ObservationEvent'),
    window: await q(
      `limit=25&timestamp__gte=${encodeURIComponent(at(10))}&timestamp__lt=${encodeURIComponent(at(60))}`,
    ),
    counts: [
      await count(''),
      await count('kind__eq=PauseEvent'),
      await count(`timestamp__gte=${encodeURIComponent(at(50))}`),
    ],
  };
}
