/**
 * The api's composition root: opens MongoDB and Temporal without waiting for them, creates indexes in
 * the background (readiness waits for them; prepare-database.ts), builds the Koa app and serves it
 * (http-server.ts).
 */
import { Client, type Connection } from '@temporalio/client';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { ApiMetrics } from '../observability/metrics';
import { SecretBox } from '../auth/secret-box';
import { requireSecretsKey, type Config } from '../config';
import { EventHub } from '../live/event-hub';
import { LiveChannel } from '../live/live-channel';
import { attachEventSocket } from '../http/websocket';
import type { Logger } from '../logger';
import { openDatabase, type Database } from '../store/mongo';
import { boundedConnection } from '../temporal/call-bounds';
import { OpenTelemetryWorkflowClientInterceptor } from '@temporalio/interceptors-opentelemetry';
import { createApiServices, createStores, type ApiServices, type SealingStores } from '../composition';
import { loadSandboxSpecs } from '../sandboxes/spec-file';
import { listenOn } from '../process/net';
import { ModelCatalog } from '../orgs/model-catalog';
import { Readiness } from '../http/readiness';
import type { SandboxSpecInput } from '../schemas/sandboxes';
import { prepareDatabase, type ApiLifecycle } from './prepare-database';
import { createApiApp, createHttpServer, drainHttpServer } from './http-server';

export interface ApiServer {
  url: string;
  /** Where Prometheus scrapes this api (METRICS_ADDRESS), when it serves metrics. */
  metricsUrl: string | undefined;
  server: http.Server;
  /** Live subscribers connected to this process. */
  hub: EventHub;
  /** Resolves once the database is prepared (indexes, the live channel), or the server closes first. */
  prepared: Promise<void>;
  close(): Promise<void>;
}

export async function startApiServer(
  config: Config,
  servers: { mongoUri: string; temporalAddress: string },
  logger: Logger,
): Promise<ApiServer> {
  const backends = openBackends(config, servers);
  const { box, models, database, stores, temporal } = backends;
  const hub = new EventHub();
  const metrics = config.metrics.apiAddress ? new ApiMetrics({ subscribers: () => hub.subscriberCount }) : undefined;
  const live = openLiveChannel(config, database.db, logger, metrics);
  const lifecycle: ApiLifecycle = { prepared: false, closing: false };
  const preparing = prepareDatabase(
    { db: database.db, stores, specs: backends.specs, live, hub, config, logger },
    lifecycle,
  );
  const readiness = createReadiness(config, backends, lifecycle);
  const temporalClient = tracedTemporalClient(temporal, config.temporal.namespace);
  const services = createApiServices(stores, { box, temporal: temporalClient, config, live, log: logger });
  const { reconciler } = services;
  reconciler.start();
  const app = createApiApp({ config, logger, readiness, box, models, stores, services, metrics });
  const server = createHttpServer(config.limits.requestTimeoutMs, app, lifecycle);
  const running: RunningParts = { preparing, reconciler, live, temporal, database };
  // An api that never served stops what it started in the background (index work would keep a process,
  // a test run, alive), as close() does.
  const abandon = async (e: unknown): Promise<never> => {
    lifecycle.closing = true;
    await stopBackgroundWork(running);
    await closeConnections(running);
    throw e;
  };
  const metricsServer = await startListeners({ config, server, metrics, logger, abandon });
  const closeSockets = attachEventSocket(server, {
    hub,
    apiKeys: stores.apiKeys,
    conversations: stores.conversations,
    events: stores.events,
    log: logger,
    ready: () => lifecycle.prepared,
    maxPerUser: config.quotas.websockets,
    onDelivered: metrics && ((ms) => metrics.websocketDeliveryLagSeconds.observe(ms / 1000)),
  });
  const { port } = server.address() as AddressInfo;
  const url = `http://${config.api.host}:${port}`;

  return {
    url,
    metricsUrl: metricsServer?.url,
    server,
    hub,
    prepared: preparing,
    async close() {
      lifecycle.closing = true;
      await closeSockets();
      await drainHttpServer(server, config.shutdownGraceMs);
      await stopBackgroundWork(running);
      await metricsServer?.close();
      await readiness.drain();
      await closeConnections(running);
    },
  };
}

