import { MongoClient, type Collection, type Db, type Document, type Filter, type IndexDescription } from 'mongodb';
import { withinBudget } from './errors';

export interface Database {
  client: MongoClient;
  db: Db;
  close(): Promise<void>;
}

/**
 * How long one attempt of an operation may wait on its connection's socket before it fails (a stalled
 * server): above the event reads' own budget (EVENT_QUERY_TIMEOUT_MS, 7 s, which the server enforces and
 * answers as busy), below the answer's deadline (ANSWER_DEADLINE_MS, 9 s), so a request that waits on a
 * frozen database is answered 503 by its deadline and its connection is given up soon after.
 */
export const SOCKET_TIMEOUT_MS = 8_500;
/**
 * Time budget of a count, sent as the server's `maxTimeMS`: below SOCKET_TIMEOUT_MS, so a count the
 * database is too slow for stops there (a 503 that says busy) instead of timing out its socket and being
 * run a second time by the driver's retry.
 */
export const COUNT_BUDGET_MS = 7_000;

/** Counts `filter`'s documents within COUNT_BUDGET_MS (DatabaseBusyError past it). */
export function countWithinBudget<T extends Document>(
  collection: Collection<T>,
  operation: string,
  filter: Filter<T> = {},
): Promise<number> {
  return withinBudget(operation, COUNT_BUDGET_MS, () =>
    collection.countDocuments(filter, { maxTimeMS: COUNT_BUDGET_MS }),
  );
}

/** How long an operation may wait for a pooled connection to come free: well below the answer's deadline. */
export const WAIT_QUEUE_TIMEOUT_MS = 4_000;

/**
 * Opens a client without waiting for the server: the driver connects on first use, so the api can
 * start (and answer /ready with 503) while MongoDB is still coming up. Every wait is bounded: server
 * selection, a connection from the pool, and the answer on a socket (a frozen server keeps its sockets
 * open and answers nothing). What runs out is a network error the api answers as 503 (store/errors.ts).
 */
export function openDatabase(
  uri: string,
  dbName: string,
  opts: { serverSelectionTimeoutMs?: number; appName?: string } = {},
): Database {
  const client = new MongoClient(uri, {
    serverSelectionTimeoutMS: opts.serverSelectionTimeoutMs ?? 5000,
    socketTimeoutMS: SOCKET_TIMEOUT_MS,
    waitQueueTimeoutMS: WAIT_QUEUE_TIMEOUT_MS,
    appName: opts.appName ?? 'agent-control',
  });
  return { client, db: client.db(dbName), close: () => client.close() };
}

/** A collection's indexes, declared by the store module that queries it. */
export interface CollectionIndexes {
  collection: string;
  indexes: IndexDescription[];
}

/**
 * Creates every declared collection and index (a no-op for those that exist). Run at start-up by the
 * api and the CLI. One index per command: FerretDB 1.24 drops the connection (a server-side panic) when
 * one createIndexes command names several indexes that already exist. A collection declared without
 * indexes is created too: on FerretDB it is a PostgreSQL table from then on, so the indexes of
 * src/store/postgres-indexes.ts can be made before its first document.
 */
export async function ensureIndexes(db: Db, declared: readonly CollectionIndexes[]): Promise<void> {
  let existing: Set<string> | undefined;
  for (const { collection, indexes } of declared) {
    for (const index of indexes) await db.collection(collection).createIndexes([index]);
    if (indexes.length > 0) continue;
    existing ??= new Set((await db.listCollections({}, { nameOnly: true }).toArray()).map((c) => c.name));
    if (existing.has(collection)) continue;
    await db.createCollection(collection).catch((e: { code?: number }) => {
      if (e.code !== 48) throw e; // NamespaceExists: another process made it meanwhile
    });
  }
}
