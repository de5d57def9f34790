/**
 * The launcher's MongoDB-wire store: MONGODB_URI's when set, else FerretDB, supervised, on an operator's
 * PostgreSQL (POSTGRES_URL), on the embedded PostgreSQL it starts first, or on SQLite files.
 */
import path from 'node:path';
import type { Config } from '../src/config';
import type { Logger } from '../src/logger';
import type { Launch } from './launch-context';
import { redactUri, startFerretdb, type FerretdbBackend } from './servers/ferretdb-server';
import type { ServerBinaries } from './servers/obtain';
import { postgresIsSuperuser, postgresLogin, requirePostgresBinDir, startPostgres } from './servers/postgres-server';
import { migrateSqliteData } from './servers/sqlite-migration';
import type { SuperviseOptions } from './servers/supervisor-options';

/** Where the api and the worker keep their documents. */
export interface DocumentStore {
  mongoUri: string;
  /** What the store keeps its data in, for the launcher's summary. */
  storage: string;
  /** The PostgreSQL behind the MongoDB-wire server, for the api's indexes: the operator's when they run both. */
  postgresUrl?: string;
}

/** What FerretDB stores into, and how the summary says it. */
interface FerretdbStorage {
  backend: FerretdbBackend;
  storage: string;
  postgresUrl?: string;
}

/** MONGODB_URI's server, or FerretDB started (`binaries` are set whenever MONGODB_URI is not). */
export async function launchDocumentStore(launch: Launch, binaries?: ServerBinaries): Promise<DocumentStore> {
  const { config } = launch;
  if (config.mongo.uri) return { mongoUri: config.mongo.uri, storage: 'MongoDB', postgresUrl: config.postgres.url };
  await launch.portFree(config.embedded.mongoPort, 'EMBEDDED_MONGODB_PORT');
  const { backend, storage, postgresUrl } = await ferretdbStorage(launch);
  const mongoUri = await startFerretdbOn(launch, backend, binaries!.ferretdb);
  return { mongoUri, storage, postgresUrl };
}

async function ferretdbStorage(launch: Launch): Promise<FerretdbStorage> {
  const { config } = launch;
  if (config.embedded.ferretdbBackend !== 'postgresql') {
    return {
      backend: { kind: 'sqlite' },
      storage: `FerretDB on SQLite files in ${path.join(config.dataDir, 'ferretdb', 'sqlite')}`,
    };
  }
  if (config.postgres.url) return checkOperatorPostgres(config.postgres.url, launch.log);
  return startEmbeddedPostgres(launch);
}

/** POSTGRES_URL's PostgreSQL, once it takes the login. */
async function checkOperatorPostgres(url: string, log: Logger): Promise<FerretdbStorage> {
  // One clear line for a wrong URL, password or database, rather than FerretDB's log after its timeout.
  await postgresLogin(url).catch((e: Error) => {
    throw new Error(`POSTGRES_URL: PostgreSQL did not take the login: ${e.message}`);
  });
  if (await postgresIsSuperuser(url).catch(() => false)) {
    log.warn(
      'POSTGRES_URL logs in as a superuser: the service needs only a role that owns its database (docs/embedded-servers.md, "The embedded database")',
    );
  }
  return {
    backend: { kind: 'postgresql', url },
    storage: 'FerretDB on the PostgreSQL of POSTGRES_URL',
    postgresUrl: url,
  };
}

async function startEmbeddedPostgres({
  config,
  log,
  supervision,
  reclaiming,
  portFree,
}: Launch): Promise<FerretdbStorage> {
  await portFree(config.embedded.postgresPort, 'EMBEDDED_POSTGRES_PORT');
  const pgOptions = {
    binDir: requirePostgresBinDir(),
    dir: path.join(config.dataDir, 'postgres'),
    port: config.embedded.postgresPort,
    pidFile: true,
  };
  const postgres = await supervision.start(
    'postgres',
    reclaiming([pgOptions.port], (onSpawn) => startPostgres({ ...pgOptions, onSpawn })),
    {
      probeFailures: 12, // about 90 s: a checkpoint or an I/O stall is ridden out, not answered with a restart
      killDescendants: true, // its backends, frozen with it, would keep its shared memory
    },
  );
  log.info({ port: config.embedded.postgresPort }, 'PostgreSQL is up');
  return {
    backend: { kind: 'postgresql', url: postgres.url },
    postgresUrl: postgres.url,
    storage: `FerretDB on PostgreSQL 127.0.0.1:${config.embedded.postgresPort} as its service role (password in ${path.join(config.dataDir, 'postgres', 'service-password')})`,
  };
}

/** Starts FerretDB on `backend` and answers its URI. */
async function startFerretdbOn(launch: Launch, backend: FerretdbBackend, binary: string): Promise<string> {
  const { config, log, supervision, reclaiming } = launch;
  const options = {
    binary,
    backend,
    dataDir: path.join(config.dataDir, 'ferretdb'),
    port: config.embedded.mongoPort,
    pidFile: true,
  };
  const ferret = await supervision.start(
    'ferretdb',
    reclaiming([options.port], (onSpawn) => startFerretdb({ ...options, onSpawn })),
    {
      // An operator's PostgreSQL (POSTGRES_URL) is watched through its own probe, never restarted from here.
      dependsOn: postgresDependency(backend, config),
      // About 90 s: what is stuck for good gets restarted; a long statement (an index built on a big
      // table holds FerretDB's catalog lock) is given time.
      probeFailures: 12,
    },
  );
  // On PostgreSQL, with the user and password FerretDB logs in to PostgreSQL with: it takes no client without.
  const mongoUri = ferret.uri;
  // The data of a start before PostgreSQL became the default, moved once.
  if (backend.kind === 'postgresql')
    await migrateSqliteData({ ferretdbBinary: binary, dataDir: config.dataDir, targetUri: mongoUri, log });
  log.info({ uri: redactUri(mongoUri) }, 'FerretDB (MongoDB wire protocol) is up');
  return mongoUri;
}

/** What FerretDB's liveness depends on: the embedded PostgreSQL by name, an operator's by its own probe, or nothing (SQLite). */
function postgresDependency(backend: FerretdbBackend, config: Config): SuperviseOptions['dependsOn'] {
  if (backend.kind !== 'postgresql') return [];
  if (!config.postgres.url) return ['postgres'];
  const url = backend.url;
  return [{ name: 'PostgreSQL (POSTGRES_URL)', alive: () => postgresLogin(url, 4000).then(() => true) }];
}
