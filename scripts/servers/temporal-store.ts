/**
 * The real Temporal server's storage on PostgreSQL: the databases `temporal` and `temporal_visibility`
 * (SQL advanced visibility, which needs the `btree_gin` extension the embedded PostgreSQL ships), owned by
 * a role of their own (`agent_control_temporal`, its password made once beside the cluster's), made by the
 * superuser from the `postgres` database; their schemas set up and brought up to date by the server's own
 * schema tool, logged in as that role (its password in the tool's environment, never on a command line).
 */
import { runCaptured } from '../run-captured';
import path from 'node:path';
import { Client as PgClient } from 'pg';
import { ensureDatabasesRole } from './postgres-service-role';

export const TEMPORAL_ROLE = 'agent_control_temporal';
export const TEMPORAL_DATABASES = { history: 'temporal', visibility: 'temporal_visibility' } as const;
/** The schema tool's embedded schema of each database. */
const SCHEMAS: Record<string, string> = {
  [TEMPORAL_DATABASES.history]: 'postgresql/v12/temporal',
  [TEMPORAL_DATABASES.visibility]: 'postgresql/v12/visibility',
};
/**
 * Connections of a node: each of its four services has its own pools, so a node holds up to 4 x (8 + 2).
 * The role is limited to enough for two nodes and the schema tool, well under PostgreSQL's 200, which
 * FerretDB's pools share.
 */
export const NODE_POOL = { history: 8, visibility: 2 };
const ROLE_CONNECTION_LIMIT = 90;

/** Where the databases live: the embedded PostgreSQL (or any), reached as its superuser for the setup. */
export interface TemporalStore {
  host: string;
  port: number;
  /** The superuser's URL of a database of this server. */
  superuserUrl: (database: string) => string;
  /** The Temporal role's password file (made once, first writer wins). */
  passwordFile: string;
}

const run = (command: string, args: string[], env: NodeJS.ProcessEnv) =>
  runCaptured(command, args, {
    env,
    tailLines: 5,
    failure: (code, tail) => `${path.basename(command)} ${args.join(' ')} failed (exit ${code}):\n${tail}`,
  });

const roleUrl = (store: TemporalStore, password: string, database: string) =>
  `postgres://${TEMPORAL_ROLE}:${encodeURIComponent(password)}@${store.host}:${store.port}/${database}?sslmode=disable`;

/** Whether the schema tool has set up its version table in `database` yet. */
async function versioned(url: string): Promise<boolean> {
  const c = new PgClient({ connectionString: url, connectionTimeoutMillis: 10_000, query_timeout: 30_000 });
  c.on('error', () => undefined);
  await c.connect();
  try {
    const r = await c.query<{ t: string | null }>("SELECT pg_catalog.to_regclass('public.schema_version')::text AS t");
    return r.rows[0]?.t != null;
  } finally {
    await c.end().catch(() => undefined);
  }
}

/**
 * Makes the role and both databases, and sets up or updates their schemas to the tool's latest (a no-op
 * when they are current). Answers the role's password.
 */
export async function prepareTemporalStore(sqlTool: string, store: TemporalStore): Promise<string> {
  const password = await ensureDatabasesRole({
    superuserUrl: store.superuserUrl,
    role: TEMPORAL_ROLE,
    databases: Object.values(TEMPORAL_DATABASES),
    passwordFile: store.passwordFile,
    connectionLimit: ROLE_CONNECTION_LIMIT,
  });
  // The tool's own environment variables: the password is on no command line.
  const env = {
    PATH: process.env.PATH,
    SQL_HOST: store.host,
    SQL_PORT: String(store.port),
    SQL_USER: TEMPORAL_ROLE,
    SQL_PASSWORD: password,
    SQL_PLUGIN: 'postgres12',
  };
  for (const database of Object.values(TEMPORAL_DATABASES)) {
    const dbEnv = { ...env, SQL_DATABASE: database };
    if (!(await versioned(roleUrl(store, password, database))))
      await run(sqlTool, ['setup-schema', '-v', '0.0'], dbEnv);
    await run(sqlTool, ['update-schema', '--schema-name', SCHEMAS[database]!], dbEnv);
  }
  return password;
}
