/**
 * The embedded MongoDB-wire server with what it stores into, for the test setup and the benchmarks:
 * FerretDB on an embedded PostgreSQL (the default) or on SQLite files, in one directory. The launcher
 * starts the same two servers one by one, each under its supervisor.
 */
import path from 'node:path';
import { freePort } from '../../src/process/net';
import type { Child } from './child';
import { startFerretdb } from './ferretdb-server';
import { requirePostgresBinDir, startPostgres, type PostgresServer } from './postgres-server';

export const FERRETDB_BACKENDS = ['postgresql', 'sqlite'] as const;
export type FerretdbBackendName = (typeof FERRETDB_BACKENDS)[number];

/** FERRETDB_BACKEND of the test setup and the benchmarks (the service reads it through src/config/). */
export function ferretdbBackendFromEnv(env: NodeJS.ProcessEnv = process.env): FerretdbBackendName {
  const backend = env.FERRETDB_BACKEND || 'postgresql';
  if (!(FERRETDB_BACKENDS as readonly string[]).includes(backend))
    throw new Error(`FERRETDB_BACKEND must be one of ${FERRETDB_BACKENDS.join(', ')}`);
  return backend as FerretdbBackendName;
}

export interface DocumentStore {
  /** The MongoDB URI; on PostgreSQL with the user and password FerretDB logs in with (it refuses clients without). */
  uri: string;
  backend: FerretdbBackendName;
  /** PostgreSQL's own URL (with its password), for EXPLAIN and the benchmarks' raw queries. */
  postgresUrl?: string;
  /** The processes, the first started first. */
  children: Child[];
  stop(graceMs?: number): Promise<void>;
}

export async function startDocumentStore(o: {
  ferretdbBinary: string;
  dir: string;
  backend?: FerretdbBackendName;
  /** Throw-away data: PostgreSQL without fsync. */
  durable?: boolean;
}): Promise<DocumentStore> {
  const backend = o.backend ?? 'postgresql';
  let postgres: PostgresServer | undefined;
  if (backend === 'postgresql') {
    postgres = await startPostgres({
      binDir: requirePostgresBinDir(),
      dir: path.join(o.dir, 'postgres'),
      port: await freePort(),
      durable: o.durable,
    });
  }
  try {
    const ferret = await startFerretdb({
      binary: o.ferretdbBinary,
      backend: postgres ? { kind: 'postgresql', url: postgres.url } : { kind: 'sqlite' },
      dataDir: path.join(o.dir, 'ferretdb'),
      port: await freePort(),
    });
    const children: Child[] = postgres ? [postgres, ferret] : [ferret];
    return {
      uri: ferret.uri,
      backend,
      postgresUrl: postgres?.url,
      children,
      async stop(graceMs = 10_000) {
        for (const c of [...children].reverse()) await c.stop(graceMs);
      },
    };
  } catch (e) {
    await postgres?.stop(5000);
    throw e;
  }
}
