/** GET .../events/search, .../events/count and .../events?id=: filters, cursors, 422s, ownership. */
import { encodeCursor } from '../src/schemas/page-cursor';
import { startTestApi, type TestApi } from './helpers/api';
import { messages, sample } from './helpers/event-samples';

describe('event search', () => {
  let t: TestApi;
  let key: string;
  let conversationId: string;
  let sessionKey: string;
  const base = Date.parse('2024-05-01T12:00:00Z');
  const search = (q = '') => t.request('GET', `/api/v1/conversation/${conversationId}/events/search${q}`, { key });

  beforeAll(async () => {
    t = await startTestApi();
    let userId: string;
    ({ userId, key } = await t.newUser());
    ({ conversationId, sessionKey } = await t.newConversation(userId));
    // 30 messages a second apart, 5 pauses sharing one timestamp (ties), an observation.
    const evs = [
      ...messages(30, base, 1000),
      ...Array.from({ length: 5 }, () => sample('PauseEvent', { timestamp: '2024-05-01T12:00:10Z' })),
      sample('ObservationEvent', { timestamp: '2024-05-01T12:00:20.5+00:00' }),
    ];
    expect((await t.ingest(conversationId, sessionKey, evs)).status).toBe(200);
  });
  afterAll(() => t.close());

  const walk = async (q: string) => {
    const ids: string[] = [];
    let pageId: string | null = null;
    let pages = 0;
    do {
      const r: { status: number; body: any } = await search(`?${q}${pageId ? `&page_id=${pageId}` : ''}`);
      expect(r.status).toBe(200);
      ids.push(...r.body.items.map((e: { id: string }) => e.id));
      pageId = r.body.next_page_id;
      pages++;
    } while (pageId);
    return { ids, pages };
  };

  it('returns an EventPage in time order, ties in append order, with defaults served', async () => {
    const r = await search();
    expect(r.status).toBe(200);
    expect(r.body.items).toHaveLength(36);
    expect(r.body.next_page_id).toBeNull();
    const times = r.body.items.map((e: { timestamp: string }) => Date.parse(e.timestamp));
    expect([...times].sort((a, b) => a - b)).toEqual(times);
    const pauses = r.body.items.filter((e: { kind: string }) => e.kind === 'PauseEvent');
    expect(pauses.map((p: { source: string; parent_id: null }) => [p.source, p.parent_id])).toEqual(
      Array(5).fill(['user', null]),
    );
  });

  it('pages with limit; next_page_id is null exactly when nothing follows', async () => {
    const all = (await search()).body.items.map((e: { id: string }) => e.id);
    const { ids, pages } = await walk('limit=7');
    expect(ids).toEqual(all);
    expect(pages).toBe(6);
    const exact = await search('?limit=36');
    expect(exact.body.next_page_id).toBeNull();
    const oneShort = await search('?limit=35');
    expect(oneShort.body.next_page_id).not.toBeNull();
  });

  it('TIMESTAMP_DESC is the exact reverse, paged too', async () => {
    const asc = (await walk('limit=100')).ids;
    const desc = (await walk('limit=4&sort_order=TIMESTAMP_DESC')).ids;
    expect(desc).toEqual([...asc].reverse());
  });

  it('filters by kind and by time range ([gte, lt), naive times read as UTC)', async () => {
    const pauses = await search('?kind__eq=PauseEvent');
    expect(pauses.body.items).toHaveLength(5);
    const window = await search('?timestamp__gte=2024-05-01T12:00:05Z&timestamp__lt=2024-05-01T12:00:10');
    expect(window.body.items.map((e: any) => e.timestamp)).toEqual(
      [5, 6, 7, 8, 9].map((s) => new Date(base + s * 1000).toISOString()),
    );
    const zoned = await search('?timestamp__gte=2024-05-01T14:00:20%2B02:00&kind__eq=ObservationEvent');
    expect(zoned.body.items).toHaveLength(1);
    const c = await t.request(
      'GET',
      `/api/v1/conversation/${conversationId}/events/count?kind__eq=MessageEvent&timestamp__lt=2024-05-01T12:00:10Z`,
      { key },
    );
    expect(c).toMatchObject({ status: 200, body: 10 });
    const all = await t.request('GET', `/api/v1/conversation/${conversationId}/events/count`, { key });
    expect(all.body).toBe(36);
  });

  it('pages never repeat or skip while events are appended between reads', async () => {
    const c = await t.newConversation(
      (await t.users.findByEmail((await t.request('GET', '/api/v1/users/me', { key })).body.email))!.id,
    );
    const first = messages(20, base, 1000);
    await t.ingest(c.conversationId, c.sessionKey, first);
    const seen: string[] = [];
    let pageId: string | null = null;
    const appended: string[] = [];
    for (let i = 0; i < 20; i++) {
      const r: { body: any } = await t.request(
        'GET',
        `/api/v1/conversation/${c.conversationId}/events/search?limit=3${pageId ? `&page_id=${pageId}` : ''}`,
        { key },
      );
      seen.push(...r.body.items.map((e: { id: string }) => e.id));
      // Later events (after everything so far), appended between page reads.
      const more = messages(2, base + 100_000 + i * 10_000, 1000);
      appended.push(...more.map((e) => e.id as string));
      await t.ingest(c.conversationId, c.sessionKey, more);
      pageId = r.body.next_page_id;
      if (!pageId) break;
    }
    expect(new Set(seen).size).toBe(seen.length);
    expect(seen.slice(0, 20)).toEqual(first.map((e) => e.id));
    expect(seen.slice(20)).toEqual(appended.slice(0, seen.length - 20));
  });

  it('gets events by id in the order asked, null for a missing one', async () => {
    const items = (await search('?limit=3')).body.items;
    const ids = [items[2].id, 'missing-id', items[0].id];
    const r = await t.request(
      'GET',
      `/api/v1/conversation/${conversationId}/events?${ids.map((i) => `id=${i}`).join('&')}`,
      { key },
    );
    expect(r.status).toBe(200);
    expect(r.body).toEqual([items[2], null, items[0]]);
    const none = await t.request('GET', `/api/v1/conversation/${conversationId}/events`, { key });
    expect(none.status).toBe(422);
    expect(none.body.detail[0]).toMatchObject({ loc: ['query', 'id'], type: 'missing' });
    const many = await t.request(
      'GET',
      `/api/v1/conversation/${conversationId}/events?${Array.from({ length: 101 }, (_, i) => `id=${i}`).join('&')}`,
      { key },
    );
    expect(many.status).toBe(422);
    expect(many.body.detail[0]).toMatchObject({ loc: ['query', 'id'], type: 'too_long' });
  });

  it.each([
    ['kind__eq=NotAKind', 'kind__eq', 'enum'],
    ['timestamp__gte=yesterday', 'timestamp__gte', 'datetime_from_date_parsing'],
    ['timestamp__lt=2024-02-30T00:00:00Z', 'timestamp__lt', 'datetime_from_date_parsing'],
    ['sort_order=NEWEST', 'sort_order', 'enum'],
    ['limit=0', 'limit', 'greater_than'],
    ['limit=101', 'limit', 'less_than_equal'],
    ['limit=abc', 'limit', 'int_parsing'],
    ['page_id=bm9wZQ', 'page_id', 'value_error'],
    [`page_id=${encodeCursor('api-keys', [1, 'x'])}`, 'page_id', 'value_error'],
    [`page_id=${encodeCursor('events', ['not a time', 3])}`, 'page_id', 'value_error'],
    [`page_id=${encodeCursor('events', ['2024-05-01T12:00:00.000000Z', -1])}`, 'page_id', 'value_error'],
  ])('422 for %s', async (q, name, type) => {
    const r = await search(`?${q}`);
    expect(r.status).toBe(422);
    expect(r.body.detail).toEqual([expect.objectContaining({ loc: ['query', name], type })]);
  });

  it("404 for a conversation that does not exist or is someone else's", async () => {
    const stranger = await t.newUser();
    for (const path of ['events/search', 'events/count', 'events?id=x']) {
      const foreign = await t.request('GET', `/api/v1/conversation/${conversationId}/${path}`, { key: stranger.key });
      expect(foreign.status).toBe(404);
      expect(foreign.body).toEqual({ detail: 'Conversation not found' });
      const missing = await t.request('GET', `/api/v1/conversation/nope/${path}`, { key });
      expect(missing.status).toBe(404);
    }
    expect((await t.request('GET', `/api/v1/conversation/${conversationId}/events/search`)).status).toBe(401);
  });
});
