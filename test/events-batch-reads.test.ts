/**
 * Reads of the event log by batches of ids: one query per batch however large (a retried batch, a batch
 * get), counted with the driver's command monitoring; and every read of the log within its time budget,
 * a read past it answered 503 with Retry-After.
 */
import { MongoClient, type CommandStartedEvent, type Db } from 'mongodb';
import pino from 'pino';
import { createStores } from '../src/composition';
import { EventIngest } from '../src/events/ingest';
import { EventSchema } from '../src/schemas/events';
import { DatabaseBusyError } from '../src/store/errors';
import { EventsStore } from '../src/store/events-store';
import { startTestApi, type TestApi } from './helpers/api';
import { testConfig } from './helpers/env';
import { messages } from './helpers/event-samples';

/** A client of its own on the test database that records every command it sends. */
function monitoredClient(t: TestApi) {
  const client = new MongoClient(t.config.mongo.uri!, { monitorCommands: true });
  const sent: { name: string; collection: unknown }[] = [];
  client.on('commandStarted', (e: CommandStartedEvent) =>
    sent.push({
      name: e.commandName,
      collection: e.commandName === 'getMore' ? e.command.collection : e.command[e.commandName],
    }),
  );
  const onEvents = () => sent.filter((c) => c.collection === 'events').map((c) => c.name);
  return { client, db: client.db(t.config.mongo.db), sent, onEvents, reset: () => void sent.splice(0) };
}

describe('batch reads of the event log', () => {
  let t: TestApi;
  let userId: string;
  let key: string;
  let m: ReturnType<typeof monitoredClient>;
  beforeAll(async () => {
    t = await startTestApi(testConfig());
    ({ userId, key } = await t.newUser());
    m = monitoredClient(t);
  });
  afterAll(async () => {
    await m.client.close();
    await t.close();
  });

  const ingestVia = (db: Db) => {
    const { events, conversations } = createStores(db);
    return new EventIngest({
      events,
      conversations,
      live: { publish: () => Promise.resolve() },
      log: pino({ level: 'silent' }),
      maxEventsPerConversation: 1_000_000,
    });
  };

  it('a resent batch of 2,000 stored events costs one query of the log, not one per event', async () => {
    const c = await t.newConversation(userId);
    const batch = messages(2000);
    expect((await t.ingest(c.conversationId, c.sessionKey, batch)).body).toEqual({
      stored: 2000,
      already_stored: 0,
      published_only: 0,
    });
    const parsed = EventSchema.array().parse(batch);
    const ingest = ingestVia(m.db);

    m.reset();
    expect(await ingest.ingest(c.conversationId, parsed)).toEqual({
      stored: 0,
      already_stored: 2000,
      published_only: 0,
    });
    // A resent batch goes back in time from the log's end: one query finds which of the 2,000 are stored
    // before anything is inserted (or the log marked unordered).
    expect(m.onEvents()).toEqual(['find']);
    expect(m.sent.length).toBeLessThan(10);

    // Resent with 10 new events at the end: the new ones are stored after the rest, still one query.
    const more = EventSchema.array().parse(messages(10));
    m.reset();
    expect(await ingest.ingest(c.conversationId, [...parsed, ...more])).toEqual({
      stored: 10,
      already_stored: 2000,
      published_only: 0,
    });
    expect(m.onEvents()).toEqual(['find', 'insert']);
    const seqs = await t.database.db
      .collection('events')
      .find({ conversation_id: c.conversationId, seq: { $gt: 2000 } }, { projection: { _id: 0, id: 1, seq: 1 } })
      .sort({ seq: 1 })
      .toArray();
    expect(seqs).toEqual(more.map((e, i) => ({ id: e.id, seq: 2001 + i })));
  });

  it('a batch get of 100 ids is one query, answered in the order asked with null for unknown ids', async () => {
    const c = await t.newConversation(userId);
    const other = await t.newConversation(userId);
    const evs = messages(150);
    const foreign = messages(1);
    await t.ingest(c.conversationId, c.sessionKey, evs);
    await t.ingest(other.conversationId, other.sessionKey, foreign);
    // 97 stored ids (one asked twice), an unknown id and another conversation's event.
    const ids = [
      ...evs.slice(0, 97).map((e) => e.id as string),
      evs[3]!.id as string,
      'no-such-event',
      foreign[0]!.id as string,
    ];
    expect(ids).toHaveLength(100);

    m.reset();
    const found = await createStores(m.db).events.getByIds(c.conversationId, ids);
    expect(m.onEvents()).toEqual(['find']);
    expect(found.size).toBe(97);

    const r = await t.request(
      'GET',
      `/api/v1/conversation/${c.conversationId}/events?${ids.map((id) => `id=${id}`).join('&')}`,
      { key },
    );
    expect(r.status).toBe(200);
    expect(r.body.map((e: { id: string } | null) => e?.id ?? null)).toEqual([...ids.slice(0, 98), null, null]);
  });
});

describe('time budget of the event log reads', () => {
  let t: TestApi;
  let key: string;
  let conversationId: string;
  beforeAll(async () => {
    // A budget of 1 ms: every read that scans the log runs out of it (writes are not bounded by it).
    t = await startTestApi(testConfig({ EVENT_QUERY_TIMEOUT_MS: '1' }));
    const user = await t.newUser();
    key = user.key;
    const c = await t.newConversation(user.userId);
    conversationId = c.conversationId;
    // Batches in time order (a batch going back would have its stored events looked up, a read under the budget).
    const start = Date.parse('2025-01-01T00:00:00Z');
    for (let i = 0; i < 2; i++)
      expect((await t.ingest(c.conversationId, c.sessionKey, messages(2000, start + i * 10_000))).status).toBe(200);
  });
  afterAll(() => t.close());

  it('the store turns MaxTimeMSExpired into DatabaseBusyError', async () => {
    const store = new EventsStore(t.database.db, { queryTimeoutMs: 1 });
    await expect(store.count({ conversationId })).rejects.toBeInstanceOf(DatabaseBusyError);
    await expect(store.search({ conversationId }, { descending: false, limit: 10 })).rejects.toBeInstanceOf(
      DatabaseBusyError,
    );
    await expect(store.getByIds(conversationId, ['a', 'b'])).rejects.toBeInstanceOf(DatabaseBusyError);
    // With the default budget the same reads answer.
    expect(await t.stores.events.count({ conversationId })).toBe(4000);
  });

  it.each([
    // (A count without filters reads no events: the conversation's record holds it.)
    ['count', '/events/count?kind__eq=MessageEvent'],
    // (A page of an ordered log without a kind filter reads a block or two: kind makes it scan.)
    ['search', '/events/search?limit=5&kind__eq=MessageEvent'],
    ['batch get', '/events?id=a&id=b'],
  ])('a %s past its budget is a 503 with Retry-After, not a 500', async (_, path) => {
    const r = await t.request('GET', `/api/v1/conversation/${conversationId}${path}`, { key });
    expect(r.status).toBe(503);
    expect(r.headers.get('retry-after')).toBe('5');
    expect(r.body).toEqual({ detail: expect.stringContaining('busy') });
  });
});
