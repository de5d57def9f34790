/**
 * The real Temporal server on PostgreSQL (scripts/servers/temporal-server.ts): two nodes of one cluster on
 * loopback, over a PostgreSQL of this file's own. The store is prepared by the server's schema tool as a
 * role of its own (twice: the second time changes nothing); workers started before the namespace exists
 * wait for it, and two of them register the search attributes at the same moment without failing each
 * other; starts through an api on each node reach READY; with one node killed (-9) the other serves the
 * next start on its own.
 */
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { ChildProcess } from 'node:child_process';
import { Client as PgClient } from 'pg';
import {
  postgresSuperuserUrl,
  requirePostgresBinDir,
  startPostgres,
  type PostgresServer,
} from '../scripts/servers/postgres-server';
import { freeNodePorts, type TemporalNodePorts } from '../scripts/servers/temporal-node-ports';
import { ensureNamespace, startTemporalNode } from '../scripts/servers/temporal-server';
import {
  prepareTemporalStore,
  TEMPORAL_DATABASES,
  TEMPORAL_ROLE,
  type TemporalStore,
} from '../scripts/servers/temporal-store';
import type { Child } from '../scripts/servers/child';
import { freePort } from '../src/process/net';
import { startTestApi, type TestApi } from './helpers/api';
import { testConfig, testEnv, uniqueName } from './helpers/env';
import { killRuntimesUnder } from './helpers/sandboxes';
import { eventually } from './helpers/eventually';
import { waitForStartTask } from './helpers/start-tasks';
import { startWorkerProcess } from './helpers/worker';

async function query<T>(url: string, sql: string): Promise<T[]> {
  const c = new PgClient({ connectionString: url });
  await c.connect();
  try {
    return (await c.query(sql)).rows as T[];
  } finally {
    await c.end();
  }
}

