/**
 * Starts FerretDB (on an embedded PostgreSQL, or SQLite with FERRETDB_BACKEND=sqlite) and the Temporal
 * dev server (or with `--temporal server` the real Temporal server on that PostgreSQL) for one benchmark
 * run, in its own temporary directory.
 */
import { Client, Connection } from '@temporalio/client';
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ferretdbBackendFromEnv, startDocumentStore } from '../scripts/servers/document-store';
import type { Child } from '../scripts/servers/child';
import { obtainServers, obtainTemporalServer } from '../scripts/servers/obtain';
import { postgresSuperuserUrl } from '../scripts/servers/postgres-server';
import { startTemporalDevServer } from '../scripts/servers/temporal-dev-server';
import { freeNodePorts } from '../scripts/servers/temporal-node-ports';
import { ensureNamespace, startTemporalNode } from '../scripts/servers/temporal-server';
import { prepareTemporalStore } from '../scripts/servers/temporal-store';
import { freePort } from '../src/process/net';
import { wordArg } from './report';

/** `--temporal dev` (the CLI's dev server, as `npm start`) or `server` (the real server on the store's PostgreSQL). */
const TEMPORAL = wordArg('temporal', ['dev', 'server'] as const, 'dev');

async function startTemporal(
  dir: string,
  binaries: { temporal: string },
  storeDir: string,
  postgresUrl: string | undefined,
): Promise<Child & { address: string }> {
  if (TEMPORAL === 'dev') {
    return startTemporalDevServer({
      binary: binaries.temporal,
      dataDir: path.join(dir, 'temporal'),
      port: await freePort(),
      uiPort: await freePort(),
      namespace: 'default',
    });
  }
  if (!postgresUrl) throw new Error('--temporal server runs on the PostgreSQL of FERRETDB_BACKEND=postgresql');
  const real = await obtainTemporalServer(process.env.SERVERS_CACHE_DIR, (l) => console.error(l));
  const pgDir = path.join(storeDir, 'postgres');
  const pgPort = Number(new URL(postgresUrl).port);
  const store = {
    host: '127.0.0.1',
    port: pgPort,
    superuserUrl: (db: string) => postgresSuperuserUrl(pgDir, pgPort, db),
    passwordFile: path.join(pgDir, 'temporal-password'),
  };
  const password = await prepareTemporalStore(real.sqlTool, store);
  const ports = await freeNodePorts();
  const node = await startTemporalNode({
    binary: real.server,
    dir: path.join(dir, 'temporal-server'),
    ports,
    store,
    password,
    clusterFrontendPort: ports.frontend,
    namespace: 'default',
  });
  await ensureNamespace(node.address, 'default');
  return node;
}

export async function startBenchServers(name: string) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `agent-control-bench-${name}-`));
  const binaries = await obtainServers(process.env.SERVERS_CACHE_DIR, (l) => console.error(l));
  const backend = ferretdbBackendFromEnv();
  // Durable, as `npm start` runs it: the figures are the ones a user gets.
  const store = await startDocumentStore({ ferretdbBinary: binaries.ferretdb, dir: path.join(dir, 'store'), backend });
  const temporal = await startTemporal(dir, binaries, path.join(dir, 'store'), store.postgresUrl);
  const temporalName = TEMPORAL === 'dev' ? 'Temporal dev server' : 'Temporal server on PostgreSQL';
  console.error(`${temporalName} at ${temporal.address}`);
  return {
    dir,
    /** What runs Temporal, for the tables' titles. */
    temporalName,
    mongoUri: store.uri,
    backend,
    postgresUrl: store.postgresUrl,
    temporalAddress: temporal.address,
    /** The server processes (each spawned detached: it leads its own process group), for CPU accounting. */
    processes: [...store.children, temporal].map((c) => ({ name: c.name, pid: c.process.pid! })),
    /**
     * The environment of the service processes a bench starts (api, worker) against these servers,
     * quiet (warnings only, JSON) and stopped with the bench; `extra` adds or overrides variables.
     */
    serviceEnv(extra: Record<string, string | undefined> = {}): NodeJS.ProcessEnv {
      return {
        ...process.env,
        MONGODB_URI: store.uri,
        // The api makes the PostgreSQL indexes; unset on SQLite (an undefined value leaves the variable
        // out, also one inherited from the shell).
        POSTGRES_URL: store.postgresUrl,
        MONGODB_DB: 'bench',
        TEMPORAL_ADDRESS: temporal.address,
        DATA_DIR: path.join(dir, 'data'),
        LOG_LEVEL: 'warn',
        LOG_FORMAT: 'json',
        // As root, process sandboxes would each get a uid and the host a firewall rule: the benches
        // measure the service, and leave the host as they found it.
        SANDBOX_PROCESS_ISOLATION: 'none',
        // Nor a file system mounted per sandbox, which a sandbox the bench does not delete would leave mounted.
        SANDBOX_DISKS: 'off',
        AGENT_CONTROL_PARENT_PID: String(process.pid), // the services stop if the bench is killed
        ...extra,
      };
    },
    /** Stops the benchmark's own processes first (api, worker, runtime), then the servers. */
    async stop(children: ChildProcess[] = []) {
      await stopProcesses(children);
      await temporal.stop(); // before the PostgreSQL it may store into
      await store.stop();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Stops a benchmark's own processes (api, worker, runtime) and waits until they are gone. */
export async function stopProcesses(children: ChildProcess[]): Promise<void> {
  for (const c of children) c.kill('SIGTERM');
  await Promise.all(children.map((c) => new Promise((r) => (c.exitCode === null ? c.once('exit', r) : r(null)))));
}

/** Prints a workflow's history as ms after its start, with the activity of each scheduled step: where the time goes. */
export async function printHistory(address: string, workflowId: string, max = 200): Promise<void> {
  const connection = await Connection.connect({ address });
  try {
    const history = await new Client({ connection }).workflow.getHandle(workflowId).fetchHistory();
    const events = history.events ?? [];
    const t = (e: (typeof events)[number]) =>
      Number(e.eventTime!.seconds) * 1000 + Math.round((e.eventTime!.nanos ?? 0) / 1e6);
    const start = t(events[0]!);
    console.log(`\n${workflowId}: its history (ms after start)`);
    for (const e of events.slice(0, max)) {
      const type = (Object.keys(e).find((k) => k.endsWith('Attributes')) ?? String(e.eventType)).replace(
        /EventAttributes$/,
        '',
      );
      const activity = e.activityTaskScheduledEventAttributes?.activityType?.name;
      const marker = e.markerRecordedEventAttributes ? 'local activity' : '';
      console.log(
        `  ${String(t(e) - start).padStart(5)}  ${type}${activity ? ` ${activity}` : ''}${marker ? ` (${marker})` : ''}`,
      );
    }
  } finally {
    await connection.close();
  }
}
