/** The webhook: all-or-nothing batches, idempotent retries, contiguous seq, the cap, session-key auth. */
import pino from 'pino';
import { EventIngest } from '../src/events/ingest';
import { freePort } from '../src/process/net';
import { EVENT_KINDS, EventSchema, type Event } from '../src/schemas/events';
import type { EventsStore } from '../src/store/events-store';
import { startTestApi, type TestApi } from './helpers/api';
import { testConfig } from './helpers/env';
import { messages, sample } from './helpers/event-samples';
import { eventually } from './helpers/eventually';
import { connect } from './helpers/ws-client';
import { setTimeout as sleep } from 'node:timers/promises';

describe('event ingest', () => {
  let t: TestApi;
  let userId: string;
  let userKey: string;
  let metricsUrl: string;
  beforeAll(async () => {
    const address = `127.0.0.1:${await freePort()}`;
    metricsUrl = `http://${address}/metrics`;
    t = await startTestApi(testConfig({ MAX_EVENTS_PER_CONVERSATION: '30', METRICS_ADDRESS: address }));
    ({ userId, key: userKey } = await t.newUser());
  });
  afterAll(() => t.close());

  const stored = (conversationId: string) =>
    t.database.db.collection('events').find({ conversation_id: conversationId }).sort({ seq: 1 }).toArray();

  it('stores every kind but StreamingDeltaEvent, numbered 1..n, as validated JSON text with defaults', async () => {
    const c = await t.newConversation(userId);
    const batch = EVENT_KINDS.map((kind) => sample(kind));
    const r = await t.ingest(c.conversationId, c.sessionKey, batch);
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ stored: 18, already_stored: 0, published_only: 1 });
    const docs = await stored(c.conversationId);
    expect(docs.map((d) => d.seq)).toEqual(Array.from({ length: 18 }, (_, i) => i + 1));
    expect(docs.map((d) => d.kind)).toEqual(EVENT_KINDS.filter((k) => k !== 'StreamingDeltaEvent'));
    const acp = JSON.parse(docs.find((d) => d.kind === 'ACPToolCallEvent')!.json);
    expect(acp).toMatchObject({ is_error: false, source: 'agent', parent_id: null });
    expect(docs[0]!.timestamp).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
  });

  it("publishes a full_state snapshot (the agent server's, on a subscription) without storing it: the log stays the runtime's own", async () => {
    const c = await t.newConversation(userId);
    const snapshot = sample('ConversationStateUpdateEvent', {
      key: 'full_state',
      value: { execution_status: 'idle', persistence_dir: '/somewhere/of/the/runtime' },
    });
    // A subscriber that is there when it arrives gets it live.
    const live = connect(`${t.url.replace(/^http/, 'ws')}/api/v1/conversation/${c.conversationId}/events/socket`, {
      'X-Access-Token': userKey,
    });
    await live.opened;
    await eventually(async () => expect(t.api.hub.subscriberCount).toBe(1), { timeoutMs: 5000, intervalMs: 20 });
    const r = await t.ingest(c.conversationId, c.sessionKey, [snapshot, ...messages(1)]);
    expect(r).toMatchObject({ status: 200, body: { stored: 1, already_stored: 0, published_only: 1 } });
    expect((await stored(c.conversationId)).map((d) => d.kind)).toEqual(['MessageEvent']);
    const got = await live.waitFor(2);
    expect(got.map((e) => [e.kind, e.key ?? null])).toEqual([
      ['ConversationStateUpdateEvent', 'full_state'],
      ['MessageEvent', null],
    ]);
    live.ws.close();
  });

  it('one invalid event rejects the whole batch with its loc; nothing is stored', async () => {
    const c = await t.newConversation(userId);
    const batch = [...messages(3), sample('AgentErrorEvent', { tool_name: undefined }), ...messages(2)];
    delete (batch[3] as Record<string, unknown>).tool_name;
    const r = await t.ingest(c.conversationId, c.sessionKey, batch);
    expect(r.status).toBe(422);
    expect(r.body.detail).toEqual([expect.objectContaining({ loc: ['body', 3, 'tool_name'], type: 'missing' })]);
    expect(await stored(c.conversationId)).toHaveLength(0);
  });

  it('a retried batch stores nothing twice and says so', async () => {
    const c = await t.newConversation(userId);
    const first = messages(5);
    expect((await t.ingest(c.conversationId, c.sessionKey, first)).body).toEqual({
      stored: 5,
      already_stored: 0,
      published_only: 0,
    });
    const retry = [...first, ...messages(2)];
    expect((await t.ingest(c.conversationId, c.sessionKey, retry)).body).toEqual({
      stored: 2,
      already_stored: 5,
      published_only: 0,
    });
    const dupInBatch = messages(1);
    expect((await t.ingest(c.conversationId, c.sessionKey, [...dupInBatch, ...dupInBatch])).body).toEqual({
      stored: 1,
      already_stored: 1,
      published_only: 0,
    });
    const docs = await stored(c.conversationId);
    expect(docs.map((d) => d.seq)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    expect(new Set(docs.map((d) => d.id)).size).toBe(8);
  });

  it('concurrent batches for one conversation: contiguous seq, nothing lost or doubled', async () => {
    const c = await t.newConversation(userId);
    const batches = Array.from({ length: 6 }, () => messages(4));
    const results = await Promise.all(batches.map((b) => t.ingest(c.conversationId, c.sessionKey, b)));
    expect(results.map((r) => r.status)).toEqual([200, 200, 200, 200, 200, 200]);
    const docs = await stored(c.conversationId);
    expect(docs.map((d) => d.seq)).toEqual(Array.from({ length: 24 }, (_, i) => i + 1));
    expect(new Set(docs.map((d) => d.id))).toEqual(new Set(batches.flat().map((e) => e.id)));
  });

  it('refuses a batch that would pass the cap, whole, naming the cap', async () => {
    const c = await t.newConversation(userId);
    expect((await t.ingest(c.conversationId, c.sessionKey, messages(25))).status).toBe(200);
    const over = await t.ingest(c.conversationId, c.sessionKey, messages(6));
    expect(over.status).toBe(409);
    expect(over.body.detail).toContain('cap of 30 events per conversation (MAX_EVENTS_PER_CONVERSATION)');
    expect(await stored(c.conversationId)).toHaveLength(25);
    expect((await t.ingest(c.conversationId, c.sessionKey, messages(5))).body.stored).toBe(5);
    // A retry of stored events is still answered at the cap: nothing new is being added.
    expect((await t.ingest(c.conversationId, c.sessionKey, [sample('StreamingDeltaEvent')])).status).toBe(200);
  });

  it('needs the session key of that conversation', async () => {
    const c = await t.newConversation(userId);
    const other = await t.newConversation(userId);
    const missing = await t.request('POST', `/api/v1/webhooks/events/${c.conversationId}`, { body: messages(1) });
    expect(missing.status).toBe(401);
    expect(missing.body).toEqual({ detail: 'Missing X-Session-API-Key header' });
    const wrong = await t.ingest(c.conversationId, other.sessionKey, messages(1));
    expect(wrong.status).toBe(401);
    const unknown = await t.ingest('no-such-conversation', c.sessionKey, messages(1));
    expect(unknown.status).toBe(401);
    // A user's API key is not a session key.
    const { key } = await t.newUser();
    const asUser = await t.ingest(c.conversationId, key, messages(1));
    expect(asUser.status).toBe(401);
    expect(await stored(c.conversationId)).toHaveLength(0);
  });

  it('takes what a newer runtime adds without refusing the batch: unknown kinds and fields are dropped, counted, and the rest stored', async () => {
    const c = await t.newConversation(userId);
    const [first, second] = messages(2);
    const batch = [
      { ...first, classification: 'transient', critic_score: 0.5 },
      { kind: 'SomethingNewEvent', id: 'new-1', source: 'agent', detail: 'from a newer agent server' },
      { kind: 'constructor' }, // names an object's own properties would have: names like any other
      { kind: '__proto__' },
      // Deeper, in a closed shape (a text block): found by validation, taken out, validated again.
      {
        ...second,
        extended_content: [
          { type: 'text', text: 'more', enable_truncation: true },
          { type: 'text', text: 'and more' },
        ],
      },
    ];
    const scrape = async () => (await fetch(metricsUrl)).text();
    const before = await scrape();
    const r = await t.ingest(c.conversationId, c.sessionKey, batch);
    expect(r).toMatchObject({ status: 200, body: { stored: 2, already_stored: 0, published_only: 0 } });
    const docs = await stored(c.conversationId);
    expect(docs.map((d) => d.id)).toEqual([first!.id, second!.id]);
    const kept = JSON.parse(docs[0]!.json);
    expect(kept).not.toHaveProperty('classification');
    expect(kept).not.toHaveProperty('critic_score');
    expect(EventSchema.parse(kept)).toMatchObject({ id: first!.id, kind: 'MessageEvent' });
    expect(JSON.parse(docs[1]!.json).extended_content).toEqual([
      { type: 'text', text: 'more', cache_prompt: false },
      { type: 'text', text: 'and more', cache_prompt: false },
    ]);
    const dropped = (text: string, what: string) =>
      Number(new RegExp(`^agent_control_ingest_dropped_total\\{what="${what}"\\} (\\d+)`, 'm').exec(text)?.[1] ?? 0);
    const after = await scrape();
    expect(dropped(after, 'event') - dropped(before, 'event')).toBe(3);
    expect(dropped(after, 'field') - dropped(before, 'field')).toBe(3);
    // A known field with a wrong value is still a broken runtime: the batch is refused whole.
    const wrong = await t.ingest(c.conversationId, c.sessionKey, [{ ...messages(1)[0], source: 'somewhere' }]);
    expect(wrong.status).toBe(422);
    // So is one deep down, even beside an unknown field that alone would have been dropped; its 422 names the wrong value.
    const [deep] = messages(1);
    const both = await t.ingest(c.conversationId, c.sessionKey, [
      { ...deep, extended_content: [{ type: 'text', text: 7, enable_truncation: true }] },
    ]);
    expect(both.status).toBe(422);
    expect(both.body.detail.map((d: any) => d.loc)).toContainEqual(['body', 0, 'extended_content', 0, 'text']);
    expect(await stored(c.conversationId)).toHaveLength(2);
  });

  it('rejects a body that is not an array of events', async () => {
    const c = await t.newConversation(userId);
    const r = await t.ingest(c.conversationId, c.sessionKey, { kind: 'PauseEvent' });
    expect(r.status).toBe(422);
    expect(r.body.detail[0]).toMatchObject({ loc: ['body'], type: 'list_type' });
  });

  describe('the ingest lease', () => {
    const leases = () => t.database.db.collection<{ _id: string; token: string; expires_at: Date }>('ingest_leases');

    it('one left by a process that died blocks its conversation only until it expires (seconds)', async () => {
      const c = await t.newConversation(userId);
      await leases().insertOne({
        _id: c.conversationId,
        token: 'dead-holder',
        expires_at: new Date(Date.now() + 2000),
      });
      const started = Date.now();
      const r = await t.ingest(c.conversationId, c.sessionKey, messages(2));
      expect(r.status).toBe(200);
      expect(Date.now() - started).toBeGreaterThanOrEqual(1500);
      expect(Date.now() - started).toBeLessThan(8000);
      expect(await leases().countDocuments({ _id: c.conversationId })).toBe(0);
    });

    it('its holder renews it: a batch slower than the lease keeps it, and a second writer waits its turn', async () => {
      const c = await t.newConversation(userId);
      const { events } = t.stores;
      // The real store, with each append held back for longer than the lease lasts.
      const slow = Object.assign(Object.create(events) as EventsStore, {
        append: async (docs: Parameters<EventsStore['append']>[0]) => {
          await sleep(1500);
          return events.append(docs);
        },
      });
      const ingest = (store: EventsStore) =>
        new EventIngest({
          events: store,
          conversations: t.conversations,
          live: { publish: async () => undefined },
          log: pino({ level: 'silent' }),
          maxEventsPerConversation: 100,
          leaseTtlMs: 600,
          leaseWaitMs: 10_000,
        });
      const parse = (batch: Record<string, unknown>[]) => batch.map((e) => EventSchema.parse(e) as Event);
      const first = ingest(slow).ingest(c.conversationId, parse(messages(3)));
      await sleep(200);
      const second = await ingest(events).ingest(c.conversationId, parse(messages(2)));
      expect(second.stored).toBe(2);
      expect((await first).stored).toBe(3);
      // Had the lease lapsed, the second writer would have taken seqs 1-2 and the first been refused.
      expect((await stored(c.conversationId)).map((d) => d.seq)).toEqual([1, 2, 3, 4, 5]);
      expect(
        (await stored(c.conversationId))
          .slice(0, 3)
          .map((d) => JSON.parse(d.json as string).llm_message.content[0].text),
      ).toEqual(['m0', 'm1', 'm2']);
    });

    it('a batch whose read of the conversation record fails gives the lease back (no 5 s block of the conversation)', async () => {
      const c = await t.newConversation(userId);
      // The real store, with the record's read failing once (the database dropped the connection).
      const failing = Object.assign(Object.create(t.conversations) as typeof t.conversations, {
        appendState: async () => {
          throw new Error('connection closed');
        },
      });
      const ingest = new EventIngest({
        events: t.stores.events,
        conversations: failing,
        live: { publish: async () => undefined },
        log: pino({ level: 'silent' }),
        maxEventsPerConversation: 100,
      });
      await expect(
        ingest.ingest(
          c.conversationId,
          messages(2).map((e) => EventSchema.parse(e) as Event),
        ),
      ).rejects.toThrow('connection closed');
      expect(await leases().countDocuments({ _id: c.conversationId })).toBe(0);
      const started = Date.now();
      expect((await t.ingest(c.conversationId, c.sessionKey, messages(2))).body).toMatchObject({ stored: 2 });
      expect(Date.now() - started).toBeLessThan(3000);
    });
  });
});
