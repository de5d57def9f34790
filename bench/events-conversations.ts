/**
 * What bench/events.ts shares between its cases (event documents, the api process, PostgreSQL checks),
 * and its main case: one page of a 1,000-event conversation in a database of 100,000 events, many
 * conversations rather than one big one.
 *
 * That case runs in a database of its own (`bench_conversations`, its own api process), so the
 * collection holds the events it was asked for and nothing of the other cases. The events are stored
 * with raw insertMany (the webhook would take minutes and is measured by the ingest case); the
 * conversations and the caller are made through the stores, so the api serves them as it serves any.
 * Its raw side reads the same `events` collection the api reads: same documents, same indexes.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import type { Db } from 'mongodb';
import { Client } from 'pg';
import { median, progress } from './report';
import type { startBenchServers } from './servers';
import { SecretBox } from '../src/auth/secret-box';
import { normalizeEventTime } from '../src/schemas/event-time';
import { encodeCursor } from '../src/schemas/page-cursor';
import { freePort } from '../src/process/net';
import { EventSchema } from '../src/schemas/events';
import { EVENTS_LISTING } from '../src/schemas/event-queries';
import { createStores } from '../src/composition';
import { eventKey, type StoredEvent } from '../src/store/events-store';
import { blockKey, blockOf, firstSeqOf, lastSeqOf } from '../src/store/event-blocks';
import type { Collection } from 'mongodb';
import { openDatabase, type Database } from '../src/store/mongo';
import { setTimeout as sleep } from 'node:timers/promises';

export type BenchServers = Awaited<ReturnType<typeof startBenchServers>>;

const now = () => performance.now();

/** Events as a runtime reports them: one ActionEvent in ten, the others messages of about 200 bytes. */
export function makeEvents(n: number, start: number): Record<string, unknown>[] {
  return Array.from({ length: n }, (_, i) => ({
    id: randomUUID(),
    kind: i % 10 === 0 ? 'ActionEvent' : 'MessageEvent',
    timestamp: new Date(start + i).toISOString(),
    ...(i % 10 === 0
      ? {
          thought: [{ text: 'run the tests' }],
          tool_name: 'terminal',
          tool_call_id: `call_${i}`,
          tool_call: { id: `call_${i}`, name: 'terminal', arguments: '{"command":"npm test"}' },
          llm_response_id: `resp_${i}`,
          action: { kind: 'TerminalAction', command: 'npm test' },
        }
      : {
          source: i % 2 ? 'agent' : 'user',
          llm_message: { role: 'assistant', content: [{ type: 'text', text: `message number ${i} `.repeat(8) }] },
        }),
  }));
}

/**
 * A page read raw the way the block layout allows (src/store/event-blocks.ts): the blocks from the seq
 * after `afterSeq`, one equality query each, sorted by seq, until `limit` + 1 documents (the one more
 * tells whether a next page exists) or a block that is not full. The floor of the api's page.
 */
export async function rawBlockPage(
  events: Collection<StoredEvent>,
  conversationId: string,
  afterSeq: number,
  limit: number,
): Promise<StoredEvent[]> {
  const docs: StoredEvent[] = [];
  for (let b = blockOf(afterSeq + 1); docs.length <= limit; b++) {
    const from = Math.max(afterSeq + 1, firstSeqOf(b));
    const got = await events
      .find(
        { block: blockKey(conversationId, b), seq: { $gte: from } },
        { projection: { _id: 0, timestamp: 1, seq: 1, json: 1 } },
      )
      .sort({ seq: 1 })
      .limit(limit + 1 - docs.length)
      .toArray();
    docs.push(...got);
    if (got.length === 0 || got[got.length - 1]!.seq !== lastSeqOf(b)) break;
  }
  return docs;
}

/** The documents the api stores for these events, as the conversation's events 1, 2, 3, ... */
export function toStoredEvents(conversationId: string, events: readonly Record<string, unknown>[]): StoredEvent[] {
  return events.map((e, i) => {
    const v = EventSchema.parse(e);
    return {
      _id: eventKey(conversationId, v.id),
      conversation_id: conversationId,
      id: v.id,
      kind: v.kind,
      source: v.source,
      timestamp: normalizeEventTime(v.timestamp)!,
      seq: i + 1,
      block: blockKey(conversationId, blockOf(i + 1)),
      json: JSON.stringify(v),
    };
  });
}

export interface BenchApi {
  base: string;
  port: number;
  process: ChildProcess;
  /** Stops the api and waits until it is gone. */
  stop(): Promise<void>;
}

/**
 * Starts the api (dist/src/api/main.js) on the bench's servers and database and waits until it is
 * ready, which is after it made its indexes (with POSTGRES_URL, also the PostgreSQL ones).
 */
