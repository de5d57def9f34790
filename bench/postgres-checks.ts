/**
 * What the events bench asks PostgreSQL under FerretDB: the table of a collection, the GIN indexes the
 * figures depend on, and the server's version for the summary line.
 */
import type { Db } from 'mongodb';
import { Client } from 'pg';
import { setTimeout as sleep } from 'node:timers/promises';

/** FerretDB's PostgreSQL table of a collection (FerretDB keeps a database in the schema of its name). */
export async function tableOf(pg: Client, db: Db, collection: string): Promise<string | undefined> {
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
 * has none on `conversation_id` or on `block`: the api (or the bench) did not make them, and the figures
 * would be the ones of a sequential scan.
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
