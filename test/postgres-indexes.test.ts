/**
 * FerretDB on PostgreSQL: the queries of the event log reach PostgreSQL as filters and use an index.
 * Evidence of two kinds: FerretDB's `explain` (the SQL's EXPLAIN plan, with what was pushed down), and
 * PostgreSQL's own count of index scans while the event store runs its real queries (prepared
 * statements, as FerretDB sends them). Runs on the shared servers when they are on PostgreSQL, else on
 * a PostgreSQL and FerretDB of its own.
 */
import { MongoClient, type Db } from 'mongodb';
import path from 'node:path';
import { Client } from 'pg';
import { startDocumentStore, type DocumentStore } from '../scripts/servers/document-store';
import { eventKey, type StoredEvent } from '../src/store/events-collection';
import { EventsStore } from '../src/store/events-store';
import { blockKey, blockOf } from '../src/store/event-blocks';
import { ALL_INDEXES } from '../src/store/indexes';
import { ensureIndexes } from '../src/store/mongo';
import { ensurePostgresIndexes, ginFields } from '../src/store/postgres-indexes';
import { testEnv, uniqueName } from './helpers/env';
import { eventually } from './helpers/eventually';

const CONVERSATIONS = 40;
const PER_CONVERSATION = 100;

interface Explained {
  filterPushdown: boolean;
  plan: string;
}