/** What the api reads and opens before it builds anything: MongoDB and Temporal are not waited for. */
interface ApiBackends {
  box: SecretBox;
  specs: SandboxSpecInput[];
  models: ModelCatalog;
  database: Database;
  stores: SealingStores;
  temporal: Connection;
}

function openBackends(config: Config, servers: { mongoUri: string; temporalAddress: string }): ApiBackends {
  const box = new SecretBox(requireSecretsKey(config));
  const specs = loadSandboxSpecs(config.sandboxes.specsFile);
  // Read before anything starts: a bad LLM_MODELS_FILE stops start-up with what is wrong.
  const models = new ModelCatalog({ file: config.models.file, fromEndpoint: config.models.fromEndpoint });
  const database = openDatabase(servers.mongoUri, config.mongo.db, {
    serverSelectionTimeoutMs: config.mongo.serverSelectionTimeoutMs,
    appName: 'agent-control-api',
  });
  const stores = createStores(database.db, { box, eventQueryTimeoutMs: config.eventQueryTimeoutMs });
  const temporal = boundedConnection(servers.temporalAddress);
  return { box, specs, models, database, stores, temporal };
}

/** The channel that carries events written by any api to this one's live subscribers; started once the database is prepared. */
function openLiveChannel(config: Config, db: Database['db'], logger: Logger, metrics: ApiMetrics | undefined) {
  return new LiveChannel(db, logger, {
    pollMs: config.live.pollMs,
    idlePollMs: config.live.idlePollMs,
    retainSlots: config.live.retainSlots,
    onRemoteSlot: metrics && ((ms) => metrics.liveChannelLagSeconds.observe(ms / 1000)),
  });
}

/** What /ready asks: the database, Temporal's namespace, and whether the database is prepared. */
function createReadiness(config: Config, { database, temporal }: ApiBackends, lifecycle: ApiLifecycle): Readiness {
  return new Readiness({
    db: database.db,
    temporal,
    namespace: config.temporal.namespace,
    timeoutMs: config.readyTimeoutMs,
    databasePrepared: () => lifecycle.prepared,
  });
}

/** Workflows started here carry the active trace context (a start's span) in their headers. */
function tracedTemporalClient(temporal: Connection, namespace: string): Client {
  return new Client({
    connection: temporal,
    namespace,
    interceptors: { workflow: [new OpenTelemetryWorkflowClientInterceptor()] },
  });
}

/**
 * Metrics first, on their own listener: a busy METRICS_ADDRESS stops the start before the api listens.
 * A listener that fails abandons the start (after closing the metrics listener when the api's fails).
 */
async function startListeners(deps: {
  config: Config;
  server: http.Server;
  metrics: ApiMetrics | undefined;
  logger: Logger;
  abandon: (e: unknown) => Promise<never>;
}) {
  const { config, server, metrics, logger, abandon } = deps;
  const metricsServer =
    metrics &&
    (await metrics
      .serve(config.metrics.apiAddress!, (err) => logger.error({ err }, 'metrics listener'))
      .catch(abandon));
  if (metricsServer) logger.info({ url: metricsServer.url }, 'serving Prometheus metrics');
  await listenOn(server, config.api.port, config.api.host, (err) =>
    logger.error({ err }, 'the api listener failed'),
  ).catch(async (e: unknown) => {
    await metricsServer?.close();
    return abandon(e);
  });
  return metricsServer;
}

/** What the api runs in the background and the connections it holds, stopped by close() and by a failed start. */
interface RunningParts {
  preparing: Promise<void>;
  reconciler: ApiServices['reconciler'];
  live: LiveChannel;
  temporal: Connection;
  database: Database;
}

async function stopBackgroundWork({ preparing, reconciler, live }: RunningParts): Promise<void> {
  await preparing;
  await reconciler.stop();
  await live.stop();
}

async function closeConnections({ temporal, database }: RunningParts): Promise<void> {
  await temporal.close().catch(() => undefined);
  await database.close();
}
