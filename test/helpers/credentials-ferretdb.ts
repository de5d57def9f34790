/**
 * A FerretDB of a suite's own on PostgreSQL (the shared one, or one of its own when the setup has none),
 * started from an environment that names PostgreSQL's user and password, with a database holding ten
 * secret documents: what the database-credentials suites try to reach without the credentials.
 * `useCredentialsFerretdb()` starts it for the calling describe and fills the bindings below; jest gives
 * each test file its own instance of this module, and its transform reads imports from the module object,
 * so each file sees its own, live values.
 */
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { MongoClient } from 'mongodb';
import { startDocumentStore, type DocumentStore } from '../../scripts/servers/document-store';
import { startFerretdb } from '../../scripts/servers/ferretdb-server';
import { freePort } from '../../src/process/net';
import { testEnv, uniqueName } from './env';

/** What PostgreSQL answers FerretDB when a client gave no credentials or wrong ones. */
export const POSTGRES_REFUSED =
  /failed SASL auth: FATAL: password authentication failed for user "[^"]+" \(SQLSTATE 28P01\)/;

export interface CredentialsFerretdb {
  ferret: Awaited<ReturnType<typeof startFerretdb>>;
  postgresUrl: string;
  /** PostgreSQL's password for the service's user, as in postgresUrl. */
  password: string;
  /** FerretDB's port on loopback. */
  port: number;
  /** A client with the credentials (ferret.uri). */
  owner: MongoClient;
  /** Every client made, closed by stop(). */
  clients: MongoClient[];
  /** A client of `uri`, closed by stop(). */
  client: (uri: string) => MongoClient;
  /** Drops the database, closes the clients, stops FerretDB (and PostgreSQL if it was started here). */
  stop: () => Promise<void>;
}

/** Starts it and writes `dbName`.secrets: ten documents `{ _id: 'k<i>', secret: '<marker>_<i>' }`. */
export async function startCredentialsFerretdb(dbName: string, marker: string): Promise<CredentialsFerretdb> {
  let own: DocumentStore | undefined;
  let ferret: CredentialsFerretdb['ferret'] | undefined;
  let owner: MongoClient | undefined;
  const clients: MongoClient[] = [];
  const client = (uri: string) => {
    const c = new MongoClient(uri, { serverSelectionTimeoutMS: 5000 });
    clients.push(c);
    return c;
  };
  const stop = async () => {
    await owner?.db(dbName).dropDatabase();
    await Promise.all(clients.map((c) => c.close()));
    await ferret?.stop();
    await own?.stop();
  };

  try {
    const env = testEnv();
    if (!env.postgresUrl)
      own = await startDocumentStore({
        ferretdbBinary: env.binaries.ferretdb,
        dir: path.join(env.dir, uniqueName('credentials-store')),
        durable: false,
      });
    const postgresUrl = env.postgresUrl ?? own!.postgresUrl!;
    const password = decodeURIComponent(new URL(postgresUrl).password);
    const port = await freePort();
    // A FerretDB of the suite's own on the shared PostgreSQL, started from an environment that names the
    // user and the password (as a shell with PGUSER and PGPASSWORD exported does): pgx would log in an
    // anonymous client with them, so FerretDB must not see them.
    const saved = { PGUSER: process.env.PGUSER, PGPASSWORD: process.env.PGPASSWORD };
    process.env.PGUSER = decodeURIComponent(new URL(postgresUrl).username);
    process.env.PGPASSWORD = password;
    try {
      ferret = await startFerretdb({
        binary: env.binaries.ferretdb,
        backend: { kind: 'postgresql', url: postgresUrl },
        dataDir: path.join(env.dir, uniqueName('credentials-ferretdb')),
        port,
      });
    } finally {
      for (const [k, v] of Object.entries(saved)) {
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
      }
    }
    owner = client(ferret.uri);
    await owner
      .db(dbName)
      .collection('secrets')
      .insertMany(Array.from({ length: 10 }, (_, i) => ({ _id: `k${i}` as never, secret: `${marker}_${i}` })));
    return { ferret, postgresUrl, password, port, owner, clients, client, stop };
  } catch (e) {
    await Promise.all(clients.map((c) => c.close().catch(() => undefined)));
    await ferret?.stop().catch(() => undefined);
    await own?.stop().catch(() => undefined);
    throw e;
  }
}

/** The test file's database and the marker of its secrets. */
export const dbName = uniqueName('secrets');
export const marker = `SECRET_${randomBytes(6).toString('hex')}`;
export let ferret: CredentialsFerretdb['ferret'];
export let postgresUrl: string;
export let password: string;
export let port: number;
export let owner: MongoClient;
export let clients: MongoClient[];
export let client: CredentialsFerretdb['client'];
/** This FerretDB's address without credentials. */
export const anonymousUri = () => `mongodb://127.0.0.1:${port}/`;

/** Starts the FerretDB for the calling describe (its beforeAll) and stops it after (its afterAll). */
export function useCredentialsFerretdb(): void {
  let store: CredentialsFerretdb | undefined;
  beforeAll(async () => {
    store = await startCredentialsFerretdb(dbName, marker);
    ({ ferret, postgresUrl, password, port, owner, clients, client } = store);
  }, 120_000);
  afterAll(() => store?.stop());
}
