/** The slot log that carries live events between api processes, on the real MongoDB-wire server. */
import { MongoClient, type CommandStartedEvent } from 'mongodb';
import pino from 'pino';
import { LiveChannel } from '../src/live/live-channel';
import { LIVE_COLLECTION, type LiveDoc } from '../src/live/live-slots';
import { openDatabase, type Database } from '../src/store/mongo';
import { testEnv, uniqueName } from './helpers/env';
import { eventually } from './helpers/eventually';
import { setTimeout as sleep } from 'node:timers/promises';

describe('live channel', () => {
  let database: Database;
  const log = pino({ level: 'silent' });
  const channels: LiveChannel[] = [];
  const channel = (retainSlots = 1000) => {
    const c = new LiveChannel(database.db, log, { pollMs: 5, retainSlots, maintenanceEveryMs: 50, cleanupEveryMs: 0 });
    channels.push(c);
    return c;
  };
  const until = (what: () => boolean, ms = 10_000) =>
    eventually(() => expect(what()).toBe(true), { timeoutMs: ms, intervalMs: 10 });

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
    await a.start((d) => seenA.push(d));
    await b.start((d) => seenB.push(d));
    await sleep(50);
    await Promise.all([
      ...Array.from({ length: 40 }, (_, i) => a.publish('conv-a', [{ seq: i + 1, json: `a${i}` }])),
      ...Array.from({ length: 40 }, (_, i) =>
        b.publish('conv-b', [
          { seq: null, json: `b${i}` },
          { seq: null, json: `b${i}'` },
        ]),
      ),
    ]);
    await until(() => seenA.length === 120 && seenB.length === 120);
    expect(seenA.map((d) => d.json)).toEqual(seenB.map((d) => d.json));
    expect(new Set(seenA.map((d) => d.json)).size).toBe(120);
    // Slots are contiguous from 1; a process's concurrent batches may share one.
    const slots = await database.db
      .collection(LIVE_COLLECTION)
      .find({}, { projection: { n: 1 } })
      .toArray();
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
    await late.start((d) => seen.push(d.json)); // positioned at the head: 37
    await a.publish('c', [{ seq: 38, json: 'new' }]);
    await until(() => seen.length === 1);
    expect(seen).toEqual(['new']);
  });

  it('keeps the last retainSlots slots; the floor lets a new process find the head', async () => {
    const a = channel(5);
    const seen: string[] = [];
    await a.start((d) => seen.push(d.json));
    for (let i = 0; i < 20; i++) await a.publish('c', [{ seq: null, json: `m${i}` }]);
    await until(() => seen.length === 20);
    const slots = database.db.collection<{ _id: string; n: number }>(LIVE_COLLECTION);
    await eventually(async () => expect(await slots.countDocuments({ _id: { $ne: 'floor' } })).toBeLessThanOrEqual(5), {
      timeoutMs: 2000,
      intervalMs: 20,
    }); // cleaned up
    expect(await slots.findOne({ _id: 'floor' })).toMatchObject({ n: 15 });
    expect((await slots.find({ _id: { $ne: 'floor' } }).toArray()).map((s) => s.n).sort((x, y) => x - y)).toEqual([
      16, 17, 18, 19, 20,
    ]);
    const fresh = channel(5);
    expect(await fresh.head()).toBe(20);
    await fresh.publish('c', [{ seq: null, json: 'after cleanup' }]);
    expect(await slots.findOne({ _id: 's21' })).toMatchObject({ n: 21 });
    await until(() => seen.length === 21);
  });

  it("a reader with no one listening looks less often, yet delivers its own slots at once and others' within an idle poll", async () => {
    // The idle poll is long (1 s) so that each bound below has hundreds of milliseconds of margin on a loaded machine.
    // The idle reader on a client of its own that counts the reads of the slot log.
    const client = await new MongoClient(testEnv().mongoUri, { monitorCommands: true }).connect();
    let reads = 0;
    client.on('commandStarted', (e: CommandStartedEvent) => {
      if (e.commandName === 'find' && e.command.find === LIVE_COLLECTION) reads++;
    });
    try {
      let listening = false;
      const idle = new LiveChannel(client.db(database.db.databaseName), log, {
        pollMs: 5,
        idlePollMs: 1000,
        retainSlots: 1000,
        maintenanceEveryMs: 10_000,
      });
      channels.push(idle);
      const seen: { json: string; at: number }[] = [];
      await idle.start(
        (d) => seen.push({ json: d.json, at: Date.now() }),
        () => listening,
      );
      await sleep(200);
      reads = 0;
      await sleep(2000);
      const idleReads = reads;
      expect(idleReads).toBeLessThanOrEqual(5); // about 2; every 5 ms would be about 400

      // Right after an idle read, so the next one is about a second away: a delivery within 500 ms is the wake-up's.
      const readsBefore = reads;
      await until(() => reads > readsBefore);
      let sent = Date.now();
      await idle.publish('c', [{ seq: null, json: 'own' }]);
      await until(() => seen.length === 1);
      expect(seen[0]!.at - sent).toBeLessThan(500); // woken by its own publish, not by the next idle poll (1 s)

      const other = channel();
      sent = Date.now();
      await other.publish('c', [{ seq: null, json: 'other' }]);
      await until(() => seen.length === 2);
      expect(seen[1]!.at - sent).toBeLessThan(1000 + 500);

      listening = true;
      await sleep(1100); // the idle wait in progress ends
      reads = 0;
      await sleep(500);
      expect(reads).toBeGreaterThan(idleReads * 2); // listening: every pollMs again
    } finally {
      await Promise.all(channels.splice(0).map((c) => c.stop()));
      await client.close();
    }
  });
});
