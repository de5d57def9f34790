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
import { ensureCommands } from '../../scripts/host-packages';
import { redactUri } from '../../scripts/servers/ferretdb-server';
import { ensureAgentServer } from '../../scripts/servers/agent-server';
import { ensureSchemathesis } from '../../scripts/servers/schemathesis';
import { obtainServers, obtainTemporalServer, obtainTemporalUi } from '../../scripts/servers/obtain';
import { startTemporalDevServer } from '../../scripts/servers/temporal-dev-server';
import type { TestEnv } from '../helpers/env';
import { dockerTestsEnabled, prepareDocker } from './docker';
import type { DockerEngine } from '../../scripts/docker/engine';

declare global {
  var __agentControlServers:
    { children: Child[]; dir: string; docker?: { engine: DockerEngine; host: string } } | undefined;
}

export default async function globalSetup(): Promise<void> {
  const started = Date.now();
  const say = (l: string) => console.log(`[setup] ${l}`);
  // test/root (run as root only) isolates process sandboxes with firewall rules.
  if (process.getuid?.() === 0)
    await ensureCommands({ 'iptables-restore': 'iptables', 'ip6tables-restore': 'iptables' }, 'test/root', say);
  const obtained = obtainServers(process.env.SERVERS_CACHE_DIR, say);
  // The real OpenHands agent server, for the suites that run sandboxes on it (installed once, cached).
  const agentServer = ensureAgentServer(process.env.SERVERS_CACHE_DIR, say);
  agentServer.catch(() => undefined); // awaited below
  // schemathesis, the outside judge of the api (test/schemathesis.test.ts): after it, one pip at a time.
  const schemathesis = agentServer.then(() => ensureSchemathesis(process.env.SERVERS_CACHE_DIR, say));
  schemathesis.catch(() => undefined); // awaited below
  // The Docker engine and images come up beside the servers (the server images need the binaries, the
  // agent server's image its environment).
  const docker = dockerTestsEnabled() ? prepareDocker(obtained, agentServer, say) : null;
  docker?.catch(() => undefined); // awaited below; not an unhandled rejection meanwhile
  // The real Temporal server and its UI (the cluster suites), built after the others: one Go build at a time.
  const temporalServer = obtained.then(async () => ({
    ...(await obtainTemporalServer(process.env.SERVERS_CACHE_DIR, say)),
    ui: await obtainTemporalUi(process.env.SERVERS_CACHE_DIR, say),
  }));
  temporalServer.catch(() => undefined); // awaited below
  const [binaries, agentServerEnv, realTemporal, schemathesisPython] = await Promise.all([
    obtained,
    agentServer,
    temporalServer,
    schemathesis,
  ]).catch(async (e) => {
    await docker?.then((d) => d.engine.stop()).catch(() => undefined);
    throw e;
  });
  const bundle = path.resolve(__dirname, '..', '..', 'dist', 'workflow-bundle.js');
  if (!fs.existsSync(bundle))
    throw new Error(`${bundle} is missing: run \`npm run build\` (npm test does) before jest`);
  const backend = ferretdbBackendFromEnv();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'agent-control-test-'));
  // Jest skips the teardown when setup throws: stop whatever did start before failing.
  const servers = await Promise.allSettled([
    startDocumentStore({ ferretdbBinary: binaries.ferretdb, dir: path.join(dir, 'store'), backend, durable: false }),
    Promise.all([freePort(), freePort()]).then(([port, uiPort]) =>
      startTemporalDevServer({
        binary: binaries.temporal,
        dataDir: path.join(dir, 'temporal'),
        port,
        uiPort,
        namespace: 'default',
      }),
    ),
  ]);
  const dockerReady = docker && (await Promise.allSettled([docker]))[0]!;
  const failed = [...servers, ...(dockerReady ? [dockerReady] : [])].find((r) => r.status === 'rejected');
  if (failed) {
    await Promise.all(servers.map((r) => (r.status === 'fulfilled' ? r.value.stop(5000) : undefined)));
    if (dockerReady?.status === 'fulfilled') await dockerReady.value.engine.stop();
    fs.rmSync(dir, { recursive: true, force: true });
    throw (failed as PromiseRejectedResult).reason;
  }
  const [store, temporal] = servers.map((r) => (r as PromiseFulfilledResult<unknown>).value) as [
    Awaited<ReturnType<typeof startDocumentStore>>,
    Awaited<ReturnType<typeof startTemporalDevServer>>,
  ];
  const prepared = dockerReady?.status === 'fulfilled' ? dockerReady.value : undefined;
  const env: TestEnv = {
    dir,
    mongoUri: store.uri,
    ferretdbBackend: store.backend,
    postgresUrl: store.postgresUrl,
    temporalAddress: temporal.address,
    temporalUiUrl: temporal.uiUrl,
    namespace: 'default',
    workflowBundlePath: bundle,
    binaries: {
      ...binaries,
      temporalServer: realTemporal.server,
      temporalSqlTool: realTemporal.sqlTool,
      temporalUi: realTemporal.ui,
    },
    agentServerDir: agentServerEnv.dir,
    schemathesisPython,
    ...(prepared ? { docker: prepared.env } : {}),
  };
  const envFile = path.join(dir, 'env.json');
  fs.writeFileSync(envFile, JSON.stringify(env, null, 2));
  process.env.AGENT_CONTROL_TEST_ENV = envFile;
  // Stopped in this order: FerretDB before the PostgreSQL it uses.
  globalThis.__agentControlServers = {
    children: [temporal, ...[...store.children].reverse()],
    dir,
    ...(prepared ? { docker: { engine: prepared.engine, host: prepared.env.host } } : {}),
  };
  console.log(
    `[setup] Temporal ${temporal.address}, FerretDB ${redactUri(store.uri)} (${store.backend}) up in ${Date.now() - started} ms`,
  );
}