describe('the real Temporal server: a two-node cluster on PostgreSQL', () => {
  const env = testEnv();
  let dir: string;
  let postgres: PostgresServer;
  let store: TemporalStore;
  const nodes: Child[] = [];
  const workers: ChildProcess[] = [];
  const apis: TestApi[] = [];

  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'temporal-cluster-'));
    const port = await freePort();
    postgres = await startPostgres({
      binDir: requirePostgresBinDir(),
      dir: path.join(dir, 'postgres'),
      port,
      durable: false,
    });
    store = {
      host: '127.0.0.1',
      port,
      superuserUrl: (database) => postgresSuperuserUrl(path.join(dir, 'postgres'), port, database),
      passwordFile: path.join(dir, 'postgres', 'temporal-password'),
    };
  }, 120_000);

  afterAll(async () => {
    for (const w of workers) w.kill('SIGKILL');
    for (const api of apis) await api.close();
    for (const node of nodes) await node.stop(5000).catch(() => undefined);
    await postgres?.stop();
    killRuntimesUnder(dir);
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('prepares its store as a role of its own, runs two nodes, and serves starts through either, and through one when the other is killed', async () => {
    const password = await prepareTemporalStore(env.binaries.temporalSqlTool, store);
    expect(await prepareTemporalStore(env.binaries.temporalSqlTool, store)).toBe(password); // current: a no-op
    const [role] = await query<{ rolsuper: boolean; rolcreatedb: boolean; rolcreaterole: boolean }>(
      store.superuserUrl('postgres'),
      `SELECT rolsuper, rolcreatedb, rolcreaterole FROM pg_roles WHERE rolname = '${TEMPORAL_ROLE}'`,
    );
    expect(role).toEqual({ rolsuper: false, rolcreatedb: false, rolcreaterole: false });
    const owned = await query<{ datname: string }>(
      store.superuserUrl('postgres'),
      `SELECT datname FROM pg_database WHERE pg_get_userbyid(datdba) = '${TEMPORAL_ROLE}' ORDER BY datname`,
    );
    expect(owned.map((d) => d.datname)).toEqual(Object.values(TEMPORAL_DATABASES).sort());
    // Each role enters its own databases only: not FerretDB's, nor `postgres`.
    for (const other of ['ferretdb', 'postgres']) {
      await expect(
        query(
          `postgres://${TEMPORAL_ROLE}:${encodeURIComponent(password)}@127.0.0.1:${store.port}/${other}?sslmode=disable`,
          'SELECT 1',
        ),
      ).rejects.toThrow(/permission denied/);
    }

    const taken = new Set<number>();
    const [portsA, portsB] = [await freeNodePorts(taken), await freeNodePorts(taken)];
    const node = (name: string, ports: TemporalNodePorts) =>
      startTemporalNode({
        binary: env.binaries.temporalServer,
        dir: path.join(dir, name),
        ports,
        store,
        password,
        clusterFrontendPort: portsA.frontend,
        namespace: 'default',
      });
    const a = await node('node-a', portsA);
    nodes.push(a);

    // One database and task queue for everything; an api and a worker per node, as on two hosts.
    const shared = {
      MONGODB_DB: uniqueName('cluster'),
      TEMPORAL_TASK_QUEUE: uniqueName('tq'),
      START_TASK_RECONCILE_AFTER_MS: '5000',
    };
    // Each host's runtimes on an address of its own, which the other host reaches (as on two machines).
    const hostEnv = (host: 'host-a' | 'host-b') => ({
      WORKER_HOST: host,
      SANDBOX_PROCESS_HOST: host === 'host-a' ? '127.0.0.2' : '127.0.0.3',
    });
    const configOf = async (node: Child & { address: string }, host: 'host-a' | 'host-b') =>
      testConfig({
        ...shared,
        ...hostEnv(host),
        TEMPORAL_ADDRESS: node.address,
        DATA_DIR: path.join(dir, host),
        API_PORT: String(await freePort()),
      });
    // A worker before the namespace exists: it waits for it instead of exiting.
    const configA = await configOf(a, 'host-a');
    const workerA = startWorkerProcess(configA, configA.dataDir, hostEnv('host-a'));
    workers.push(workerA.child);
    let outA = '';
    for (const stream of [workerA.child.stdout!, workerA.child.stderr!])
      stream.on('data', (d: Buffer) => (outA += d.toString()));
    const b = await node('node-b', portsB);
    nodes.push(b);
    const configB = await configOf(b, 'host-b');
    const workerB = startWorkerProcess(configB, configB.dataDir, hostEnv('host-b'));
    workers.push(workerB.child);
    // It found no namespace and said so, and is still there, waiting.
    await eventually(() => outA.includes('search attributes of namespace default not registered yet'), {
      timeoutMs: 60_000,
      what: 'worker A waiting for the namespace',
    });
    expect(workerA.child.exitCode).toBeNull();
    expect(await ensureNamespace(b.address, 'default')).toBe(true);
    expect(await ensureNamespace(a.address, 'default')).toBe(false); // registered already: no error
    // Both register the search attributes at about the same moment; neither fails.
    await Promise.all([workerA.ready, workerB.ready]);

    // One cluster: both nodes' frontends and history services heartbeating into its membership table.
    const members = await query<{ role: number; n: string }>(
      `postgres://${TEMPORAL_ROLE}:${encodeURIComponent(password)}@127.0.0.1:${store.port}/${TEMPORAL_DATABASES.history}?sslmode=disable`,
      "SELECT role, count(DISTINCT rpc_port)::text AS n FROM cluster_membership WHERE last_heartbeat > (now() AT TIME ZONE 'UTC') - interval '30 seconds' AND role IN (1, 2) GROUP BY role ORDER BY role",
    );
    expect(members).toEqual([
      { role: 1, n: '2' },
      { role: 2, n: '2' },
    ]);

    for (const config of [configA, configB]) apis.push(await startTestApi(config));
    const [apiA, apiB] = apis as [TestApi, TestApi];
    const user = await apiA.newUser();
    // An LLM must be configured for a conversation to start; these send no message, so it is never called.
    await apiA.setOrgLlm(user.key, { model: 'unused-model', base_url: 'http://127.0.0.1:9/v1' });
    const start = async (api: TestApi) => {
      const id = randomUUID();
      const r = await api.request('POST', '/api/v1/app-conversations', {
        key: user.key,
        body: { conversation_id: id },
      });
      expect(r.status).toBe(200);
      return waitForStartTask(api, user.key, id, (s) => s.status === 'READY' || s.status === 'ERROR', 120_000);
    };
    const [viaA, viaB] = await Promise.all([start(apiA), start(apiB)]);
    expect([viaA, viaB].map((s) => [s.status, s.detail])).toEqual([
      ['READY', null],
      ['READY', null],
    ]);

    // Node A and its worker gone at once (a host lost): node B takes over A's shards and serves on its own.
    a.process.kill('SIGKILL');
    workerA.child.kill('SIGKILL');
    // Several starts: their workflows hash onto every history shard, those node A owned included.
    const t0 = Date.now();
    const after = await Promise.all(Array.from({ length: 6 }, () => start(apiB)));
    expect(after.map((s) => s.status)).toEqual(Array(6).fill('READY'));
    console.log(
      `temporal cluster: 6 starts through node B READY ${((Date.now() - t0) / 1000).toFixed(1)} s after node A was killed`,
    );
  }, 600_000);
});
