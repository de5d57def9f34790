/**
 * The real Temporal server (go.temporal.io/server, the version the CLI embeds) on PostgreSQL: what a
 * production cluster runs, where the dev server is one process on SQLite.
 *
 * - Storage: the databases `temporal` and `temporal_visibility` (SQL advanced visibility, which needs the
 *   `btree_gin` extension the embedded PostgreSQL ships), owned by a role of their own
 *   (`agent_control_temporal`, its password made once beside the cluster's), made by the superuser from the
 *   `postgres` database; their schemas set up and brought up to date by the server's own schema tool,
 *   logged in as that role (its password in the tool's environment, never on a command line).
 * - Nodes: each runs every service (frontend, history, matching, worker) on ports of its own; nodes of the
 *   same databases find each other through its `cluster_membership` table, so two on loopback are a real
 *   two-node cluster. A node's configuration holds the role's password: written 0600 at each start.
 * - The namespace: the real server makes none. `ensureNamespace` registers it (a race with another node
 *   or launcher is no error); the worker registers the search attributes (search-attributes-ensure.ts).
 */
import { Connection } from '@temporalio/client';
import { msToTs } from '@temporalio/common/lib/time';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { Client as PgClient } from 'pg';
import { TEMPORAL_SERVER_PORT_OFFSETS } from '../../src/config';
import { freePortUpTo, portOpen } from '../../src/process/net';
import { startChild, type Child } from './child';
import { ensureDatabasesRole } from './postgres-service-role';

export const TEMPORAL_ROLE = 'agent_control_temporal';
export const TEMPORAL_DATABASES = { history: 'temporal', visibility: 'temporal_visibility' } as const;
/** The schema tool's embedded schema of each database. */
const SCHEMAS: Record<string, string> = {
  [TEMPORAL_DATABASES.history]: 'postgresql/v12/temporal',
  [TEMPORAL_DATABASES.visibility]: 'postgresql/v12/visibility',
};
/**
 * Fixed for the life of a cluster (the count stored at its first start wins over any later config):
 * workflows are spread over this many history shards. Sized for this embedded, loopback cluster.
 */
export const HISTORY_SHARDS = 4;
/**
 * Connections of a node: each of its four services has its own pools, so a node holds up to 4 x (8 + 2).
 * The role is limited to enough for two nodes and the schema tool, well under PostgreSQL's 200, which
 * FerretDB's pools share.
 */
const POOL = { history: 8, visibility: 2 };
const ROLE_CONNECTION_LIMIT = 90;
/** How long a closed workflow's history is kept in a namespace this registers. */
const RETENTION_SECONDS = 3 * 24 * 3600;

/** Where the databases live: the embedded PostgreSQL (or any), reached as its superuser for the setup. */
export interface TemporalStore {
  host: string;
  port: number;
  /** The superuser's URL of a database of this server. */
  superuserUrl: (database: string) => string;
  /** The Temporal role's password file (made once, first writer wins). */
  passwordFile: string;
}

function run(command: string, args: string[], env: NodeJS.ProcessEnv): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    child.on('error', reject);
    child.on('close', (code) =>
      code === 0
        ? resolve(out)
        : reject(
            new Error(
              `${path.basename(command)} ${args.join(' ')} failed (exit ${code}):\n${out.trim().split('\n').slice(-5).join('\n')}`,
            ),
          ),
    );
  });
}

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

/** The membership table keeps a node's ports in a smallint column: a port above this stops the node at start. */
export const MAX_MEMBERSHIP_PORT = 32_767;

/** A node's ports: its frontend's gRPC port is the cluster's address; every other port is its own. */
export interface TemporalNodePorts {
  frontend: number;
  frontendHttp: number;
  history: number;
  matching: number;
  worker: number;
  /** The membership (ringpop) ports of frontend, history, matching and worker, in that order. */
  membership: [number, number, number, number];
}

