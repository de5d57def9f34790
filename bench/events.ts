/**
 * Event log benchmark (on demand, never part of the tests): `npm run bench:events [-- --events 100000]`.
 *
 * Starts FerretDB (on PostgreSQL, or SQLite with FERRETDB_BACKEND=sqlite) and the Temporal dev server in a
 * temporary directory and the api as its own process, then prints one table:
 *   - the main case (bench/events-conversations.ts, a database of its own): a page of one 1,000-event
 *     conversation in a database of --total events (100,000) in many such conversations, through the
 *     api vs the raw driver: first and last page, count, batch get;
 *   - ingest through the webhook (batches of 100) vs raw insertMany of the same documents,
 *     with lost and duplicated counts;
 *   - search pages through the api vs the raw driver find with the same filter, sort and limit;
 *   - the first vs the last page of the conversation (cursor depth);
 *   - one live event to N websocket subscribers: delivery latency p50 / p99.
 */
import { randomUUID } from 'node:crypto';
import os from 'node:os';
import WebSocket from 'ws';
import { FERRETDB_VERSION } from '../scripts/servers/paths';
import { benchCaller } from './bench-caller';
import { makeEvents, rawBlockPage, toStoredEvents } from './event-documents';
import { startEventsApi, type BenchApi } from './events-api';
import { manyConversationsCase } from './events-conversations';
import { postgresVersion, requireGinIndexes } from './postgres-checks';
import { runBench } from './report';
import { startBenchServers } from './servers';
import { encodeCursor } from '../src/schemas/page-cursor';
import { EVENTS_LISTING } from '../src/schemas/event-queries';
import { createStores } from '../src/composition';
import { eventsIndexes, type StoredEvent } from '../src/store/events-collection';
import { openDatabase } from '../src/store/mongo';
import { ensurePostgresIndexes } from '../src/store/postgres-indexes';
import { setTimeout as sleep } from 'node:timers/promises';

const arg = (name: string, fallback: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : fallback;
};
const EVENTS = arg('events', 100_000);
const BATCH = arg('batch', 100);
const SUBSCRIBERS = arg('subscribers', 1000);
const PAGES = arg('pages', 20);
/** The main case: events in its database, events per conversation, timed repetitions. */
const TOTAL = arg('total', 100_000);
const PER_CONVERSATION = arg('per-conversation', 1000);
const REPS = arg('reps', 7);

const now = () => performance.now();
const progress = (msg: string) => console.error(`[bench ${new Date().toISOString().slice(11, 19)}] ${msg}`);
const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
};
const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;

