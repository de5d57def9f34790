/**
 * Starts FerretDB on loopback, telemetry off, state under the given directory, on one of its two
 * backends: PostgreSQL (the default: filters on equality, sorts and limits run in SQL, on indexes made
 * through the driver) or SQLite (files under the directory; every query but `{_id: <string>}` reads the
 * whole collection).
 */
import { MongoClient } from 'mongodb';
import fs from 'node:fs';
import path from 'node:path';
import { portOpen } from '../../src/process/net';
import { startChild, type Child } from './child';

export type FerretdbBackend = { kind: 'postgresql'; url: string } | { kind: 'sqlite' };

export interface FerretdbOptions {
  binary: string;
  backend: FerretdbBackend;
  dataDir: string;
  port: number;
  pidFile?: boolean;
  onSpawn?: (child: Child) => void;
}

export async function mongoAnswers(uri: string): Promise<boolean> {
  const client = new MongoClient(uri, { serverSelectionTimeoutMS: 1000, connectTimeoutMS: 1000 });
  try {
    // Lists databases rather than a ping: it reaches the backend (a ping can answer before PostgreSQL does).
    await client.db('admin').command({ listDatabases: 1, nameOnly: true });
    return true;
  } finally {
    await client.close();
  }
}

/** The URL with a run-time parameter the PostgreSQL driver (pgx) sends at connect, unless it sets one already. */
function withParam(url: string, name: string, value: string): string {
  const u = new URL(url);
  if (!u.searchParams.has(name)) u.searchParams.set(name, value);
  return u.toString();
}

export async function startFerretdb(o: FerretdbOptions): Promise<Child & { uri: string }> {
  const uri = `mongodb://127.0.0.1:${o.port}/`;
  fs.mkdirSync(o.dataDir, { recursive: true });
  let backend: string[];
  if (o.backend.kind === 'sqlite') {
    const sqliteDir = path.join(o.dataDir, 'sqlite');
    fs.mkdirSync(sqliteDir, { recursive: true });
    backend = ['--handler=sqlite', `--sqlite-url=file:${sqliteDir}/`];
  } else {
    backend = ['--handler=postgresql'];
  }
  // FerretDB sends its queries as prepared statements with the field name as a parameter
  // (`_jsonb -> $1 @> $2`); a plan made for any value of $1 cannot use an index on `_jsonb -> 'field'`.
  // Planning each execution with its values keeps the GIN indexes of src/store/postgres-indexes.ts in use.
  const postgresUrl = o.backend.kind === 'postgresql' ? withParam(o.backend.url, 'plan_cache_mode', 'force_custom_plan') : undefined;
  const child = await startChild({
    name: 'ferretdb',
    command: o.binary,
    args: [
      ...backend,
      `--listen-addr=127.0.0.1:${o.port}`,
      `--state-dir=${o.dataDir}`,
      '--debug-addr=-',
      '--telemetry=disable',
      '--log-level=warn',
      '--log-format=text',
    ],
    // The PostgreSQL URL carries a password: passed in the environment, not on a command line others can read.
    env: { ...process.env, DO_NOT_TRACK: '1', ...(postgresUrl ? { FERRETDB_POSTGRESQL_URL: postgresUrl } : {}) },
    cwd: o.dataDir,
    logFile: path.join(o.dataDir, 'ferretdb.log'),
    pidFile: o.pidFile ? path.join(o.dataDir, 'ferretdb.pid') : undefined,
    onSpawn: o.onSpawn,
    readyTimeoutMs: 30_000,
    ready: async () => (await portOpen(o.port)) && (await mongoAnswers(uri)),
  });
  return Object.assign(child, { uri });
}