/** Free ports for a node (each at most MAX_MEMBERSHIP_PORT), none of `taken`, which gets them: the tests' and benches' nodes. */
export async function freeNodePorts(taken: Set<number> = new Set()): Promise<TemporalNodePorts> {
  const ports = new Set<number>();
  while (ports.size < 9) {
    const port = await freePortUpTo(MAX_MEMBERSHIP_PORT);
    if (!taken.has(port)) ports.add(port);
  }
  for (const port of ports) taken.add(port);
  const [frontend, frontendHttp, history, matching, worker, ...membership] = [...ports];
  return {
    frontend: frontend!,
    frontendHttp: frontendHttp!,
    history: history!,
    matching: matching!,
    worker: worker!,
    membership: membership as TemporalNodePorts['membership'],
  };
}

/** The usual layout around a frontend port (the launcher's: the config reserves the same ports from sandboxes). */
export const portsAround = (frontend: number): TemporalNodePorts => {
  const o = TEMPORAL_SERVER_PORT_OFFSETS;
  return {
    frontend,
    frontendHttp: frontend + o.frontendHttp,
    history: frontend + o.history,
    matching: frontend + o.matching,
    worker: frontend + o.worker,
    membership: o.membership.map((d) => frontend + d) as unknown as TemporalNodePorts['membership'],
  };
};

export interface TemporalNodeOptions {
  binary: string;
  /** The node's own directory: its configuration, log and pid file. */
  dir: string;
  ports: TemporalNodePorts;
  store: TemporalStore;
  /** The Temporal role's password (prepareTemporalStore's answer). */
  password: string;
  /** The frontend every node names as the cluster's (the first node's). */
  clusterFrontendPort: number;
  namespace: string;
  pidFile?: boolean;
  onSpawn?: (child: Child) => void;
}

function nodeConfig(o: TemporalNodeOptions): string {
  const store = (database: string, conns: number) => ({
    sql: {
      pluginName: 'postgres12',
      databaseName: database,
      connectAddr: `${o.store.host}:${o.store.port}`,
      connectProtocol: 'tcp',
      user: TEMPORAL_ROLE,
      password: o.password,
      maxConns: conns,
      maxIdleConns: conns,
      maxConnLifetime: '1h',
    },
  });
  const rpc = (grpcPort: number, membershipPort: number, extra: Record<string, number> = {}) => ({
    rpc: { grpcPort, membershipPort, bindOnLocalHost: true, ...extra },
  });
  const { ports } = o;
  const config = {
    log: { stdout: true, level: 'warn' },
    persistence: {
      defaultStore: 'default',
      visibilityStore: 'visibility',
      numHistoryShards: HISTORY_SHARDS,
      datastores: {
        default: store(TEMPORAL_DATABASES.history, POOL.history),
        visibility: store(TEMPORAL_DATABASES.visibility, POOL.visibility),
      },
    },
    global: { membership: { maxJoinDuration: '30s', broadcastAddress: '127.0.0.1' } },
    services: {
      frontend: rpc(ports.frontend, ports.membership[0], { httpPort: ports.frontendHttp }),
      history: rpc(ports.history, ports.membership[1]),
      matching: rpc(ports.matching, ports.membership[2]),
      worker: rpc(ports.worker, ports.membership[3]),
    },
    clusterMetadata: {
      enableGlobalNamespace: false,
      failoverVersionIncrement: 10,
      masterClusterName: 'active',
      currentClusterName: 'active',
      clusterInformation: {
        active: {
          enabled: true,
          initialFailoverVersion: 1,
          rpcName: 'frontend',
          rpcAddress: `127.0.0.1:${o.clusterFrontendPort}`,
        },
      },
    },
    dcRedirectionPolicy: { policy: 'noop' },
    dynamicConfigClient: { filepath: path.join(o.dir, 'config', 'dynamic.yaml'), pollInterval: '60s' },
  };
  // JSON is YAML: no YAML writer needed, and every string is quoted.
  return JSON.stringify(config, null, 2) + '\n';
}

