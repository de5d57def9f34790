/**
 * The embedded default (`npm start`): everything on this machine, data in one directory.
 * Starts the Temporal dev server (or with EMBEDDED_TEMPORAL=server the real Temporal server, on the same
 * PostgreSQL) and FerretDB with the PostgreSQL it stores into (unless TEMPORAL_ADDRESS /
 * MONGODB_URI point at servers that already run; POSTGRES_URL names a PostgreSQL to use instead of the
 * embedded one; FERRETDB_BACKEND=sqlite keeps FerretDB's SQLite files), then the api and the worker; prints the URLs and, on first run, an admin API key.
 * A child that dies is restarted (scripts/servers/supervisor.ts) on the same port, data and pid file; one
 * that keeps failing stops everything with exit code 1. Ctrl-C stops every child, the servers last. With
 * `--demo`, it then plays the labelled demo conversation (scripted LLM, no key needed) and leaves
 * everything running.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { ConfigError, loadConfig, type Config } from '../src/config';
import { resolveSecretsKey, writeEmbeddedServers } from '../src/cli/embedded-servers';
import { createLogger } from '../src/logger';
import { freePort, portOpen, reclaimPort } from '../src/process/net';
import { heartbeatFresh, workerHeartbeatFile } from '../src/process/heartbeat';
import { splitPath } from '../src/process/trusted-path';
import { loadSandboxSpecs } from '../src/sandboxes/spec-file';
import { BUILT_IN_SANDBOX_SPECS } from '../src/store/sandbox-specs-store';
import { ensureCommands } from './host-packages';
import { ensureAgentServer } from './servers/agent-server';
import { reapStale, startChild, type Child } from './servers/child';
import { redactUri, startFerretdb, type FerretdbBackend } from './servers/ferretdb-server';
import { obtainServers, obtainTemporalServer, obtainTemporalUi } from './servers/obtain';
import { startTemporalUi } from './servers/temporal-ui';
import {
  postgresIsSuperuser,
  postgresLogin,
  postgresSuperuserUrl,
  requirePostgresBinDir,
  startPostgres,
} from './servers/postgres-server';
import { migrateSqliteData } from './servers/sqlite-migration';
import { Supervisor, type StartFn, type SuperviseOptions } from './servers/supervisor';
import { startTemporalDevServer } from './servers/temporal-dev-server';
import {
  ensureNamespace,
  MAX_MEMBERSHIP_PORT,
  portsAround,
  prepareTemporalStore,
  startTemporalNode,
} from './servers/temporal-server';

/**
 * As root, every program the launcher and its children find through PATH runs as root: a directory
 * on it that another user (a sandbox's uid) can write, or create, would let them choose that program.
 * `npm start` leaves such directories out before the launcher starts (scripts/trusted-path.sh).
 */
function refuseUntrustedPath(): void {
  if (process.getuid?.() !== 0) return;
  const { dropped } = splitPath(process.env.PATH);
  if (dropped.length === 0) return;
  throw new Error(
    `refusing to run as root with directories on PATH that another user can write: ${dropped.map((d) => `${d.dir} (${d.why})`).join(', ')}; ` +
      'start with `npm start`, which leaves them out, or take them off PATH',
  );
}

/** What FerretDB's liveness depends on: the embedded PostgreSQL by name, an operator's by its own probe, or nothing (SQLite). */
function postgresDependency(backend: FerretdbBackend, config: Config): SuperviseOptions['dependsOn'] {
  if (backend.kind !== 'postgresql') return [];
  if (!config.postgres.url) return ['postgres'];
  const url = backend.url;
  return [{ name: 'PostgreSQL (POSTGRES_URL)', alive: () => postgresLogin(url, 4000).then(() => true) }];
}

async function ensurePortFree(port: number, variable: string): Promise<void> {
  if (await portOpen(port)) {
    throw new Error(`port ${port} is already in use: stop what listens there, or set ${variable} to another port`);
  }
}

/** Runs an admin command; its JSON answer is returned, or with `show` its text goes to the terminal. */
function runAdmin(args: string[], env: NodeJS.ProcessEnv, show = false): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      [path.join(__dirname, '..', 'src', 'cli', 'admin.js'), ...(show ? [] : ['--json']), ...args],
      {
        env,
        stdio: ['ignore', show ? 'inherit' : 'pipe', 'inherit'],
      },
    );
    let out = '';
    child.stdout?.on('data', (d: Buffer) => (out += d.toString()));
    child.on('error', reject);
    child.on('close', (code) =>
      code === 0 ? resolve(out) : reject(new Error(`admin ${args.join(' ')} exited with ${code}`)),
    );
  });
}

