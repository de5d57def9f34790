/**
 * The real Temporal server (go.temporal.io/server, the version the CLI embeds) on PostgreSQL: what a
 * production cluster runs, where the dev server is one process on SQLite. Its storage is prepared by
 * temporal-store.ts, its ports laid out by temporal-node-ports.ts.
 *
 * - Nodes: each runs every service (frontend, history, matching, worker) on ports of its own; nodes of the
 *   same databases find each other through its `cluster_membership` table, so two on loopback are a real
 *   two-node cluster. A node's configuration holds the role's password: written 0600 at each start.
 * - The namespace: the real server makes none. `ensureNamespace` registers it (a race with another node
 *   or launcher is no error); the worker registers the search attributes (search-attributes-ensure.ts).
 */
import { Connection } from '@temporalio/client';
import { msToTs } from '@temporalio/common/lib/time';
import path from 'node:path';
import { portOpen } from '../../src/process/net';
import type { Child } from './child';
import { configFiles, startTemporalBinary } from './temporal-binary';
import { MAX_MEMBERSHIP_PORT, type TemporalNodePorts } from './temporal-node-ports';
import { NODE_POOL, TEMPORAL_DATABASES, TEMPORAL_ROLE, type TemporalStore } from './temporal-store';

/**
 * Fixed for the life of a cluster (the count stored at its first start wins over any later config):
 * workflows are spread over this many history shards. Sized for this embedded, loopback cluster.
 */
export const HISTORY_SHARDS = 4;
/** How long a closed workflow's history is kept in a namespace this registers. */
const RETENTION_SECONDS = 3 * 24 * 3600;

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
        default: store(TEMPORAL_DATABASES.history, NODE_POOL.history),
        visibility: store(TEMPORAL_DATABASES.visibility, NODE_POOL.visibility),
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
  const child = await startTemporalBinary(o, {
    name: 'temporal',
    configName: 'node',
    flags: ['--allow-no-auth'],
    readyTimeoutMs: 120_000,
    ready: async () => (await portOpen(o.ports.frontend)) && (await frontendAnswers(address)),
    alive: () => frontendAnswers(address, 4000),
  });
  return Object.assign(child, { address });
}