describe('FerretDB on PostgreSQL uses indexes for the event log', () => {
  let own: DocumentStore | undefined;
  let mongo: MongoClient;
  let pg: Client;
  let mongoUri: string;
  let postgresUrl: string;

  beforeAll(async () => {
    const env = testEnv();
    if (env.postgresUrl) {
      mongoUri = env.mongoUri;
      postgresUrl = env.postgresUrl;
    } else {
      own = await startDocumentStore({
        ferretdbBinary: env.binaries.ferretdb,
        dir: path.join(env.dir, uniqueName('pg-indexes')),
        durable: false,
      });
      mongoUri = own.uri;
      postgresUrl = own.postgresUrl!;
    }
    mongo = new MongoClient(mongoUri);
    pg = new Client({ connectionString: postgresUrl });
    await pg.connect();
  }, 120_000);
  afterAll(async () => {
    await mongo?.close();
    await pg?.end();
    await own?.stop();
  });

  const tableOf = async (db: Db, collection: string) =>
    (
      await pg.query<{ t: string }>(
        `SELECT _jsonb->>'table' AS t FROM "${db.databaseName}"._ferretdb_database_metadata WHERE _jsonb->>'_id' = $1`,
        [collection],
      )
    ).rows[0]!.t;

  const explain = async (db: Db, find: Record<string, unknown>): Promise<Explained> => {
    const r = await db.command({ explain: { find: 'events', ...find }, verbosity: 'queryPlanner' });
    return { filterPushdown: r.filterPushdown as boolean, plan: JSON.stringify(r.queryPlanner) };
  };

  /** Index scans PostgreSQL counted on a table's indexes, by index name (its statistics lag up to a second). */
  const indexScans = async (db: Db, table: string) => {
    const rows = (
      await pg.query<{ indexrelname: string; idx_scan: string }>(
        'SELECT indexrelname, idx_scan FROM pg_stat_user_indexes WHERE schemaname = $1 AND relname = $2',
        [db.databaseName, table],
      )
    ).rows;
    return new Map(rows.map((r) => [r.indexrelname, Number(r.idx_scan)]));
  };

  it("FerretDB's own indexes cannot serve its pushed-down filters: without ours, a query by _id scans the table", async () => {
    const db = mongo.db(uniqueName('plain'));
    await ensureIndexes(db, ALL_INDEXES); // the driver's indexes only
    await db
      .collection('events')
      .insertMany(Array.from({ length: 500 }, (_, i) => ({ _id: `c/e${i}`, conversation_id: 'c', seq: i })) as never[]);
    await pg.query(`ANALYZE "${db.databaseName}"."${await tableOf(db, 'events')}"`);
    const byId = await explain(db, { filter: { _id: 'c/e7' } });
    expect(byId.filterPushdown).toBe(true);
    expect(byId.plan).toContain(`@> '\\"c/e7\\"'::jsonb`); // the SQL filter FerretDB sends
    expect(byId.plan).toContain('Seq Scan');
    expect(byId.plan).not.toContain('Index');
    await db.dropDatabase();
  });

  it('creates a GIN index for _id and each leading field, once; every hot query of the event log uses one', async () => {
    const db = mongo.db(uniqueName('indexed'));
    await ensureIndexes(db, ALL_INDEXES);
    expect(await ensurePostgresIndexes(db, postgresUrl, ALL_INDEXES)).toEqual({ made: expect.any(Number) });
    const ours = async () =>
      (
        await pg.query<{ indexname: string; indexdef: string }>(
          "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = $1 AND indexdef LIKE '%USING gin%'",
          [db.databaseName],
        )
      ).rows;
    const made = await ours();
    const expected = [...ginFields(ALL_INDEXES).values()].reduce((n, fields) => n + fields.length, 0);
    expect(made).toHaveLength(expected);
    const events = await tableOf(db, 'events');
    expect(made.map((r) => r.indexname).sort()).toEqual(
      expect.arrayContaining([`${events}__id_gin`, `${events}_conversation_id_gin`, `${events}_block_gin`]),
    );
    expect(await ensurePostgresIndexes(db, postgresUrl, ALL_INDEXES)).toEqual({ made: 0 }); // again: nothing new
    expect(await ours()).toHaveLength(expected);

    const store = new EventsStore(db);
    for (let c = 0; c < CONVERSATIONS; c++) {
      const docs: StoredEvent[] = Array.from({ length: PER_CONVERSATION }, (_, i) => ({
        _id: eventKey(`conv${c}`, `ev${i}`),
        conversation_id: `conv${c}`,
        id: `ev${i}`,
        kind: i % 10 === 0 ? 'ActionEvent' : 'MessageEvent',
        source: 'agent',
        timestamp: new Date(Date.UTC(2026, 0, 1, 0, 0, i)).toISOString(),
        seq: i + 1,
        block: blockKey(`conv${c}`, blockOf(i + 1)),
        json: JSON.stringify({ id: `ev${i}`, text: 'x'.repeat(200) }),
      }));
      expect(await store.append(docs)).toEqual({ inserted: PER_CONVERSATION });
    }
    await pg.query(`ANALYZE "${db.databaseName}"."${events}"`);

    const conversationIndex = `${events}_conversation_id_gin`;
    const blockIndex = `${events}_block_gin`;
    // The filters the event store sends (src/store/events-store.ts): search, search by kind, count,
    // batch get ($in is not pushed down, its conversation is), catch-up range, and one event by _id.
    const hot: [string, Record<string, unknown>, string][] = [
      [
        'search page',
        { filter: { conversation_id: 'conv7' }, sort: { timestamp: 1, seq: 1 }, limit: 101 },
        conversationIndex,
      ],
      [
        'search by kind',
        { filter: { conversation_id: 'conv7', kind: 'ActionEvent' }, sort: { timestamp: 1, seq: 1 }, limit: 101 },
        conversationIndex,
      ],
      ['batch get', { filter: { conversation_id: 'conv7', id: { $in: ['ev1', 'ev2'] } } }, conversationIndex],
      [
        'catch-up range',
        { filter: { conversation_id: 'conv7', seq: { $gt: 50 } }, sort: { seq: 1 }, limit: 100 },
        conversationIndex,
      ],
      ['one event', { filter: { _id: 'conv7/ev3' } }, `${events}__id_gin`],
      // The block layout (src/store/event-blocks.ts): a page, a catch-up and a time bound read blocks.
      [
        'block of a page',
        { filter: { block: 'conv7/0', seq: { $gte: 51, $lte: 100 } }, sort: { seq: 1 }, limit: 101 },
        blockIndex,
      ],
      [
        'block by kind',
        {
          filter: { block: 'conv7/0', seq: { $gte: 1, $lte: 100 }, kind: 'ActionEvent' },
          sort: { seq: -1 },
          limit: 101,
        },
        blockIndex,
      ],
      ["a block's first time", { filter: { block: 'conv7/0' }, sort: { seq: 1 }, limit: 1 }, blockIndex],
    ];
    for (const [what, find, index] of hot) {
      const e = await explain(db, find);
      expect({
        what,
        pushed: e.filterPushdown,
        index: e.plan.includes(`"Index Name":"${index}"`),
        seq: e.plan.includes('Seq Scan'),
      }).toEqual({
        what,
        pushed: true,
        index: true,
        seq: false,
      });
    }

    // The real queries, many times each (a cached generic plan would have dropped the index after five).
    const before = await indexScans(db, events);
    const runs = 8;
    const layout = { blocks: true, ordered: true, lastSeq: PER_CONVERSATION, lastTimestamp: null };
    for (let i = 0; i < runs; i++) {
      const page = await store.search({ conversationId: 'conv7' }, { descending: false, limit: 10 });
      expect(page.jsons).toHaveLength(10);
      expect(await store.count({ conversationId: 'conv7', kind: 'ActionEvent' })).toBe(10);
      expect((await store.getByIds('conv7', ['ev1', 'ev2', 'nope'])).size).toBe(2);
      expect(await store.range('conv7', 95, 100)).toHaveLength(5);
      expect(await store.seqOf('conv7', 'ev3')).toBe(4);
      const inBlocks = await store.search(
        { conversationId: 'conv7', timestampGte: '2026-01-01T00:00:30.000Z' },
        { descending: false, limit: 10 },
        layout,
      );
      expect(inBlocks.jsons.map((j) => JSON.parse(j).id)).toEqual(Array.from({ length: 10 }, (_, i) => `ev${30 + i}`));
      expect(await store.range('conv7', 95, 100, undefined, true)).toHaveLength(5);
    }
    const grew = async () => {
      const after = await indexScans(db, events);
      const d = (name: string) => (after.get(name) ?? 0) - (before.get(name) ?? 0);
      return { conversation: d(conversationIndex), id: d(`${events}__id_gin`), block: d(blockIndex) };
    };
    // A backend sends its counts at a transaction's end at most once a second, an idle one within 10 s.
    await eventually(
      async () => {
        const delta = await grew();
        expect(delta.conversation).toBeGreaterThanOrEqual(runs * 4);
        expect(delta.id).toBeGreaterThanOrEqual(runs);
        expect(delta.block).toBeGreaterThanOrEqual(runs * 3);
      },
      { timeoutMs: 15_000, intervalMs: 250 },
    );
    await db.dropDatabase();
  });

  it('leaves a MongoDB-wire server that is not a FerretDB on this PostgreSQL alone', async () => {
    // A database name FerretDB never saw: its schema does not exist in PostgreSQL.
    const db = mongo.db(uniqueName('absent'));
    await expect(ensurePostgresIndexes(db, postgresUrl, [])).resolves.toEqual({
      skipped: expect.stringMatching(/has no FerretDB schema/),
    });
  });
});
