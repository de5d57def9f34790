/**
 * The block layout of the event log (src/store/event-blocks.ts): an ordered log read block by block
 * answers every page, count and catch-up exactly as one sorted query over the conversation does; a
 * batch whose times go back turns the log to sorted reads before it is stored; a log stored before the
 * layout reads the same before and after it is moved onto it.
 */
import { MongoClient, type CommandStartedEvent } from 'mongodb';
import pino from 'pino';
import { migrateConversationLayout, migrateEventLayouts } from '../src/events/event-layout-migration';
import { ConversationsStore } from '../src/store/conversations-store';
import { BLOCK_SIZE } from '../src/store/event-blocks';
import { eventKey, type EventCursor, type EventFilter, type StoredEvent } from '../src/store/events-collection';
import { EventsStore } from '../src/store/events-store';
import { DatabaseBusyError } from '../src/store/errors';
import { normalizeEventTime } from '../src/schemas/event-time';
import { startTestApi, type TestApi } from './helpers/api';
import { sample } from './helpers/event-samples';
import { setTimeout as sleep } from 'node:timers/promises';

const KINDS = ['MessageEvent', 'ActionEvent', 'ObservationEvent', 'PauseEvent'] as const;

/** `n` events from `start`, three to a timestamp (ties), kinds in turn. */
function eventsFrom(n: number, start: number, stepMs = 1000): Record<string, unknown>[] {
  return Array.from({ length: n }, (_, i) =>
    sample(KINDS[i % KINDS.length]!, { timestamp: new Date(start + Math.floor(i / 3) * stepMs).toISOString() }),
  );
}