let supervisor: Supervisor | undefined;
let stopped: Promise<void> | undefined;
let exitCode: number | undefined;

/**
 * Stops the api and worker first (they drain), then the servers they use. Every caller waits for the
 * same stop; the first caller's code is the exit code.
 */
async function stopAll(code: number, graceMs = 10_000): Promise<never> {
  exitCode ??= code;
  stopped ??= supervisor?.stop(graceMs) ?? Promise.resolve();
  await stopped;
  process.exit(exitCode);
}

/** A log line written after `from` bytes: the file is appended to across restarts. */
function logSince(file: string, from: number): string {
  try {
    const fd = fs.openSync(file, 'r');
    try {
      const size = fs.fstatSync(fd).size;
      const buf = Buffer.alloc(Math.max(0, size - from));
      fs.readSync(fd, buf, 0, buf.length, from);
      return buf.toString('utf8');
    } finally {
      fs.closeSync(fd);
    }
  } catch {
    return '';
  }
}

const sizeOf = (file: string) => (fs.existsSync(file) ? fs.statSync(file).size : 0);

/**
 * The OpenHands agent server's environment when a spec runs it: the default spec, or one of
 * SANDBOX_SPECS_FILE's. Installed (once, cached) unless OPENHANDS_AGENT_SERVER_DIR names one already.
 */
async function agentServerFor(config: Config, say: (line: string) => void): Promise<string | undefined> {
  if (config.sandboxes.agentServerDir) return config.sandboxes.agentServerDir;
  const specs = loadSandboxSpecs(config.sandboxes.specsFile);
  const needed = specs.some(
    (s) =>
      s.runtime === 'openhands' &&
      (s.id === config.sandboxes.defaultSpecId || !BUILT_IN_SANDBOX_SPECS.some((b) => b.id === s.id)),
  );
  return needed ? (await ensureAgentServer(config.serversCacheDir, say)).dir : undefined;
}

