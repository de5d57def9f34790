/**
 * A real Temporal cluster for a test file (scripts/servers/temporal-server.ts): a PostgreSQL of its own
 * under `dir`, the store prepared as the Temporal role, and nodes of one cluster on loopback, the first
 * one's frontend being the cluster's. `stop()` (afterAll) ends what is still running.
 */
import path from 'node:path';
import type { Child } from '../../scripts/servers/child';
import {
  postgresSuperuserUrl,
  requirePostgresBinDir,
  startPostgres,
  type PostgresServer,
} from '../../scripts/servers/postgres-server';
import { freeNodePorts, type TemporalNodePorts } from '../../scripts/servers/temporal-node-ports';
import { ensureNamespace, startTemporalNode } from '../../scripts/servers/temporal-server';
import { prepareTemporalStore, type TemporalStore } from '../../scripts/servers/temporal-store';
import { freePort } from '../../src/process/net';
import { testEnv } from './env';

export type TemporalNode = Child & { address: string };

export interface TemporalCluster {
  postgres: PostgresServer;
  store: TemporalStore;
  /** The Temporal role's password. */
  password: string;
  /** Each node's ports, in the order the nodes were asked for. */
  ports: TemporalNodePorts[];
  /** The nodes started so far (startNode adds one). */
  nodes: TemporalNode[];
  /** Starts node `i` (of `ports`); the first one started registers nothing: call ensureNamespace. */
  startNode(i: number): Promise<TemporalNode>;
  stop(): Promise<void>;
}

/** PostgreSQL and a store for `count` nodes; none started yet. */
export async function temporalCluster(dir: string, count: number): Promise<TemporalCluster> {
  const env = testEnv();
  const port = await freePort();
  const postgres = await startPostgres({
    binDir: requirePostgresBinDir(),
    dir: path.join(dir, 'postgres'),
    port,
    durable: false,
  });
  const store: TemporalStore = {
    host: '127.0.0.1',
    port,
    superuserUrl: (database) => postgresSuperuserUrl(path.join(dir, 'postgres'), port, database),
    passwordFile: path.join(dir, 'postgres', 'temporal-password'),
  };
  const password = await prepareTemporalStore(env.binaries.temporalSqlTool, store);
  const taken = new Set<number>();
  const ports: TemporalNodePorts[] = [];
  for (let i = 0; i < count; i++) ports.push(await freeNodePorts(taken));
  const nodes: TemporalNode[] = [];
  return {
    postgres,
    store,
    password,
    ports,
    nodes,
    async startNode(i) {
      const node = await startTemporalNode({
        binary: env.binaries.temporalServer,
        dir: path.join(dir, `node-${i}`),
        ports: ports[i]!,
        store,
        password,
        clusterFrontendPort: ports[0]!.frontend,
        namespace: 'default',
      });
      nodes.push(node);
      return node;
    },
    async stop() {
      for (const node of nodes) await node.stop(5000).catch(() => undefined);
      await postgres.stop();
    },
  };
}

/** A cluster of `count` nodes, all up, with the `default` namespace registered. */
export async function runningTemporalCluster(dir: string, count: number): Promise<TemporalCluster> {
  const cluster = await temporalCluster(dir, count);
  try {
    for (let i = 0; i < count; i++) await cluster.startNode(i);
    await ensureNamespace(cluster.nodes[0]!.address, 'default');
    return cluster;
  } catch (e) {
    await cluster.stop();
    throw e;
  }
}
