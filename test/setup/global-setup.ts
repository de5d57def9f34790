/**
 * Starts the real Temporal dev server and FerretDB (on an embedded PostgreSQL, or on SQLite with
 * FERRETDB_BACKEND=sqlite) once for the whole run, on free loopback ports in a temporary directory, and
 * tells the test files where they are through a JSON file named in AGENT_CONTROL_TEST_ENV. Each test
 * file then uses its own database and task queue.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePort } from '../../src/process/net';
import type { Child } from '../../scripts/servers/child';
import { ferretdbBackendFromEnv, startDocumentStore } from '../../scripts/servers/document-store';
import { obtainServers } from '../../scripts/servers/obtain';
import { startTemporalDevServer } from '../../scripts/servers/temporal-dev-server';
import type { TestEnv } from '../helpers/env';

declare global {
  var __agentControlServers: { children: Child[]; dir: string } | undefined;
}

export default async function globalSetup(): Promise<void> {
  const started = Date.now();
  const binaries = await obtainServers(process.env.SERVERS_CACHE_DIR, (l) => console.log(`[setup] ${l}`));
  const bundle = path.resolve(__dirname, '..', '..', 'dist', 'workflow-bundle.js');
  if (!fs.existsSync(bundle)) throw new Error(`${bundle} is missing: run \`npm run build\` (npm test does) before jest`);
  const backend = ferretdbBackendFromEnv();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'agent-control-test-'));
  // Jest skips the teardown when setup throws: stop whatever did start before failing.
  const servers = await Promise.allSettled([
    startDocumentStore({ ferretdbBinary: binaries.ferretdb, dir: path.join(dir, 'store'), backend, durable: false }),
    Promise.all([freePort(), freePort()]).then(([port, uiPort]) =>
      startTemporalDevServer({ binary: binaries.temporal, dataDir: path.join(dir, 'temporal'), port, uiPort, namespace: 'default' }),
    ),
  ]);
  const failed = servers.find((r) => r.status === 'rejected');
  if (failed) {
    await Promise.all(servers.map((r) => (r.status === 'fulfilled' ? r.value.stop(5000) : undefined)));
    fs.rmSync(dir, { recursive: true, force: true });
    throw (failed as PromiseRejectedResult).reason;
  }
  const [store, temporal] = servers.map((r) => (r as PromiseFulfilledResult<unknown>).value) as [
    Awaited<ReturnType<typeof startDocumentStore>>,
    Awaited<ReturnType<typeof startTemporalDevServer>>,
  ];
  const env: TestEnv = {
    dir,
    mongoUri: store.uri,
    ferretdbBackend: store.backend,
    postgresUrl: store.postgresUrl,
    temporalAddress: temporal.address,
    temporalUiUrl: temporal.uiUrl,
    namespace: 'default',
    workflowBundlePath: bundle,
    binaries,
  };
  const envFile = path.join(dir, 'env.json');
  fs.writeFileSync(envFile, JSON.stringify(env, null, 2));
  process.env.AGENT_CONTROL_TEST_ENV = envFile;
  // Stopped in this order: FerretDB before the PostgreSQL it uses.
  globalThis.__agentControlServers = { children: [temporal, ...[...store.children].reverse()], dir };
  console.log(`[setup] Temporal ${temporal.address}, FerretDB ${store.uri} (${store.backend}) up in ${Date.now() - started} ms`);
}
