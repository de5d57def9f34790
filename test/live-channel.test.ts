/** The slot log that carries live events between api processes, on the real MongoDB-wire server. */
import pino from 'pino';
import { LIVE_COLLECTION, LiveChannel, type LiveDoc } from '../src/live/live-channel';
import { openDatabase, type Database } from '../src/store/mongo';
import { testEnv, uniqueName } from './helpers/env';

describe('live channel', () => {
  let database: Database;
  const log = pino({ level: 'silent' });
  const channels: LiveChannel[] = [];
  const channel = (retainSlots = 1000) => {
    const c = new LiveChannel(database.db, log, { pollMs: 5, retainSlots, maintenanceEveryMs: 50, cleanupEveryMs: 0 });
    channels.push(c);
    return c;
  };
  const until = async (what: () => boolean, ms = 10_000) => {
    for (const end = Date.now() + ms; !what() && Date.now() < end; ) await new Promise((r) => setTimeout(r, 10));
    expect(what()).toBe(true);
  };

  beforeEach(() => {
    database = openDatabase(testEnv().mongoUri, uniqueName('test'));
  });
  afterEach(async () => {
    await Promise.all(channels.splice(0).map((c) => c.stop()));
    await database.db.dropDatabase();
    await database.close();
  });

  it('two processes publishing at once: contiguous slots, every reader sees every item once, in one order', async () => {
    const a = channel();
    const b = channel();
    const seenA: LiveDoc[] = [];
    const seenB: LiveDoc[] = [];
    a.start((d) => seenA.push(d));
    b.start((d) => seenB.push(d));
    await new Promise((r) => setTimeout(r, 50));
    await Promise.all([
      ...Array.from({ length: 40 }, (_, i) => a.publish('conv-a', [{ seq: i + 1, json: `a${i}` }])),
      ...Array.from({ length: 40 }, (_, i) => b.publish('conv-b', [{ seq: null, json: `b${i}` }, { seq: null, json: `b${i}'` }])),
    ]);
    await until(() => seenA.length === 120 && seenB.length === 120);
    expect(seenA.map((d) => d.json)).toEqual(seenB.map((d) => d.json));
    expect(new Set(seenA.map((d) => d.json)).size).toBe(120);
    // Slots are contiguous from 1; a process's concurrent batches may share one.
    const slots = await database.db.collection(LIVE_COLLECTION).find({}, { projection: { n: 1 } }).toArray();
    const ns = slots.map((s) => s.n).sort((x, y) => x - y);
    expect(ns).toEqual(Array.from({ length: ns.length }, (_, i) => i + 1));
    expect(ns.length).toBeLessThanOrEqual(80);
  });

  it('a reader that starts later begins at the head: only what is published after it', async () => {
    const a = channel();
    for (let i = 0; i < 37; i++) await a.publish('c', [{ seq: i + 1, json: `old${i}` }]);
    const late = channel();
    expect(await late.head()).toBe(37);
    const seen: string[] = [];
    late.start((d) => seen.push(d.json));
    await new Promise((r) => setTimeout(r, 50));
    await a.publish('c', [{ seq: 38, json: 'new' }]);
    await until(() => seen.length === 1);
    expect(seen).toEqual(['new']);
  });

  it('keeps the last retainSlots slots; the floor lets a new process find the head', async () => {
    const a = channel(5);
    const seen: string[] = [];
    a.start((d) => seen.push(d.json));
    for (let i = 0; i < 20; i++) await a.publish('c', [{ seq: null, json: `m${i}` }]);
    await until(() => seen.length === 20);
    const slots = database.db.collection<{ _id: string; n: number }>(LIVE_COLLECTION);
    for (let i = 0; i < 100 && (await slots.countDocuments({ _id: { $ne: 'floor' } })) > 5; i++) await new Promise((r) => setTimeout(r, 20));
    expect(await slots.findOne({ _id: 'floor' })).toMatchObject({ n: 15 });
    expect((await slots.find({ _id: { $ne: 'floor' } }).toArray()).map((s) => s.n).sort((x, y) => x - y)).toEqual([16, 17, 18, 19, 20]);
    const fresh = channel(5);
    expect(await fresh.head()).toBe(20);
    await fresh.publish('c', [{ seq: null, json: 'after cleanup' }]);
    expect(await slots.findOne({ _id: 's21' })).toMatchObject({ n: 21 });
    await until(() => seen.length === 21);
  });
});