describe('event log in blocks', () => {
  let t: TestApi;
  let userId: string;
  let key: string;
  let events: EventsStore;
  let conversations: ConversationsStore;
  const base = Date.parse('2025-03-01T08:00:00Z');
  const at = (s: number) => new Date(base + s * 1000).toISOString().replace('Z', '000Z');

  beforeAll(async () => {
    t = await startTestApi();
    ({ userId, key } = await t.newUser());
    events = new EventsStore(t.database.db);
    conversations = new ConversationsStore(t.database.db);
  });
  afterAll(() => t.close());

  /** Every page of a walk: the ids of each and the cursor after it. */
  async function pages(
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
  const filtersOf = (conversationId: string): EventFilter[] => [
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

  /** Every query of the layout read both ways: the same pages, cursors, counts and catch-up ranges. */
  async function expectSameAsSorted(conversationId: string, stored: number, recorded = stored) {
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

  it('an ordered log in blocks reads exactly as one sorted query reads it, page for page', async () => {
    const c = await t.newConversation(userId);
    const all = eventsFrom(3 * BLOCK_SIZE + 45, base);
    for (let i = 0; i < all.length; i += 50)
      expect((await t.ingest(c.conversationId, c.sessionKey, all.slice(i, i + 50))).status).toBe(200);
    const docs = await t.database.db
      .collection<StoredEvent>('events')
      .find({ conversation_id: c.conversationId })
      .sort({ seq: 1 })
      .toArray();
    expect(docs.map((d) => d.block)).toEqual(
      docs.map((d) => `${c.conversationId}/${Math.floor((d.seq - 1) / BLOCK_SIZE)}`),
    );
    expect(await conversations.layout(c.conversationId)).toMatchObject({
      blocks: true,
      ordered: true,
      lastSeq: all.length,
    });
    await expectSameAsSorted(c.conversationId, all.length);

    // Through the api: the walk of pages and the count are the log as stored.
    const walked: string[] = [];
    let pageId: string | null = null;
    do {
      const r: { status: number; body: any } = await t.request(
        'GET',
        `/api/v1/conversation/${c.conversationId}/events/search?limit=100${pageId ? `&page_id=${pageId}` : ''}`,
        { key },
      );
      expect(r.status).toBe(200);
      walked.push(...r.body.items.map((e: { id: string }) => e.id));
      pageId = r.body.next_page_id;
    } while (pageId);
    expect(walked).toEqual(all.map((e) => e.id));
    expect((await t.request('GET', `/api/v1/conversation/${c.conversationId}/events/count`, { key })).body).toBe(
      all.length,
    );
  });

  it('block reads are on where the database answers the block equality from an index, off where it scans (FerretDB on SQLite); off, every read is the sorted one', async () => {
    const backend = process.env.FERRETDB_BACKEND || 'postgresql';
    const probed = new EventsStore(t.database.db);
    expect(await probed.probeBlockReads()).toBe(backend !== 'sqlite');

    const c = await t.newConversation(userId);
    const all = eventsFrom(2 * BLOCK_SIZE + 10, base);
    expect((await t.ingest(c.conversationId, c.sessionKey, all)).status).toBe(200);
    const layout = (await conversations.layout(c.conversationId))!;
    expect(layout).toMatchObject({ blocks: true, ordered: true });
    const client = new MongoClient(t.config.mongo.uri!, { monitorCommands: true });
    const filters: Record<string, unknown>[] = [];
    client.on('commandStarted', (e: CommandStartedEvent) => {
      if (e.commandName === 'find' || e.commandName === 'count' || e.commandName === 'aggregate')
        filters.push((e.command.filter ?? e.command.query ?? e.command.pipeline) as Record<string, unknown>);
    });
    try {
      await client.connect();
      // What `probeBlockReads` learns from FerretDB on SQLite: a database that answers a filter from a scan.
      const off = new EventsStore(client.db(t.database.db.databaseName), { blockReads: false });
      const f: EventFilter = { conversationId: c.conversationId };
      const walk = await pages(f, false, 100, (after) =>
        off.search(f, { descending: false, limit: 100, after }, layout),
      );
      expect(walk.flatMap((p) => p.ids)).toEqual(all.map((e) => e.id));
      expect(await off.count(f, layout)).toBe(all.length);
      expect((await off.range(c.conversationId, 0, 500, undefined, true)).map((e) => e.seq)).toEqual(
        all.map((_, i) => i + 1),
      );
      expect(filters.length).toBeGreaterThan(0);
      expect(filters.filter((q) => JSON.stringify(q).includes('"block"'))).toEqual([]);
    } finally {
      await client.close();
    }
  });

  it('a batch whose times go back turns the log to sorted reads before it is stored, and pages stay in time order', async () => {
    const c = await t.newConversation(userId);
    const first = eventsFrom(150, base);
    expect((await t.ingest(c.conversationId, c.sessionKey, first)).status).toBe(200);
    expect((await conversations.layout(c.conversationId))!.ordered).toBe(true);
    const late = sample('MessageEvent', { timestamp: at(3) }); // older than most of the log
    expect((await t.ingest(c.conversationId, c.sessionKey, [late, ...eventsFrom(10, base + 100_000)])).status).toBe(
      200,
    );
    expect(await conversations.layout(c.conversationId)).toMatchObject({ blocks: true, ordered: false, lastSeq: 161 });
    const r = await t.request('GET', `/api/v1/conversation/${c.conversationId}/events/search?limit=20`, { key });
    const times = r.body.items.map((e: { timestamp: string }) => Date.parse(e.timestamp));
    expect([...times].sort((a, b) => a - b)).toEqual(times);
    expect(r.body.items.map((e: { id: string }) => e.id)).toContain(late.id);
    // Every page through the api, in time order: the log is read sorted from the batch on.
    const walked: { id: string; timestamp: string }[] = [];
    let pageId: string | null = null;
    do {
      const p: { body: any } = await t.request(
        'GET',
        `/api/v1/conversation/${c.conversationId}/events/search?limit=30${pageId ? `&page_id=${pageId}` : ''}`,
        { key },
      );
      walked.push(...p.body.items);
      pageId = p.body.next_page_id;
    } while (pageId);
    expect(walked).toHaveLength(161);
    const walkedTimes = walked.map((e) => Date.parse(e.timestamp));
    expect([...walkedTimes].sort((a, b) => a - b)).toEqual(walkedTimes);
  });

  it('a resent batch, which goes back in time by nature, leaves the log ordered', async () => {
    const c = await t.newConversation(userId);
    const all = eventsFrom(120, base);
    expect((await t.ingest(c.conversationId, c.sessionKey, all)).status).toBe(200);
    // The runtime's outbox resends after a restart: the last 20 again, then 5 new ones.
    const r = await t.ingest(c.conversationId, c.sessionKey, [...all.slice(100), ...eventsFrom(5, base + 1_000_000)]);
    expect(r).toMatchObject({ status: 200, body: { stored: 5, already_stored: 20 } });
    expect(await conversations.layout(c.conversationId)).toMatchObject({ blocks: true, ordered: true, lastSeq: 125 });
  });

  it('readers see the events stored past a recorded end that is behind, and pages of sizes at block edges', async () => {
    for (const size of [0, 1, 100, 200, 250]) {
      const c = await t.newConversation(userId);
      const all = eventsFrom(size, base);
      if (size > 0) expect((await t.ingest(c.conversationId, c.sessionKey, all)).status).toBe(200);
      await expectSameAsSorted(c.conversationId, size);
      if (size < 200) continue;
      // As a writer that died after storing seqs 121.. leaves it: the record says 120.
      await t.database.db
        .collection('conversations')
        .updateOne({ _id: c.conversationId } as never, { $set: { last_seq: 120 } });
      await expectSameAsSorted(c.conversationId, size, 120);
      expect((await t.request('GET', `/api/v1/conversation/${c.conversationId}/events/count`, { key })).body).toBe(
        size,
      );
      const newest = await t.request(
        'GET',
        `/api/v1/conversation/${c.conversationId}/events/search?limit=1&sort_order=TIMESTAMP_DESC`,
        { key },
      );
      expect(newest.body.items[0].id).toBe(all[size - 1]!.id);
    }
  }, 240_000);

  it('events past the recorded end whose times go back, unmarked (a mark that did not land), are answered as the sorted query answers', async () => {
    const c = await t.newConversation(userId);
    const all = eventsFrom(100, base + 100_000);
    expect((await t.ingest(c.conversationId, c.sessionKey, all)).status).toBe(200);
    // Stored straight into the log past the record, earlier than everything: the record still says ordered, 100.
    const late = eventsFrom(5, base);
    const docs: StoredEvent[] = late.map((e, i) => ({
      _id: eventKey(c.conversationId, e.id as string),
      conversation_id: c.conversationId,
      id: e.id as string,
      kind: e.kind as StoredEvent['kind'],
      source: 'agent',
      timestamp: normalizeEventTime(e.timestamp as string)!,
      seq: 101 + i,
      block: `${c.conversationId}/1`,
      json: JSON.stringify(e),
    }));
    expect(await events.append(docs)).toEqual({ inserted: 5 });
    expect(await conversations.layout(c.conversationId)).toMatchObject({ ordered: true, lastSeq: 100 });
    // What reads the end of the log sees them: descending pages, time bounds, counts, a page after the
    // last recorded event. (An ascending page from the start trusts the record's mark.)
    const f = { conversationId: c.conversationId };
    const layout = (await conversations.layout(c.conversationId))!;
    for (const g of filtersOf(c.conversationId).filter((x) => x.kind === undefined)) {
      const bounded = g.timestampGte !== undefined || g.timestampLt !== undefined;
      for (const descending of bounded ? [false, true] : [true]) {
        const inBlocks = await pages(g, descending, 7, (after) =>
          events.search(g, { descending, limit: 7, after }, layout),
        );
        expect({ g, descending, pages: inBlocks }).toEqual({
          g,
          descending,
          pages: await pages(g, descending, 7, (after) => events.search(g, { descending, limit: 7, after })),
        });
      }
      expect({ g, count: await events.count(g, layout) }).toEqual({ g, count: await events.count(g) });
    }
    const last = all[99]!;
    const after: EventCursor = [normalizeEventTime(last.timestamp as string)!, 100];
    expect(await events.search(f, { descending: false, limit: 10, after }, layout)).toEqual(
      await events.search(f, { descending: false, limit: 10, after }),
    );
  });

  it('an event without its block (written by an older api) and forged cursors are answered as the sorted query answers', async () => {
    const c = await t.newConversation(userId);
    const all = eventsFrom(250, base);
    expect((await t.ingest(c.conversationId, c.sessionKey, all)).status).toBe(200);
    const f = { conversationId: c.conversationId };
    const layout = (await conversations.layout(c.conversationId))!;
    // Forged cursors: a time that is not their event's, a seq past the end, a seq of 0.
    const real = all[149]!;
    const forged: EventCursor[] = [
      ['9999-01-01T00:00:00.000000Z', 5],
      ['0001-01-01T00:00:00.000000Z', 150],
      [normalizeEventTime(real.timestamp as string)!, 151],
      [normalizeEventTime(real.timestamp as string)!, 999],
      [normalizeEventTime(real.timestamp as string)!, 0],
    ];
    for (const after of forged) {
      for (const descending of [false, true]) {
        for (const g of [f, { ...f, timestampGte: at(10) }, { ...f, timestampLt: at(60) }]) {
          expect({
            after,
            descending,
            g,
            page: await events.search(g, { descending, limit: 20, after }, layout),
          }).toEqual({
            after,
            descending,
            g,
            page: await events.search(g, { descending, limit: 20, after }),
          });
        }
      }
    }
    // One event in the middle of block 1 without its block field.
    await t.database.db
      .collection('events')
      .updateOne({ _id: eventKey(c.conversationId, all[149]!.id as string) } as never, { $unset: { block: '' } });
    await expectSameAsSorted(c.conversationId, 250);
  });

  it('a recorded end behind the log (a writer died between its insert and its record) is found from the blocks past it', async () => {
    const c = await t.newConversation(userId);
    const first = eventsFrom(250, base);
    expect((await t.ingest(c.conversationId, c.sessionKey, first)).status).toBe(200);
    // As a writer that died after storing seqs 121-250 would leave it: the record says 120, and an older time.
    await t.database.db.collection('conversations').updateOne({ _id: c.conversationId } as never, {
      $set: { last_seq: 120, last_timestamp: normalizeEventTime(at(10)) },
    });
    // Later than the recorded time, earlier than the log's last: the log's order is off, and must be seen so.
    const back = sample('MessageEvent', { timestamp: at(50) });
    const r = await t.ingest(c.conversationId, c.sessionKey, [back, ...eventsFrom(4, base + 500_000)]);
    expect(r).toMatchObject({ status: 200, body: { stored: 5, already_stored: 0 } });
    const docs = await t.database.db
      .collection<StoredEvent>('events')
      .find({ conversation_id: c.conversationId })
      .sort({ seq: 1 })
      .toArray();
    expect(docs.map((d) => d.seq)).toEqual(Array.from({ length: 255 }, (_, i) => i + 1));
    expect(docs[250]!.id).toBe(back.id);
    expect(await conversations.layout(c.conversationId)).toMatchObject({ blocks: true, ordered: false, lastSeq: 255 });
  });

  it('concurrent batches of one conversation are stored whole, numbered without a gap or a repeat', async () => {
    const c = await t.newConversation(userId);
    const batches = Array.from({ length: 8 }, (_, b) => eventsFrom(30, base + b * 100_000));
    const answers = await Promise.all(batches.map((batch) => t.ingest(c.conversationId, c.sessionKey, batch)));
    expect(answers.map((a) => a.status)).toEqual(Array(8).fill(200));
    const docs = await t.database.db
      .collection<StoredEvent>('events')
      .find({ conversation_id: c.conversationId })
      .sort({ seq: 1 })
      .toArray();
    expect(docs.map((d) => d.seq)).toEqual(Array.from({ length: 240 }, (_, i) => i + 1));
    expect(new Set(docs.map((d) => d.id)).size).toBe(240);
    // Each batch is contiguous in the log (one writer at a time), whichever order they came in.
    for (const batch of batches) {
      const seqs = batch.map((e) => docs.find((d) => d.id === e.id)!.seq);
      expect(seqs).toEqual(Array.from({ length: 30 }, (_, i) => seqs[0]! + i));
    }
    expect((await conversations.layout(c.conversationId))!.lastSeq).toBe(240);
  });

  it('a read that runs out of its time budget fails with DatabaseBusyError, and leaves no rejection unhandled', async () => {
    const c = await t.newConversation(userId);
    expect((await t.ingest(c.conversationId, c.sessionKey, eventsFrom(250, base))).status).toBe(200);
    const layout = (await conversations.layout(c.conversationId))!;
    const unhandled: unknown[] = [];
    const note = (e: unknown) => unhandled.push(e);
    process.on('unhandledRejection', note);
    try {
      const tight = new EventsStore(t.database.db, { queryTimeoutMs: 1 });
      const f = { conversationId: c.conversationId, timestampGte: at(5) };
      for (let i = 0; i < 5; i++) {
        await expect(tight.search(f, { descending: true, limit: 100 }, layout)).rejects.toBeInstanceOf(
          DatabaseBusyError,
        );
        await expect(tight.range(c.conversationId, 0, 500, undefined, true)).rejects.toBeInstanceOf(DatabaseBusyError);
      }
      await sleep(200);
      expect(unhandled).toEqual([]);
    } finally {
      process.off('unhandledRejection', note);
    }
  });

  /** A conversation as stored before the block layout: no block on its events, no mark on its record. */
  async function legacyConversation(times: string[]): Promise<{ conversationId: string; sessionKey: string }> {
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
  async function seen(conversationId: string) {
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

  it('a log stored before the layout reads the same before and after it is moved onto it (ordered and not)', async () => {
    const legacy = await legacyConversation(Array.from({ length: 260 }, (_, i) => at(Math.floor(i / 2))));
    const ordered = legacy.conversationId;
    const unordered = (await legacyConversation(Array.from({ length: 140 }, (_, i) => at(i % 70)))).conversationId;
    const before = { ordered: await seen(ordered), unordered: await seen(unordered) };
    expect(before.ordered.asc).toHaveLength(260);
    expect(await conversations.layout(ordered)).toMatchObject({ blocks: false });

    const log = pino({ level: 'silent' });
    const deps = { conversations, events, log };
    expect(await migrateEventLayouts(deps, { passes: 3, pauseMs: 10 })).toBeGreaterThanOrEqual(2);
    expect(await conversations.layout(ordered)).toMatchObject({ blocks: true, ordered: true, lastSeq: 260 });
    expect(await conversations.layout(unordered)).toMatchObject({ blocks: true, ordered: false, lastSeq: 140 });
    const missing = await t.database.db
      .collection('events')
      .countDocuments({ conversation_id: { $in: [ordered, unordered] }, block: { $exists: false } });
    expect(missing).toBe(0);
    expect({ ordered: await seen(ordered), unordered: await seen(unordered) }).toEqual(before);
    await expectSameAsSorted(ordered, 260);
    expect(await migrateEventLayouts(deps, { passes: 1 })).toBe(0); // nothing left to move

    // Appends after the move go on in blocks; a time that goes back is still caught.
    const later = sample('MessageEvent', { timestamp: at(200) });
    expect((await t.ingest(ordered, legacy.sessionKey, [later])).status).toBe(200);
    expect(await conversations.layout(ordered)).toMatchObject({ blocks: true, ordered: true, lastSeq: 261 });
    expect((await seen(ordered)).asc).toEqual([...before.ordered.asc, later.id]);
    expect((await t.ingest(ordered, legacy.sessionKey, [sample('MessageEvent', { timestamp: at(100) })])).status).toBe(
      200,
    );
    expect(await conversations.layout(ordered)).toMatchObject({ blocks: true, ordered: false, lastSeq: 262 });
  });

  it('a log stored before with a hole in its seqs stays on the sorted reads, and reads the same', async () => {
    const legacy = await legacyConversation(Array.from({ length: 150 }, (_, i) => at(i)));
    await t.database.db.collection('events').deleteOne({ conversation_id: legacy.conversationId, seq: 77 } as never);
    const before = await seen(legacy.conversationId);
    const deps = { conversations, events, log: pino({ level: 'silent' }) };
    expect(await migrateConversationLayout(deps, legacy.conversationId)).toBe(true);
    expect(await conversations.layout(legacy.conversationId)).toMatchObject({ blocks: false });
    expect(await seen(legacy.conversationId)).toEqual(before);
    expect(await conversations.withoutBlocks(10_000)).not.toContain(legacy.conversationId);
  });

  it('a conversation whose batch is being stored is left for a later pass, then moved', async () => {
    const id = (await legacyConversation(Array.from({ length: 30 }, (_, i) => at(i)))).conversationId;
    const token = await conversations.acquireIngestLease(id, 60_000, 1000);
    expect(token).not.toBeNull();
    const deps = { conversations, events, log: pino({ level: 'silent' }) };
    expect(await migrateConversationLayout(deps, id)).toBe(false);
    expect(await conversations.layout(id)).toMatchObject({ blocks: false });
    await conversations.releaseIngestLease(id, token!);
    expect(await migrateConversationLayout(deps, id)).toBe(true);
    expect(await conversations.layout(id)).toMatchObject({ blocks: true, ordered: true, lastSeq: 30 });
  });
});
