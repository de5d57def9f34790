import { MongoClient, type Db, type IndexDescription } from 'mongodb';

export interface Database {
  client: MongoClient;
  db: Db;
  close(): Promise<void>;
}

/**
 * Opens a client without waiting for the server: the driver connects on first use, so the api can
 * start (and answer /ready with 503) while MongoDB is still coming up.
 */
export function openDatabase(uri: string, dbName: string, opts: { serverSelectionTimeoutMs?: number; appName?: string } = {}): Database {
  const client = new MongoClient(uri, {
    serverSelectionTimeoutMS: opts.serverSelectionTimeoutMs ?? 5000,
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
 * Creates every declared index (a no-op for those that exist). Run at start-up by the api and the CLI.
 * One index per command: FerretDB 1.24 drops the connection (a server-side panic) when one
 * createIndexes command names several indexes that already exist.
 */
export async function ensureIndexes(db: Db, declared: readonly CollectionIndexes[]): Promise<void> {
  for (const { collection, indexes } of declared) {
    for (const index of indexes) await db.collection(collection).createIndexes([index]);
  }
}
