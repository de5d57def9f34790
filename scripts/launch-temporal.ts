/**
 * The launcher's Temporal: TEMPORAL_ADDRESS's cluster when set; else the dev server (one process on
 * SQLite, serving its own UI), or with EMBEDDED_TEMPORAL=server the real Temporal server on the embedded
 * PostgreSQL with the UI server in front of it. Each is supervised.
 */
import path from 'node:path';
import { ConfigError, type Config } from '../src/config';
import type { Launch } from './launch-context';
import { obtainTemporalServer, obtainTemporalUi, type TemporalServerBinaries } from './servers/obtain';
import { postgresSuperuserUrl } from './servers/postgres-server';
import { startTemporalDevServer } from './servers/temporal-dev-server';
import { MAX_MEMBERSHIP_PORT, portsAround, type TemporalNodePorts } from './servers/temporal-node-ports';
import { ensureNamespace, startTemporalNode } from './servers/temporal-server';
import { prepareTemporalStore } from './servers/temporal-store';
import { startTemporalUi } from './servers/temporal-ui';

/** Where the api and the worker reach Temporal, and its web UI when one runs here. */
export interface TemporalEndpoints {
  address: string;
  uiUrl?: string;
}

/**
 * Whether the launcher runs the real Temporal server (EMBEDDED_TEMPORAL=server, no TEMPORAL_ADDRESS); a
 * configuration it cannot run on is a ConfigError.
 */
export function runsRealTemporal(config: Config): boolean {
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
  return realTemporal;
}

/** `devServerBinary` is set whenever TEMPORAL_ADDRESS is not. */
export async function launchTemporal(
  launch: Launch,
  realTemporal: boolean,
  devServerBinary?: string,
): Promise<TemporalEndpoints> {
  if (realTemporal) return startRealTemporal(launch);
  if (launch.config.temporal.address) return { address: launch.config.temporal.address };
  return startDevServer(launch, devServerBinary!);
}

async function startRealTemporal(launch: Launch): Promise<TemporalEndpoints> {
  const { config, log, portFree } = launch;
  const ports = portsAround(config.embedded.temporalPort);
  const all = [ports.frontend, ports.frontendHttp, ports.history, ports.matching, ports.worker, ...ports.membership];
  for (const port of all) await portFree(port, 'EMBEDDED_TEMPORAL_PORT');
  await portFree(config.embedded.temporalUiPort, 'EMBEDDED_TEMPORAL_UI_PORT');
  const binaries = await obtainTemporalServer(config.serversCacheDir, (l) => log.info(l));
  const uiBinary = await obtainTemporalUi(config.serversCacheDir, (l) => log.info(l));
  const address = await startServerNode(launch, binaries, ports, all);
  const uiUrl = await startUi(launch, uiBinary, address);
  return { address, uiUrl };
}

/** One node on the embedded PostgreSQL (its store prepared first), with the namespace registered. */
async function startServerNode(
  { config, log, supervision, reclaiming }: Launch,
  binaries: TemporalServerBinaries,
  ports: TemporalNodePorts,
  allPorts: number[],
): Promise<string> {
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
    reclaiming(allPorts, (onSpawn) => startTemporalNode({ ...options, onSpawn })),
    { dependsOn: ['postgres'] },
  );
  if (await ensureNamespace(temporal.address, config.temporal.namespace))
    log.info({ namespace: config.temporal.namespace }, 'registered the Temporal namespace');
  log.info({ address: temporal.address }, 'Temporal server (on PostgreSQL) is up');
  return temporal.address;
}

/** The UI server in front of the node at `temporalAddress`; answers its URL. */
async function startUi(
  { config, supervision, reclaiming }: Launch,
  binary: string,
  temporalAddress: string,
): Promise<string> {
  const uiOptions = {
    binary,
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
  return ui.url;
}

async function startDevServer(
  { config, log, supervision, reclaiming, portFree }: Launch,
  binary: string,
): Promise<TemporalEndpoints> {
  await portFree(config.embedded.temporalPort, 'EMBEDDED_TEMPORAL_PORT');
  await portFree(config.embedded.temporalUiPort, 'EMBEDDED_TEMPORAL_UI_PORT');
  const options = {
    binary,
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
  log.info({ address: temporal.address }, 'Temporal dev server is up');
  return { address: temporal.address, uiUrl: temporal.uiUrl };
}