export async function startEventsApi(servers: BenchServers, dbName: string): Promise<BenchApi> {
  const port = await freePort();
  const child = spawn(process.execPath, [path.join(__dirname, '..', 'src', 'api', 'main.js')], {
    // One bench user holds the live case's 1,000 websockets: the per-user cap (100 by default) is lifted.
    env: servers.serviceEnv({
      MONGODB_DB: dbName,
      API_PORT: String(port),
      MAX_BODY_BYTES: String(50 * 1024 * 1024),
      SECRETS_KEY: SecretBox.generateKey(),
      USER_MAX_WEBSOCKETS: '0',
    }),
    // Its log lines (warnings) go to stderr with the bench's progress: stdout holds only the table.
    stdio: ['ignore', 2, 2],
  });
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGTERM');
    await exited;
  };
  const base = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 60_000;
  for (;;) {
    if ((await fetch(`${base}/ready`).catch(() => null))?.status === 200) break;
    if (child.exitCode !== null || child.signalCode !== null)
      throw new Error(`the api exited (${child.exitCode ?? child.signalCode}) before it was ready`);
    if (Date.now() > deadline) {
      await stop();
      throw new Error('the api was not ready within 60 s');
    }
    await sleep(100);
  }
  return { base, port, process: child, stop };
}

/** A user and an API key of theirs, for the X-Access-Token header. */
export async function benchCaller(db: Db): Promise<{ userId: string; key: string }> {
  const { users, apiKeys } = createStores(db);
  const user = await users.create('bench@example.com');
  const { raw } = await apiKeys.create(user.id, 'bench');
  return { userId: user.id, key: raw };
}

/** FerretDB's PostgreSQL table of a collection (FerretDB keeps a database in the schema of its name). */
async function tableOf(pg: Client, db: Db, collection: string): Promise<string | undefined> {
  const r = await pg.query<{ t: string }>(
    `SELECT _jsonb->>'table' AS t FROM "${db.databaseName}"._ferretdb_database_metadata WHERE _jsonb->>'_id' = $1`,
    [collection],
  );
  return r.rows[0]?.t;
}

export async function withPostgres<T>(postgresUrl: string, run: (pg: Client) => Promise<T>): Promise<T> {
  const pg = new Client({ connectionString: postgresUrl });
  pg.on('error', () => undefined);
  await pg.connect();
  try {
    return await run(pg);
  } finally {
    await pg.end().catch(() => undefined);
  }
}

/**
 * The GIN indexes (src/store/postgres-indexes.ts) on each collection's table; throws when a collection
 * has none on `conversation_id`: the api (or the bench) did not make them, and the figures would be the
 * ones of a sequential scan.
 */
export async function requireGinIndexes(
  postgresUrl: string,
  db: Db,
  collections: readonly string[],
): Promise<string[]> {
  // The api makes them in the background once it is ready: looked for during up to 30 s.
  const deadline = Date.now() + 30_000;
  for (;;) {
    try {
      return await findGinIndexes(postgresUrl, db, collections);
    } catch (e) {
      if (Date.now() > deadline) throw e;
      await sleep(250);
    }
  }
}

async function findGinIndexes(postgresUrl: string, db: Db, collections: readonly string[]): Promise<string[]> {
  return withPostgres(postgresUrl, async (pg) => {
    const lines: string[] = [];
    for (const collection of collections) {
      const table = await tableOf(pg, db, collection);
      if (!table) throw new Error(`no PostgreSQL table for the collection ${collection}`);
      const names = (
        await pg.query<{ indexname: string }>(
          "SELECT indexname FROM pg_indexes WHERE schemaname = $1 AND tablename = $2 AND indexdef LIKE '%USING gin%' ORDER BY indexname",
          [db.databaseName, table],
        )
      ).rows.map((r) => r.indexname);
      for (const field of ['conversation_id', 'block']) {
        if (!names.some((n) => n.endsWith(`_${field}_gin`)))
          throw new Error(
            `${collection} (${table}) has no GIN index on ${field} (found: ${names.join(', ') || 'none'})`,
          );
      }
      lines.push(`${collection}: ${names.length} GIN indexes (${names.join(', ')})`);
    }
    return lines;
  });
}

/** PostgreSQL's version, for the summary line. */
export async function postgresVersion(postgresUrl: string): Promise<string> {
  return withPostgres(
    postgresUrl,
    async (pg) => (await pg.query<{ server_version: string }>('SHOW server_version')).rows[0]!.server_version,
  );
}

export interface ManyConversationsOptions {
  /** Events in the database (rounded to whole conversations). */
  total: number;
  /** Events per conversation. */
  perConversation: number;
  /** Timed repetitions of each request; the table shows their median. */
  reps: number;
  /** Conversations filled at the same time. */
  fillConcurrency?: number;
}