async function main(): Promise<void> {
  refuseUntrustedPath();
  const config = loadConfig();
  const log = createLogger(config, 'launcher');
  // A port of the service held by a sandbox (bound while the service's process was down) is taken back.
  const reclaim = async (port: number) => {
    if (config.sandboxes.processIsolation !== 'user') return;
    for (const uid of await reclaimPort(port, config.sandboxes.uidRange))
      log.warn(`port ${port} was held by sandbox uid ${uid}: its processes were stopped`);
  };
  // Every start of a child on a fixed port, the first and each restart, first takes the port back from a sandbox.
  const reclaiming =
    <C extends Child>(ports: number[], start: StartFn<C>): StartFn<C> =>
    async (onSpawn) => {
      for (const port of ports) await reclaim(port);
      return start(onSpawn);
    };
  const portFree = async (port: number, variable: string) => {
    await reclaim(port);
    await ensurePortFree(port, variable);
  };
  fs.mkdirSync(config.dataDir, { recursive: true });
  const supervision = new Supervisor({
    log: { info: (m) => log.info(m), warn: (m) => log.warn(m) },
    onGiveUp: (_name, reason) => {
      log.error(`${reason}: stopping everything`);
      void stopAll(1, config.shutdownGraceMs);
    },
  });
  supervisor = supervision;
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.on(signal, () => {
      log.info(`${signal}: stopping`);
      void stopAll(0, config.shutdownGraceMs);
    });
  }

  // A launcher killed with -9 leaves its servers running (its api and worker stop by themselves). Only the
  // launcher's own pid files are read, and a pid is stopped only if it still runs the same program.
  const dist = path.join(__dirname, '..');
  const known: [file: string, program: string, signal?: NodeJS.Signals][] = [
    [path.join(config.dataDir, 'api.pid'), path.join(dist, 'src', 'api', 'main.js')],
    [path.join(config.dataDir, 'worker.pid'), path.join(dist, 'worker', 'main.js')],
    [path.join(config.dataDir, 'temporal', 'temporal.pid'), 'temporal-cli-'],
    // Its directory, on its command line after --root: no other data directory's server matches.
    [path.join(config.dataDir, 'temporal-server', 'temporal.pid'), path.join(config.dataDir, 'temporal-server')],
    [path.join(config.dataDir, 'temporal-ui', 'temporal-ui.pid'), path.join(config.dataDir, 'temporal-ui')],
    [path.join(config.dataDir, 'ferretdb', 'ferretdb.pid'), 'ferretdb-'],
    // Its cluster's path, on its command line after -D: no other PostgreSQL on the machine matches.
    [path.join(config.dataDir, 'postgres', 'postgres.pid'), path.join(config.dataDir, 'postgres', 'data'), 'SIGINT'],
  ];
  for (const [file, program, signal] of known) {
    await reapStale(file, program, signal); // PostgreSQL's fast shutdown is SIGINT: it stops its backends itself
    fs.rmSync(file, { force: true });
  }

  const embedded = !config.mongo.uri || !config.temporal.address;
  const realTemporal = !config.temporal.address && config.embedded.temporal === 'server';
  if (
    realTemporal &&
    (config.embedded.temporalPort < 301 || config.embedded.temporalPort - 294 > MAX_MEMBERSHIP_PORT)
  ) {
    throw new ConfigError([
      `EMBEDDED_TEMPORAL_PORT: with EMBEDDED_TEMPORAL=server its membership ports (300 to 294 below it) must be within 1..${MAX_MEMBERSHIP_PORT}: use 301..${MAX_MEMBERSHIP_PORT + 294}`,
    ]);
  }
  if (realTemporal && (config.mongo.uri || config.postgres.url || config.embedded.ferretdbBackend !== 'postgresql')) {
    throw new ConfigError([
      'EMBEDDED_TEMPORAL=server runs the Temporal server on the embedded PostgreSQL: leave MONGODB_URI and POSTGRES_URL unset and FERRETDB_BACKEND=postgresql, or set TEMPORAL_ADDRESS to a cluster of your own',
    ]);
  }
  if (config.sandboxes.processIsolation === 'user') {
    // Isolated process sandboxes sit behind a firewall chain of their uids.
    await ensureCommands(
      { 'iptables-restore': 'iptables', 'ip6tables-restore': 'iptables' },
      'isolating process sandboxes (SANDBOX_PROCESS_ISOLATION=user)',
      (l) => log.info(l),
    );
  }
  const binaries = embedded ? await obtainServers(config.serversCacheDir, (l) => log.info(l)) : undefined;
  const agentServerDir = await agentServerFor(config, (l) => log.info(l));

  let mongoUri = config.mongo.uri;
  let storage = 'MongoDB';
  // The PostgreSQL behind the MongoDB-wire server, for the api's indexes: the operator's when they run both.
  let postgresUrl = mongoUri ? config.postgres.url : undefined;
  if (!mongoUri) {
    await portFree(config.embedded.mongoPort, 'EMBEDDED_MONGODB_PORT');
    let backend: FerretdbBackend = { kind: 'sqlite' };
    storage = `FerretDB on SQLite files in ${path.join(config.dataDir, 'ferretdb', 'sqlite')}`;
    if (config.embedded.ferretdbBackend === 'postgresql' && config.postgres.url) {
      // One clear line for a wrong URL, password or database, rather than FerretDB's log after its timeout.
      await postgresLogin(config.postgres.url).catch((e: Error) => {
        throw new Error(`POSTGRES_URL: PostgreSQL did not take the login: ${e.message}`);
      });
      if (await postgresIsSuperuser(config.postgres.url).catch(() => false)) {
        log.warn(
          'POSTGRES_URL logs in as a superuser: the service needs only a role that owns its database (docs/embedded-servers.md, "The embedded database")',
        );
      }
      backend = { kind: 'postgresql', url: config.postgres.url };
      storage = 'FerretDB on the PostgreSQL of POSTGRES_URL';
      postgresUrl = config.postgres.url;
    } else if (config.embedded.ferretdbBackend === 'postgresql') {
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
      backend = { kind: 'postgresql', url: postgres.url };
      postgresUrl = postgres.url;
      storage = `FerretDB on PostgreSQL 127.0.0.1:${config.embedded.postgresPort} as its service role (password in ${path.join(config.dataDir, 'postgres', 'service-password')})`;
      log.info({ port: config.embedded.postgresPort }, 'PostgreSQL is up');
    }
    const options = {
      binary: binaries!.ferretdb,
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
    mongoUri = ferret.uri;
    // The data of a start before PostgreSQL became the default, moved once.
    if (backend.kind === 'postgresql')
      await migrateSqliteData({
        ferretdbBinary: binaries!.ferretdb,
        dataDir: config.dataDir,
        targetUri: mongoUri,
        log,
      });
    log.info({ uri: redactUri(mongoUri) }, 'FerretDB (MongoDB wire protocol) is up');
  }

  let temporalAddress = config.temporal.address;
  let temporalUi: string | undefined;
  if (realTemporal) {
    const ports = portsAround(config.embedded.temporalPort);
    const all = [ports.frontend, ports.frontendHttp, ports.history, ports.matching, ports.worker, ...ports.membership];
    for (const port of all) await portFree(port, 'EMBEDDED_TEMPORAL_PORT');
    await portFree(config.embedded.temporalUiPort, 'EMBEDDED_TEMPORAL_UI_PORT');
    const binaries = await obtainTemporalServer(config.serversCacheDir, (l) => log.info(l));
    const uiBinary = await obtainTemporalUi(config.serversCacheDir, (l) => log.info(l));
    const pgDir = path.join(config.dataDir, 'postgres');
    const pgPort = config.embedded.postgresPort;
    const store = {
      host: '127.0.0.1',
      port: pgPort,
      superuserUrl: (database: string) => postgresSuperuserUrl(pgDir, pgPort, database),
      passwordFile: path.join(pgDir, 'temporal-password'),
    };
    const password = await prepareTemporalStore(binaries.sqlTool, store);
    const options = {
      binary: binaries.server,
      dir: path.join(config.dataDir, 'temporal-server'),
      ports,
      store,
      password,
      clusterFrontendPort: ports.frontend,
      namespace: config.temporal.namespace,
      pidFile: true,
    };
    const temporal = await supervision.start(
      'temporal',
      reclaiming(all, (onSpawn) => startTemporalNode({ ...options, onSpawn })),
      { dependsOn: ['postgres'] },
    );
    if (await ensureNamespace(temporal.address, config.temporal.namespace))
      log.info({ namespace: config.temporal.namespace }, 'registered the Temporal namespace');
    temporalAddress = temporal.address;
    log.info({ address: temporalAddress }, 'Temporal server (on PostgreSQL) is up');
    const uiOptions = {
      binary: uiBinary,
      dir: path.join(config.dataDir, 'temporal-ui'),
      port: config.embedded.temporalUiPort,
      temporalAddress,
      namespace: config.temporal.namespace,
      pidFile: true,
    };
    const ui = await supervision.start(
      'temporal-ui',
      reclaiming([uiOptions.port], (onSpawn) => startTemporalUi({ ...uiOptions, onSpawn })),
      { dependsOn: ['temporal'] },
    );
    temporalUi = ui.url;
  } else if (!temporalAddress) {
    await portFree(config.embedded.temporalPort, 'EMBEDDED_TEMPORAL_PORT');
    await portFree(config.embedded.temporalUiPort, 'EMBEDDED_TEMPORAL_UI_PORT');
    const options = {
      binary: binaries!.temporal,
      dataDir: path.join(config.dataDir, 'temporal'),
      port: config.embedded.temporalPort,
      uiPort: config.embedded.temporalUiPort,
      namespace: config.temporal.namespace,
      pidFile: true,
    };
    const temporal = await supervision.start(
      'temporal',
      reclaiming([options.port, options.uiPort], (onSpawn) => startTemporalDevServer({ ...options, onSpawn })),
    );
    temporalAddress = temporal.address;
    temporalUi = temporal.uiUrl;
    log.info({ address: temporalAddress }, 'Temporal dev server is up');
  }
  // For the admin CLI; holds the credentials (mode 0600).
  writeEmbeddedServers(config.dataDir, { mongoUri, temporalAddress, postgresUrl });

  const env: NodeJS.ProcessEnv = {
    ...process.env,
    MONGODB_URI: mongoUri,
    TEMPORAL_ADDRESS: temporalAddress,
    // Set or emptied: a POSTGRES_URL left in the shell must not reach an api whose FerretDB is not on it.
    POSTGRES_URL: postgresUrl ?? '',
    DATA_DIR: config.dataDir,
    SECRETS_KEY: resolveSecretsKey(config, true),
    AGENT_CONTROL_PARENT_PID: String(process.pid),
    ...(agentServerDir ? { OPENHANDS_AGENT_SERVER_DIR: agentServerDir } : {}),
    ...(await demoEnv(config)),
  };
  const bootstrap = JSON.parse(await runAdmin(['bootstrap'], env)) as { key?: string };

  await portFree(config.api.port, 'API_PORT');
  const logs = path.join(config.dataDir, 'logs');
  const workerLog = path.join(logs, 'worker.log');
  const heartbeat = workerHeartbeatFile(config.dataDir);
  fs.rmSync(heartbeat, { force: true });
  await supervision.start('worker', (onSpawn) => {
    // Each start reads only what it wrote: the log is appended to across restarts.
    const from = sizeOf(workerLog);
    return startChild({
      onSpawn,
      name: 'worker',
      command: process.execPath,
      args: [path.join(dist, 'worker', 'main.js')],
      // The worker makes no PostgreSQL indexes: no POSTGRES_URL (its MONGODB_URI has the credentials FerretDB needs).
      env: { ...env, POSTGRES_URL: '' },
      logFile: workerLog,
      pidFile: path.join(config.dataDir, 'worker.pid'),
      ready: async () => logSince(workerLog, from).includes('worker polling'),
      // It has no port: it touches a file every 2 s while its event loop runs (src/process/heartbeat.ts).
      alive: async () => heartbeatFresh(heartbeat, 10_000),
    });
  });
  await supervision.start(
    'api',
    reclaiming([config.api.port], (onSpawn) =>
      startChild({
        onSpawn,
        name: 'api',
        command: process.execPath,
        args: [path.join(dist, 'src', 'api', 'main.js')],
        env,
        logFile: path.join(logs, 'api.log'),
        pidFile: path.join(config.dataDir, 'api.pid'),
        ready: async () => (await fetch(`http://${config.api.host}:${config.api.port}/ready`)).ok,
        // Its own liveness, not its dependencies' (/ready): an api whose database is away answers 503 and
        // waits for it; restarting it would not help and could not pass /ready meanwhile.
        alive: async () =>
          (await fetch(`http://${config.api.host}:${config.api.port}/health`, { signal: AbortSignal.timeout(4000) }))
            .ok,
      }),
    ),
  );

  const lines = [
    '',
    `  API          ${config.api.publicBaseUrl}   (docs: ${config.api.publicBaseUrl}/docs)`,
    temporalUi
      ? `  Temporal UI  ${temporalUi}${realTemporal ? '   (the Temporal server on PostgreSQL)' : ''}`
      : `  Temporal     ${temporalAddress}`,
    `  MongoDB      ${redactUri(mongoUri)}   (${storage})`,
    `  Data         ${config.dataDir}   (logs in ${logs})`,
    bootstrap.key
      ? `\n  Admin API key (shown once, not stored; send it as X-Access-Token):\n  ${bootstrap.key}`
      : '  Admin key: created on the first run; make another with `npm run admin -- key create --user admin@localhost`',
    '',
    '  Ctrl-C stops everything.',
    '',
  ];
  console.log(lines.join('\n'));
  if (process.argv.includes('--demo')) {
    await runAdmin(['demo'], env, true).catch((e: Error) => log.error(`the demo failed: ${e.message}`));
  }
}

/**
 * With --demo: the demo's scripted LLM gets a port of its own on loopback, which isolated process
 * sandboxes may reach (their firewall refuses every other local port but the api's).
 */
async function demoEnv(config: Config): Promise<NodeJS.ProcessEnv> {
  if (!process.argv.includes('--demo')) return {};
  const port = config.demoLlmPort || (await freePort());
  return {
    DEMO_LLM_PORT: String(port),
    SANDBOX_LOCAL_ALLOW: [...config.sandboxes.localAllow, `127.0.0.1:${port}`].join(','),
  };
}

main().catch((e: Error) => {
  // A start cut short by Ctrl-C is not a failure to report.
  if (!stopped) console.error(e instanceof ConfigError ? e.message : `start failed: ${e.message}`);
  void stopAll(1);
});