/**
 * As the dev server is started (temporal-dev-server.ts): a workflow task that schedules an activity gets it
 * back in its answer when the worker can run it (eager dispatch).
 */
const DYNAMIC_CONFIG = ['system.enableActivityEagerExecution:', '  - value: true', ''].join('\n');

/** True when the frontend answers a round trip (within `timeoutMs`, connecting included). */
export async function frontendAnswers(address: string, timeoutMs = 1500): Promise<boolean> {
  let connection: Connection | undefined;
  try {
    connection = await Connection.connect({ address, connectTimeout: Math.min(timeoutMs, 3000) });
    await connection.withDeadline(Date.now() + timeoutMs, () => connection!.workflowService.getSystemInfo({}));
    return true;
  } finally {
    await connection?.close().catch(() => undefined);
  }
}

/** Registers `namespace` unless it exists (another node or launcher may register it at the same moment). */
export async function ensureNamespace(address: string, namespace: string): Promise<boolean> {
  const connection = await Connection.connect({ address });
  try {
    await connection.withDeadline(Date.now() + 30_000, () =>
      connection.workflowService.registerNamespace({
        namespace,
        workflowExecutionRetentionPeriod: msToTs(RETENTION_SECONDS * 1000),
      }),
    );
    return true;
  } catch (e) {
    if ((e as { code?: number }).code === 6 /* ALREADY_EXISTS */) return false;
    throw e;
  } finally {
    await connection.close().catch(() => undefined);
  }
}

/**
 * A server's `config` directory under `dir` (both 0700, neither a link), and a writer of its files: each
 * written anew (0600: a node's holds the password), never through a link left there.
 */
export function configFiles(dir: string): (name: string, text: string) => void {
  const configDir = path.join(dir, 'config');
  fs.mkdirSync(configDir, { recursive: true, mode: 0o700 });
  for (const d of [dir, configDir]) {
    if (!fs.lstatSync(d).isDirectory()) throw new Error(`${d} is not a directory of its own (a link?)`);
    fs.chmodSync(d, 0o700);
  }
  return (name, text) => {
    const file = path.join(configDir, name);
    fs.rmSync(file, { force: true });
    fs.writeFileSync(file, text, { mode: 0o600, flag: 'wx' });
  };
}

/** Starts one node of the cluster (every service in one process) and waits until its frontend answers. */
export async function startTemporalNode(o: TemporalNodeOptions): Promise<Child & { address: string }> {
  const wrong = o.ports.membership.filter((p) => p < 1 || p > MAX_MEMBERSHIP_PORT);
  if (wrong.length)
    throw new Error(
      `Temporal membership ports ${wrong.join(', ')} are not within 1..${MAX_MEMBERSHIP_PORT}: its membership table keeps them as smallint`,
    );
  const write = configFiles(o.dir);
  write('node.yaml', nodeConfig(o));
  write('dynamic.yaml', DYNAMIC_CONFIG);
  const address = `127.0.0.1:${o.ports.frontend}`;
  const child = await startChild({
    name: 'temporal',
    command: o.binary,
    args: ['--root', o.dir, '--config', 'config', '--env', 'node', '--allow-no-auth', 'start'],
    // Nothing of the launcher's environment (its secrets; a TEMPORAL_* variable would change what it loads).
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', TZ: process.env.TZ ?? 'UTC' },
    cwd: o.dir,
    logFile: path.join(o.dir, 'temporal.log'),
    pidFile: o.pidFile ? path.join(o.dir, 'temporal.pid') : undefined,
    onSpawn: o.onSpawn,
    readyTimeoutMs: 120_000,
    ready: async () => (await portOpen(o.ports.frontend)) && (await frontendAnswers(address)),
    alive: () => frontendAnswers(address, 4000),
  });
  return Object.assign(child, { address });
}