const DB_NAME = 'bench_conversations';
const PAGE = 100;

/**
 * The case: fill, then time one conversation in the middle through the api and with the raw driver.
 * Returns its table rows.
 */
export async function manyConversationsCase(servers: BenchServers, o: ManyConversationsOptions): Promise<string[][]> {
  const per = o.perConversation;
  if (!(per >= 2 * PAGE) || per % PAGE !== 0)
    throw new Error(`--per-conversation must be a multiple of ${PAGE}, at least ${2 * PAGE}`);
  const count = Math.max(1, Math.round(o.total / per));
  const total = count * per;
  const api = await startEventsApi(servers, DB_NAME);
  let database: Database | undefined;
  try {
    database = openDatabase(servers.mongoUri, DB_NAME);
    const db = database.db;
    if (servers.postgresUrl)
      for (const l of await requireGinIndexes(servers.postgresUrl, db, ['events'])) progress(`api made ${l}`);
    const { userId, key } = await benchCaller(db);
    const { conversations } = createStores(db);
    const events = db.collection<StoredEvent>('events');

    // ---- fill: `count` conversations of `per` events, raw insertMany ----
    progress(`filling ${DB_NAME}: ${total} events in ${count} conversations of ${per} (raw insertMany)`);
    const ids: string[] = [];
    for (let c = 0; c < count; c++) ids.push((await conversations.create({ userId, sessionApiKey: randomUUID() })).id);
    const middle = Math.floor(count / 2);
    let target: StoredEvent[] = [];
    const base = Date.parse('2024-05-01T00:00:00Z');
    let next = 0;
    let done = 0;
    const t0 = now();
    const worker = async () => {
      for (let c = next++; c < count; c = next++) {
        // Conversations interleave in time, as concurrent conversations do.
        const docs = toStoredEvents(ids[c]!, makeEvents(per, base + c * 7));
        await events.insertMany(docs, { ordered: true });
        await conversations.setLastSeq(ids[c]!, per, docs[per - 1]!.timestamp);
        if (c === middle) target = docs;
        if (++done % Math.max(1, Math.floor(count / 10)) === 0) progress(`  ${done * per} events stored`);
      }
    };
    await Promise.all(Array.from({ length: Math.min(o.fillConcurrency ?? 2, count) }, worker));
    const fillMs = now() - t0;
    const stored = await events.estimatedDocumentCount();
    if (stored !== total) throw new Error(`the events collection holds ${stored} events, not ${total}`);

    const conv = ids[middle]!;
    const filter = { conversation_id: conv };
    let plan = 'plan not known (SQLite)';
    if (servers.postgresUrl) {
      // What autovacuum would do a minute later: statistics of the filled table, before anything is timed.
      await withPostgres(servers.postgresUrl, async (pg) =>
        pg.query(`ANALYZE "${DB_NAME}"."${await tableOf(pg, db, 'events')}"`),
      );
      // A page's read: one block of the conversation, by equality (src/store/event-blocks.ts).
      const e = await db.command({
        explain: { find: 'events', filter: { block: blockKey(conv, 0) }, sort: { seq: 1 }, limit: PAGE + 1 },
        verbosity: 'queryPlanner',
      });
      const text = JSON.stringify(e.queryPlanner);
      const index = /Index Name\\?":\\?"([^"\\]+)/.exec(text)?.[1];
      plan = index ? `plan: index ${index}` : text.includes('Seq Scan') ? 'plan: Seq Scan' : 'plan: ?';
      const pushed = ['filter', 'sort', 'limit'].map((k) => {
        const v: unknown = e[`${k}Pushdown`];
        return `${k} ${v === true ? 'yes' : v === false ? 'no' : '?'}`;
      });
      plan += `; pushed down: ${pushed.join(', ')}`;
      progress(`page query ${plan}`);
    }

    // ---- one conversation in the middle: api vs raw ----
    const headers = { 'X-Access-Token': key };
    const lastCursorDoc = target[per - PAGE - 1]!;
    const lastCursor = encodeCursor(EVENTS_LISTING, [lastCursorDoc.timestamp, lastCursorDoc.seq]);
    const expectIds = (what: string, got: readonly unknown[], want: readonly StoredEvent[]) => {
      const bad = got.findIndex((g, i) => (g as { id?: string } | null)?.id !== want[i]?.id);
      if (got.length !== want.length || bad >= 0) {
        throw new Error(
          `${what}: ${got.length} items (expected ${want.length})${bad >= 0 ? `, item ${bad} is not the expected event` : ''}`,
        );
      }
    };
    const get = async (url: string) => {
      const s = now();
      const r = await fetch(`${api.base}/api/v1/conversation/${conv}${url}`, {
        headers,
        signal: AbortSignal.timeout(300_000),
      });
      const body: unknown = await r.json();
      const ms = now() - s;
      if (r.status !== 200)
        throw new Error(`GET ${url.slice(0, 80)} answered ${r.status}: ${JSON.stringify(body).slice(0, 300)}`);
      return { ms, body };
    };
    const firstPage = target.slice(0, PAGE);
    const lastPage = target.slice(per - PAGE);
    const picked = target.filter((_, i) => i % (per / PAGE) === 0); // 100 ids spread over the conversation
    const idsQuery = picked.map((d) => `id=${encodeURIComponent(d.id)}`).join('&');

    const apiPage = async (last: boolean) => {
      const { ms, body } = await get(`/events/search?limit=${PAGE}${last ? `&page_id=${lastCursor}` : ''}`);
      const page = body as { items: unknown[]; next_page_id: string | null };
      expectIds(`api ${last ? 'last' : 'first'} page`, page.items, last ? lastPage : firstPage);
      if ((page.next_page_id === null) !== last)
        throw new Error(`api ${last ? 'last' : 'first'} page: next_page_id ${page.next_page_id}`);
      return ms;
    };
    const checkRaw = (what: string, last: boolean, docs: readonly StoredEvent[]) => {
      // One more than a page is asked for, as the api does: the first page has a next one, the last none.
      const items = docs.slice(0, PAGE).map((d) => JSON.parse(d.json) as unknown);
      expectIds(`${what} ${last ? 'last' : 'first'} page`, items, last ? lastPage : firstPage);
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
    const apiCount = async () => {
      const { ms, body } = await get('/events/count');
      if (body !== per) throw new Error(`api count: ${JSON.stringify(body)}, expected ${per}`);
      return ms;
    };
    const rawCount = async () => {
      const s = now();
      const n = await events.countDocuments(filter);
      const ms = now() - s;
      if (n !== per) throw new Error(`raw count: ${n}, expected ${per}`);
      return ms;
    };
    const apiBatch = async () => {
      const { ms, body } = await get(`/events?${idsQuery}`);
      expectIds('api batch get', body as unknown[], picked);
      return ms;
    };
    const rawBatch = async () => {
      const s = now();
      const docs = await events
        .find(
          { conversation_id: conv, id: { $in: picked.map((d) => d.id) } },
          { projection: { _id: 0, id: 1, json: 1 }, batchSize: PAGE + 1 },
        )
        .toArray();
      const ms = now() - s;
      if (docs.length !== PAGE) throw new Error(`raw batch get: ${docs.length} documents, expected ${PAGE}`);
      return ms;
    };

    const times = {
      apiFirst: [] as number[],
      rawFirst: [] as number[],
      apiLast: [] as number[],
      rawLast: [] as number[],
      apiCount: [] as number[],
      rawCount: [] as number[],
      apiBatch: [] as number[],
      rawBatch: [] as number[],
      sortedFirst: [] as number[],
      sortedLast: [] as number[],
    };
    progress(`timing conversation ${middle + 1} of ${count}: ${o.reps} repetitions (after one untimed round)`);
    for (let rep = -1; rep < o.reps; rep++) {
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
      for (const k of Object.keys(times) as (keyof typeof times)[]) times[k].push(round[k]);
      progress(
        `  rep ${rep + 1}: first ${round.apiFirst.toFixed(0)}/${round.rawFirst.toFixed(0)}, last ${round.apiLast.toFixed(0)}/${round.rawLast.toFixed(0)}, ` +
          `count ${round.apiCount.toFixed(0)}/${round.rawCount.toFixed(0)}, batch ${round.apiBatch.toFixed(0)}/${round.rawBatch.toFixed(0)} ms (api/raw)`,
      );
    }

    const m = Object.fromEntries(Object.entries(times).map(([k, v]) => [k, median(v)])) as Record<
      keyof typeof times,
      number
    >;
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
        `${label}: first page of ${PAGE}, p50 of ${o.reps}`,
        ms(m.apiFirst),
        ms(m.rawFirst),
        vs(m.apiFirst, m.rawFirst),
        '<= 50 ms (api); <= 1.5x',
      ],
      [
        `${label}: last page (page_id), p50 of ${o.reps}`,
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
      [`${label}: count, p50 of ${o.reps}`, ms(m.apiCount), ms(m.rawCount), vs(m.apiCount, m.rawCount), '<= 1.5x'],
      [
        `${label}: batch get of ${PAGE} ids, p50 of ${o.reps}`,
        ms(m.apiBatch),
        ms(m.rawBatch),
        vs(m.apiBatch, m.rawBatch),
        '<= 1.5x',
      ],
    ];
  } finally {
    await api.stop();
    await database?.close();
  }
}
