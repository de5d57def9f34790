/**
 * The main case of bench/events.ts: one page of a 1,000-event conversation in a database of 100,000
 * events, many conversations rather than one big one.
 *
 * That case runs in a database of its own (`bench_conversations`, its own api process), so the
 * collection holds the events it was asked for and nothing of the other cases. The events are stored
 * with raw insertMany (the webhook would take minutes and is measured by the ingest case); the
 * conversations and the caller are made through the stores, so the api serves them as it serves any.
 * Its raw side reads the same `events` collection the api reads: same documents, same indexes.
 */
import { randomUUID } from 'node:crypto';
import type { Db } from 'mongodb';
import { benchCaller } from './bench-caller';
import { makeEvents, toStoredEvents } from './event-documents';
import { startEventsApi } from './events-api';
import { PAGE, timeConversation } from './events-conversations-requests';
import { manyConversationsRows } from './events-conversations-rows';
import { requireGinIndexes, tableOf, withPostgres } from './postgres-checks';
import { progress } from './report';
import type { BenchServers } from './service-processes';
import { createStores } from '../src/composition';
import type { StoredEvent } from '../src/store/events-collection';
import { blockKey } from '../src/store/event-blocks';
import { openDatabase, type Database } from '../src/store/mongo';

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

const now = () => performance.now();

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
    const fill = await fillConversations(db, userId, count, per, o.fillConcurrency ?? 2);
    const conv = fill.ids[fill.middle]!;
    const plan = servers.postgresUrl ? await pagePlan(servers.postgresUrl, db, conv) : 'plan not known (SQLite)';

    // ---- one conversation in the middle: api vs raw ----
    progress(`timing conversation ${fill.middle + 1} of ${count}: ${o.reps} repetitions (after one untimed round)`);
    const m = await timeConversation(
      { apiBase: api.base, key, events: db.collection<StoredEvent>('events'), conv, target: fill.target, per },
      o.reps,
    );
    return manyConversationsRows({ count, per, total, fillMs: fill.fillMs, plan, reps: o.reps, m });
  } finally {
    await api.stop();
    await database?.close();
  }
}

/**
 * `count` conversations of `per` events, stored with raw insertMany, `concurrency` conversations at a
 * time; returns their ids, the one in the middle (the one timed) and its stored events.
 */
async function fillConversations(db: Db, userId: string, count: number, per: number, concurrency: number) {
  const { conversations } = createStores(db);
  const events = db.collection<StoredEvent>('events');
  const total = count * per;
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
  await Promise.all(Array.from({ length: Math.min(concurrency, count) }, worker));
  const fillMs = now() - t0;
  const stored = await events.estimatedDocumentCount();
  if (stored !== total) throw new Error(`the events collection holds ${stored} events, not ${total}`);
  return { ids, middle, target, fillMs };
}

/** The filled table analyzed, then how PostgreSQL reads one page of `conv`: its index and what FerretDB pushed down. */
async function pagePlan(postgresUrl: string, db: Db, conv: string): Promise<string> {
  // What autovacuum would do a minute later: statistics of the filled table, before anything is timed.
  await withPostgres(postgresUrl, async (pg) => pg.query(`ANALYZE "${DB_NAME}"."${await tableOf(pg, db, 'events')}"`));
  // A page's read: one block of the conversation, by equality (src/store/event-blocks.ts).
  const e = await db.command({
    explain: { find: 'events', filter: { block: blockKey(conv, 0) }, sort: { seq: 1 }, limit: PAGE + 1 },
    verbosity: 'queryPlanner',
  });
  const text = JSON.stringify(e.queryPlanner);
  const index = /Index Name\\?":\\?"([^"\\]+)/.exec(text)?.[1];
  let plan = index ? `plan: index ${index}` : text.includes('Seq Scan') ? 'plan: Seq Scan' : 'plan: ?';
  const pushed = ['filter', 'sort', 'limit'].map((k) => {
    const v: unknown = e[`${k}Pushdown`];
    return `${k} ${v === true ? 'yes' : v === false ? 'no' : '?'}`;
  });
  plan += `; pushed down: ${pushed.join(', ')}`;
  progress(`page query ${plan}`);
  return plan;
}
