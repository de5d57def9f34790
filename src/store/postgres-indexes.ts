/**
 * Indexes FerretDB 1.24's PostgreSQL backend can use. FerretDB maps a collection to a table of one
 * `jsonb` column (`_jsonb`) and pushes an equality filter into SQL as `_jsonb -> 'field' @> '<value>'`;
 * the indexes it makes for `createIndexes` are btree indexes on `(_jsonb -> 'field')`, which cannot
 * answer `@>`: every pushed-down query, even one by `_id`, is a sequential scan of the table (checked
 * with EXPLAIN, test/postgres-indexes.test.ts). A GIN index on the same expression (jsonb_path_ops)
 * answers `@>`: a page of one conversation costs what the conversation holds, not what the table holds.
 *
 * For each collection: one such index on `_id` and one on the leading field of each declared index (the
 * field every query of that collection filters on by equality). Made directly in PostgreSQL, in the
 * schema FerretDB keeps the database in, for the tables its metadata table names.
 */
import type { Db } from 'mongodb';
import { Client } from 'pg';
import type { CollectionIndexes } from './mongo';

/** FerretDB's table of `{_id: <collection>, table: <table name>, ...}` documents, one per schema. */
const METADATA_TABLE = '_ferretdb_database_metadata';

/** The fields to index per collection: `_id` and each declared index's leading field. */
export function ginFields(declared: readonly CollectionIndexes[]): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const { collection, indexes } of declared) {
    const fields = new Set(out.get(collection) ?? ['_id']);
    for (const index of indexes) {
      const leading = Object.keys(index.key)[0];
      if (leading) fields.add(leading);
    }
    out.set(collection, [...fields]);
  }
  return out;
}

const ident = (s: string) => `"${s.replace(/"/g, '""')}"`;
const literal = (s: string) => `'${s.replace(/'/g, "''")}'`;

/** PostgreSQL identifiers are at most 63 bytes: a long name keeps its start and a hash of the whole. */
function indexName(table: string, field: string): string {
  const name = `${table}_${field.replace(/[^A-Za-z0-9_]/g, '_')}_gin`;
  if (name.length <= 63) return name;
  let h = 0;
  for (const c of name) h = (Math.imul(h, 31) + c.charCodeAt(0)) >>> 0;
  return `${name.slice(0, 54)}_${h.toString(16).padStart(8, '0')}`;
}

/** What one call did: how many indexes it made, or why it made none. */
export type PostgresIndexesOutcome = { made: number } | { skipped: string };

/**
 * Makes the GIN indexes that are missing, for the collections that exist (ensureIndexes creates the
 * declared ones first). Idempotent; a few milliseconds once everything exists. Answers why it did
 * nothing when the database is not a FerretDB one on this PostgreSQL (a wrong POSTGRES_URL, or
 * MONGODB_URI naming another server): the caller says so, since every query then scans its table.
 */
export async function ensurePostgresIndexes(
  db: Db,
  postgresUrl: string,
  declared: readonly CollectionIndexes[],
): Promise<PostgresIndexesOutcome> {
  const client = new Client({
    connectionString: postgresUrl,
    connectionTimeoutMillis: 5000,
    statement_timeout: 60_000,
  });
  client.on('error', () => undefined);
  await client.connect();
  try {
    const schema = db.databaseName;
    const metadata = `${ident(schema)}.${METADATA_TABLE}`;
    // No such table: the MongoDB-wire server is not a FerretDB on this PostgreSQL (a real MongoDB, say).
    if ((await client.query<{ t: string | null }>('SELECT to_regclass($1) AS t', [metadata])).rows[0]?.t == null) {
      return {
        skipped: `PostgreSQL database ${client.database} has no FerretDB schema ${schema}: is POSTGRES_URL the server FerretDB stores into?`,
      };
    }
    const tables = new Map<string, string>();
    const rows = await client.query<{ collection: string; table: string }>(
      `SELECT _jsonb->>'_id' AS collection, _jsonb->>'table' AS table FROM ${metadata}`,
    );
    for (const r of rows.rows) tables.set(r.collection, r.table);
    const present = new Set(
      (
        await client.query<{ indexname: string }>('SELECT indexname FROM pg_indexes WHERE schemaname = $1', [schema])
      ).rows.map((r) => r.indexname),
    );
    let made = 0;
    for (const [collection, fields] of ginFields(declared)) {
      const table = tables.get(collection);
      if (!table) continue;
      for (const field of fields) {
        const name = indexName(table, field);
        if (present.has(name)) continue;
        await client
          .query(
            `CREATE INDEX IF NOT EXISTS ${ident(name)} ON ${ident(schema)}.${ident(table)} USING gin ((_jsonb -> ${literal(field)}) jsonb_path_ops)`,
          )
          .catch((e: { code?: string }) => {
            // 23505/42P07: another process (a second api, the admin CLI) created it at the same moment.
            if (e.code !== '23505' && e.code !== '42P07') throw e;
          });
        made++;
      }
    }
    return { made };
  } finally {
    await client.end().catch(() => undefined);
  }
}
