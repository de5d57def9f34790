/**
 * Starts FerretDB on loopback, telemetry off, state under the given directory, on one of its two
 * backends: PostgreSQL (the default: filters on equality, sorts and limits run in SQL, on indexes made
 * through the driver) or SQLite (files under the directory; every query but `{_id: <string>}` reads the
 * whole collection).
 *
 * On PostgreSQL, FerretDB keeps no users of its own: it logs in to PostgreSQL as the client that
 * connects to it (MongoDB's PLAIN mechanism), with the user and password that client gives. It is
 * started with a PostgreSQL URL that carries neither, so a client that gives none, or a wrong one, is
 * refused by PostgreSQL on every command that reads or writes; the credentials go into the MongoDB URI
 * of the clients (`uri`). SQLite has no users: every local process may read and write.
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

/** A client kept for probing one server: `answers()` as mongoAnswers, `close()` once the server is gone. */
export function mongoProbe(uri: string): { answers(): Promise<boolean>; close(): Promise<void> } {
  const client = new MongoClient(uri, {
    serverSelectionTimeoutMS: 2000,
    connectTimeoutMS: 2000,
    socketTimeoutMS: 4000,
    maxPoolSize: 1,
  });
  return {
    answers: async () => (await client.db('admin').command({ listDatabases: 1, nameOnly: true }), true),
    close: () => client.close(),
  };
}

export async function mongoAnswers(uri: string): Promise<boolean> {
  const client = new MongoClient(uri, {
    serverSelectionTimeoutMS: 1000,
    connectTimeoutMS: 1000,
    socketTimeoutMS: 4000,
  });
  try {
    // Lists databases rather than a ping: it reaches the backend (a ping can answer before PostgreSQL does).
    await client.db('admin').command({ listDatabases: 1, nameOnly: true });
    return true;
  } finally {
    await client.close();
  }
}

export interface PostgresCredentials {
  username: string;
  password: string;
}

/**
 * Splits a PostgreSQL URL into the URL FerretDB is started with (no user, no password) and the
 * credentials its clients log in with. A URL without a user and a password is kept whole: whoever runs
 * that PostgreSQL lets in whom it chooses (`trust`, a password from the environment, ...).
 */
export function splitPostgresCredentials(url: string): { serverUrl: string; credentials?: PostgresCredentials } {
  const u = new URL(url);
  // pgx also reads them as query parameters, as libpq does.
  const username = decodeURIComponent(u.username) || u.searchParams.get('user') || '';
  const password = decodeURIComponent(u.password) || u.searchParams.get('password') || '';
  if (!username || !password) return { serverUrl: url };
  u.username = '';
  u.password = '';
  u.searchParams.delete('user');
  u.searchParams.delete('password');
  return { serverUrl: u.toString(), credentials: { username, password } };
}

/** The MongoDB URI of a FerretDB on loopback: with credentials, PLAIN (the only mechanism FerretDB 1.24 takes on PostgreSQL). */
export function ferretdbUri(port: number, credentials?: PostgresCredentials): string {
  if (!credentials) return `mongodb://127.0.0.1:${port}/`;
  const { username, password } = credentials;
  return `mongodb://${encodeURIComponent(username)}:${encodeURIComponent(password)}@127.0.0.1:${port}/?authMechanism=PLAIN`;
}

/** The URI with its password replaced, for logs and the terminal. */
export function redactUri(uri: string): string {
  return uri.replace(/\/\/([^:@/]*):[^@/]*@/, '//$1:***@');
}

/**
 * pgx's other sources of a password (the environment, `~/.pgpass`, a service file): none may log in a
 * client that gave no credentials.
 */
function withoutPostgresPasswords(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const { PGPASSWORD: _password, PGUSER: _user, PGSERVICE: _service, PGSERVICEFILE: _serviceFile, ...rest } = env;
  return { ...rest, PGPASSFILE: '/dev/null' };
}

/** The URL with a run-time parameter the PostgreSQL driver (pgx) sends at connect, unless it sets one already. */
function withParam(url: string, name: string, value: string): string {
  const u = new URL(url);
  if (!u.searchParams.has(name)) u.searchParams.set(name, value);
  return u.toString();
}

export async function startFerretdb(o: FerretdbOptions): Promise<Child & { uri: string }> {
  const split = o.backend.kind === 'postgresql' ? splitPostgresCredentials(o.backend.url) : undefined;
  const uri = ferretdbUri(o.port, split?.credentials);
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
  const postgresUrl = split ? withParam(split.serverUrl, 'plan_cache_mode', 'force_custom_plan') : undefined;
  const probe = mongoProbe(uri);
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
    // In the environment, not on a command line others can read: a URL kept whole may carry a password.
    env: {
      ...(split?.credentials ? withoutPostgresPasswords(process.env) : process.env),
      DO_NOT_TRACK: '1',
      ...(postgresUrl ? { FERRETDB_POSTGRESQL_URL: postgresUrl } : {}),
    },
    cwd: o.dataDir,
    logFile: path.join(o.dataDir, 'ferretdb.log'),
    pidFile: o.pidFile ? path.join(o.dataDir, 'ferretdb.pid') : undefined,
    onSpawn: o.onSpawn,
    readyTimeoutMs: 30_000,
    ready: async () => (await portOpen(o.port)) && (await mongoAnswers(uri)),
    // Through to PostgreSQL: a FerretDB whose pool is stuck after a stall accepts connections and answers
    // nothing. One client for the child's life (a client per probe ends sessions FerretDB does not know: 3 warnings each).
    alive: () => probe.answers(),
  }).catch(async (e: unknown) => {
    await probe.close();
    throw e;
  });
  void child.exited.then(() => probe.close());
  return Object.assign(child, { uri });
}
