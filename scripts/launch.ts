/**
 * The embedded default (`npm start`): everything on this machine, data in one directory.
 * Starts the Temporal dev server (or with EMBEDDED_TEMPORAL=server the real Temporal server, on the same
 * PostgreSQL) and FerretDB with the PostgreSQL it stores into (unless TEMPORAL_ADDRESS /
 * MONGODB_URI point at servers that already run; POSTGRES_URL names a PostgreSQL to use instead of the
 * embedded one; FERRETDB_BACKEND=sqlite keeps FerretDB's SQLite files), then the api and the worker; prints the URLs and, on first run, an admin API key.
 * A child that dies is restarted (scripts/servers/supervisor.ts) on the same port, data and pid file; one
 * that keeps failing stops everything with exit code 1. Ctrl-C stops every child, the servers last. With
 * `--demo`, it then plays the labelled demo conversation (scripted LLM, no key needed) and leaves
 * everything running. Each step is a file of its own: launch-*.ts.
 */
import fs from 'node:fs';
import { ConfigError, loadConfig, type Config } from '../src/config';
import { resolveSecretsKey, writeEmbeddedServers } from '../src/cli/embedded-servers';
import { createLogger, type Logger } from '../src/logger';
import { freePortUpTo } from '../src/process/net';
import { splitPath } from '../src/process/trusted-path';
import { runAdmin } from './launch-admin';
import { launchContext } from './launch-context';
import { launchDocumentStore, type DocumentStore } from './launch-document-store';
import { reapLeftovers } from './launch-leftovers';
import { obtainPrerequisites } from './launch-prerequisites';
import { launchService } from './launch-service';
import { launchTemporal, runsRealTemporal, type TemporalEndpoints } from './launch-temporal';
import { redactUri } from './servers/ferretdb-server';
import { Supervisor } from './servers/supervisor';

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

/** The supervisor of every child: one that keeps failing, SIGINT or SIGTERM stops them all. */
function superviseChildren(config: Config, log: Logger): Supervisor {
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
  return supervision;
}

/** The api's and the worker's environment: the servers just started, the data directory, the secrets key. */
async function serviceEnv(
  config: Config,
  documents: DocumentStore,
  temporal: TemporalEndpoints,
  agentServerDir: string | undefined,
): Promise<NodeJS.ProcessEnv> {
  return {
    ...process.env,
    MONGODB_URI: documents.mongoUri,
    TEMPORAL_ADDRESS: temporal.address,
    // Set or emptied: a POSTGRES_URL left in the shell must not reach an api whose FerretDB is not on it.
    POSTGRES_URL: documents.postgresUrl ?? '',
    DATA_DIR: config.dataDir,
    SECRETS_KEY: resolveSecretsKey(config, true),
    AGENT_CONTROL_PARENT_PID: String(process.pid),
    ...(agentServerDir ? { OPENHANDS_AGENT_SERVER_DIR: agentServerDir } : {}),
    ...(await demoEnv(config)),
  };
}

/**
 * The demo's scripted LLM gets a port of its own on loopback, which isolated process sandboxes may reach
 * (their firewall refuses every other local port but the api's) and none may answer on (it is one of the
 * service's ports): with `--demo` and without, so `npm run admin -- demo` plays against any `npm start`.
 * Nothing listens there but a demo while it plays.
 */
async function demoEnv(config: Config): Promise<NodeJS.ProcessEnv> {
  // Below the kernel's ephemeral range: no server of this machine that listens on port 0 (the Temporal
  // dev server's own services do) can be given it and so become reachable from every sandbox.
  const port = config.demoLlmPort || (await freePortUpTo(32_767));
  return {
    DEMO_LLM_PORT: String(port),
    SANDBOX_LOCAL_ALLOW: [...config.sandboxes.localAllow, `127.0.0.1:${port}`].join(','),
  };
}

/** What the terminal shows once everything is up: where each thing is, and the admin key of a first run. */
function summary(
  config: Config,
  o: {
    documents: DocumentStore;
    temporal: TemporalEndpoints;
    realTemporal: boolean;
    logs: string;
    adminKey?: string;
  },
): string {
  const lines = [
    '',
    `  API          ${config.api.publicBaseUrl}   (docs: ${config.api.publicBaseUrl}/docs)`,
    o.temporal.uiUrl
      ? `  Temporal UI  ${o.temporal.uiUrl}${o.realTemporal ? '   (the Temporal server on PostgreSQL)' : ''}`
      : `  Temporal     ${o.temporal.address}`,
    `  MongoDB      ${redactUri(o.documents.mongoUri)}   (${o.documents.storage})`,
    `  Data         ${config.dataDir}   (logs in ${o.logs})`,
    o.adminKey
      ? `\n  Admin API key (shown once, not stored; send it as X-Access-Token):\n  ${o.adminKey}`
      : '  Admin key: created on the first run; make another with `npm run admin -- key create --user admin@localhost`',
    '',
    '  Ctrl-C stops everything.',
    '',
  ];
  return lines.join('\n');
}

async function main(): Promise<void> {
  refuseUntrustedPath();
  const config = loadConfig();
  const log = createLogger(config, 'launcher');
  fs.mkdirSync(config.dataDir, { recursive: true });
  const launch = launchContext(config, log, superviseChildren(config, log));
  await reapLeftovers(config.dataDir);
  const realTemporal = runsRealTemporal(config);
  const { binaries, agentServerDir } = await obtainPrerequisites(config, log);

  const documents = await launchDocumentStore(launch, binaries);
  const temporal = await launchTemporal(launch, realTemporal, binaries?.temporal);
  const env = await serviceEnv(config, documents, temporal, agentServerDir);
  // For the admin CLI; holds the credentials (mode 0600).
  writeEmbeddedServers(config.dataDir, {
    mongoUri: documents.mongoUri,
    temporalAddress: temporal.address,
    postgresUrl: documents.postgresUrl,
    demoLlmPort: Number(env.DEMO_LLM_PORT),
  });
  const bootstrap = JSON.parse(await runAdmin(['bootstrap'], env)) as { key?: string };
  const logs = await launchService(launch, env);

  console.log(summary(config, { documents, temporal, realTemporal, logs, adminKey: bootstrap.key }));
  if (process.argv.includes('--demo')) {
    await runAdmin(['demo'], env, true).catch((e: Error) => log.error(`the demo failed: ${e.message}`));
  }
}

main().catch((e: Error) => {
  // A start cut short by Ctrl-C is not a failure to report.
  if (!stopped) console.error(e instanceof ConfigError ? e.message : `start failed: ${e.message}`);
  void stopAll(1);
});