async function main(): Promise<void> {
  const servers = await startBenchServers('events');
  let backend: string = servers.backend;
  const dbName = 'bench';
  const database = openDatabase(servers.mongoUri, dbName);
  const rows: string[][] = [];
  let api: BenchApi | undefined;
  try {
    if (servers.postgresUrl) backend += ` (PostgreSQL ${await postgresVersion(servers.postgresUrl)})`;
    // ---- the main case, in a database and api process of its own ----
    rows.push(
      ...(await manyConversationsCase(servers, { total: TOTAL, perConversation: PER_CONVERSATION, reps: REPS })),
    );

    api = await startEventsApi(servers, dbName);
    const { base, port: apiPort } = api;
    const { userId, key } = await benchCaller(database.db);
    const { conversations } = createStores(database.db);
    const sessionKey = randomUUID();
    const conv = await conversations.create({ userId, sessionApiKey: sessionKey });
    let events = makeEvents(EVENTS, Date.parse('2024-05-01T00:00:00Z'));

    // ---- ingest: webhook vs raw insertMany of the same stored documents ----
    progress(`ingesting ${EVENTS} events through the webhook`);
    let t0 = now();
    for (let i = 0; i < events.length; i += BATCH) {
      const r = await fetch(`${base}/api/v1/webhooks/events/${conv.id}`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', 'X-Session-API-Key': sessionKey },
        body: JSON.stringify(events.slice(i, i + BATCH)),
      });
      if (r.status !== 200) throw new Error(`ingest answered ${r.status}: ${await r.text()}`);
    }
    const apiIngestMs = now() - t0;

    progress(`webhook: ${((now() - t0) / 1000).toFixed(1)} s; raw insertMany of the same documents`);
    const raw = database.db.collection<StoredEvent>('events_raw');
    for (const index of eventsIndexes.indexes) await raw.createIndexes([index]);
    if (servers.postgresUrl) {
      // The indexes the api made for `events` on PostgreSQL, for the raw collection too.
      await ensurePostgresIndexes(database.db, servers.postgresUrl, [
        { collection: 'events_raw', indexes: eventsIndexes.indexes },
      ]);
      for (const l of await requireGinIndexes(servers.postgresUrl, database.db, ['events', 'events_raw'])) progress(l);
    }
    let rawDocs: StoredEvent[] = toStoredEvents(conv.id, events);
    t0 = now();
    for (let i = 0; i < rawDocs.length; i += BATCH)
      await raw.insertMany(rawDocs.slice(i, i + BATCH), { ordered: true });
    const rawIngestMs = now() - t0;

    const storedIds = await database.db
      .collection<StoredEvent>('events')
      .find({ conversation_id: conv.id }, { projection: { _id: 0, id: 1 } })
      .toArray();
    const unique = new Set(storedIds.map((d) => d.id));
    const lost = events.filter((e) => !unique.has(e.id as string)).length;
    const duplicated = storedIds.length - unique.size;
    const eps = (ms: number) => Math.round((EVENTS / ms) * 1000);
    rows.push([
      `ingest ${EVENTS} events, batches of ${BATCH}`,
      `${eps(apiIngestMs)} ev/s`,
      `${eps(rawIngestMs)} ev/s`,
      `${(rawIngestMs / apiIngestMs).toFixed(2)} (api/raw throughput)`,
      `>= 0.7; lost ${lost}, duplicated ${duplicated}`,
    ]);

    progress(`raw: ${(rawIngestMs / 1000).toFixed(1)} s; lost ${lost}, duplicated ${duplicated}; search pages`);
    // ---- search pages: api vs raw find with the same filter, sort and limit ----
    const headers = { 'X-Access-Token': key };
    const apiPage = async (q: string) => {
      const s = now();
      const r = await fetch(`${base}/api/v1/conversation/${conv.id}/events/search?limit=100${q}`, {
        headers,
        signal: AbortSignal.timeout(900_000),
      });
      const body = (await r.json()) as { items: unknown[]; next_page_id: string | null };
      if (r.status !== 200 || body.items.length !== 100) throw new Error(`search answered ${r.status}`);
      return { ms: now() - s, next: body.next_page_id };
    };
    /** The same page raw, the way the block layout reads it (one equality query per block). */
    const rawPage = async (after?: [string, number]) => {
      const s = now();
      const docs = await rawBlockPage(raw, conv.id, after ? after[1] : 0, 100);
      if (docs.length < 100) throw new Error(`raw page: ${docs.length} documents`);
      return { ms: now() - s, last: [docs[99]!.timestamp, docs[99]!.seq] as [string, number] };
    };
    /** The same page raw as one query sorting the conversation: how pages were read before the block layout. */
    const sortedPage = async (after?: [string, number]) => {
      const s = now();
      const filter: Record<string, unknown> = { conversation_id: conv.id };
      if (after) filter.$or = [{ timestamp: { $gt: after[0] } }, { timestamp: after[0], seq: { $gt: after[1] } }];
      const docs = await raw
        .find(filter, { projection: { _id: 0, timestamp: 1, seq: 1, json: 1 } })
        .sort({ timestamp: 1, seq: 1 })
        .limit(101)
        .toArray();
      if (docs.length < 100) throw new Error(`sorted page: ${docs.length} documents`);
      return now() - s;
    };
    const apiMs: number[] = [];
    const rawMs: number[] = [];
    let next: string | null = null;
    let after: [string, number] | undefined;
    for (let p = 0; p < PAGES; p++) {
      const a = await apiPage(next ? `&page_id=${next}` : '');
      next = a.next;
      apiMs.push(a.ms);
      const r = await rawPage(after);
      after = r.last;
      rawMs.push(r.ms);
      progress(`page ${p + 1}: api ${a.ms.toFixed(0)} ms, raw ${r.ms.toFixed(0)} ms`);
    }
    rows.push([
      `search: ${PAGES} consecutive pages of 100`,
      `${mean(apiMs).toFixed(1)} ms/page`,
      `${mean(rawMs).toFixed(1)} ms/page`,
      `${(mean(apiMs) / mean(rawMs)).toFixed(2)}x (api/raw time)`,
      '<= 50 ms; <= 1.5x',
    ]);

    progress('first vs last page');
    // ---- first page vs last page ----
    const lastDoc = rawDocs[rawDocs.length - 101]!;
    const lastCursor = encodeCursor(EVENTS_LISTING, [lastDoc.timestamp, lastDoc.seq]);
    const firstApi: number[] = [];
    const lastApi: number[] = [];
    const firstRaw: number[] = [];
    const lastRaw: number[] = [];
    const firstSorted: number[] = [];
    const lastSorted: number[] = [];
    for (let i = 0; i < 3; i++) {
      firstApi.push((await apiPage('')).ms);
      lastApi.push((await apiPage(`&page_id=${lastCursor}`)).ms);
      firstRaw.push((await rawPage()).ms);
      lastRaw.push((await rawPage([lastDoc.timestamp, lastDoc.seq])).ms);
      firstSorted.push(await sortedPage());
      lastSorted.push(await sortedPage([lastDoc.timestamp, lastDoc.seq]));
    }
    rows.push([
      `first vs last page of ${EVENTS}`,
      `${pct(firstApi, 50).toFixed(1)} / ${pct(lastApi, 50).toFixed(1)} ms`,
      `${pct(firstRaw, 50).toFixed(1)} / ${pct(lastRaw, 50).toFixed(1)} ms`,
      `${(pct(lastApi, 50) / pct(firstApi, 50)).toFixed(2)}x (last/first, api)`,
      '<= 50 ms; last/first <= 1.5x',
    ]);
    rows.push([
      `first vs last page of ${EVENTS}, one sorted query (before blocks)`,
      '-',
      `${pct(firstSorted, 50).toFixed(1)} / ${pct(lastSorted, 50).toFixed(1)} ms`,
      `${(pct(lastSorted, 50) / pct(lastApi, 50)).toFixed(1)}x the api's last page`,
      '(reference)',
    ]);

    // Let the large arrays go, so the bench's own garbage collection does not show up as latency.
    events = [];
    rawDocs = [];
    progress(`live: connecting ${SUBSCRIBERS} websockets`);
    // ---- live: one event to N subscribers ----
    const live = await conversations.create({ userId, sessionApiKey: sessionKey });
    const url = `ws://127.0.0.1:${apiPort}/api/v1/conversation/${live.id}/events/socket`;
    const sockets: WebSocket[] = [];
    const arrivals: number[][] = [];
    /** Sockets the api closed during the case (a per-user cap, a slow-subscriber close): each misses events. */
    let closedEarly = 0;
    for (let i = 0; i < SUBSCRIBERS; i++) {
      const ws = new WebSocket(url, { headers });
      const mine: number[] = [];
      arrivals.push(mine);
      ws.on('message', () => mine.push(now()));
      ws.on('close', () => closedEarly++);
      await new Promise<void>((resolve, reject) => {
        ws.once('open', () => resolve());
        ws.once('error', reject);
      });
      sockets.push(ws);
    }
    // Every subscriber is registered once a probe reaches all of them.
    const ingestOne = async (e: Record<string, unknown>) => {
      const r = await fetch(`${base}/api/v1/webhooks/events/${live.id}`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', 'X-Session-API-Key': sessionKey },
        body: JSON.stringify([e]),
      });
      if (r.status !== 200) throw new Error(`ingest answered ${r.status}`);
    };
    for (let i = 0; i < 100 && arrivals.some((a) => a.length === 0); i++) {
      await ingestOne({ kind: 'StreamingDeltaEvent', content: 'probe' });
      await sleep(200);
    }
    await sleep(500);
    const latencies: number[] = [];
    const answers: number[] = [];
    for (let round = 0; round < 5; round++) {
      const before = arrivals.map((a) => a.length);
      const sent = now();
      await ingestOne(makeEvents(1, Date.now())[0]!);
      answers.push(now() - sent);
      for (let i = 0; i < 200 && arrivals.some((a, j) => a.length === before[j]); i++) await sleep(10);
      arrivals.forEach((a, j) => {
        if (a.length > before[j]!) latencies.push(a[before[j]!]! - sent);
      });
      await sleep(300);
    }
    const missed = SUBSCRIBERS * 5 - latencies.length;
    const closed = closedEarly;
    rows.push([
      `live: 1 event to ${SUBSCRIBERS} websockets (x5), from POST`,
      `p50 ${pct(latencies, 50).toFixed(1)} / p99 ${pct(latencies, 99).toFixed(1)} ms`,
      `webhook answer p50 ${pct(answers, 50).toFixed(1)} ms`,
      `max ${Math.max(...latencies).toFixed(1)} ms`,
      `p99 <= 50 ms; missed ${missed}, closed by the api ${closed}`,
    ]);
    for (const ws of sockets) ws.terminate();
  } finally {
    await api?.stop();
    await database.close();
    await servers.stop();
  }

  const header = ['measure', 'through the api', 'raw driver', 'ratio', 'goal'];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (r: string[]) => `| ${r.map((c, i) => c.padEnd(widths[i]!)).join(' | ')} |`;
  console.log(line(header));
  console.log(`|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`);
  for (const r of rows) console.log(line(r));
  console.log(`\nFerretDB ${FERRETDB_VERSION} on ${backend}, Node ${process.version}, ${os.cpus().length} cores`);
}

runBench(main);
