/**
 * The api's composition root: opens MongoDB and Temporal without waiting for them, creates indexes in
 * the background (readiness waits for them), builds the Koa app and serves it.
 */
import { Client } from '@temporalio/client';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { ApiMetrics } from '../observability/metrics';
import { SecretBox } from '../auth/secret-box';
import { requireSecretsKey, type Config } from '../config';
import { createApp } from '../http/app';
import { answerClientErrors } from '../web/client-errors';
import { EventHub } from '../live/event-hub';
import { LiveChannel } from '../live/live-channel';
import { attachEventSocket } from '../http/websocket';
import type { Logger } from '../logger';
import { ALL_INDEXES } from '../store/indexes';
import { ensureIndexes, openDatabase } from '../store/mongo';
import { ensurePostgresIndexes } from '../store/postgres-indexes';
import { migrateEventLayouts } from '../events/event-layout-migration';
import { boundedConnection } from '../temporal/call-bounds';
import { OpenTelemetryWorkflowClientInterceptor } from '@temporalio/interceptors-opentelemetry';
import { createApiServices, createGitSearchService, createStores } from '../composition';
import { loadSandboxSpecs } from '../sandboxes/spec-file';
import { ModelCatalog } from '../orgs/model-catalog';
import { webClientConfig } from '../orgs/web-client-config';
import { Readiness } from '../http/readiness';
import { setTimeout as sleep } from 'node:timers/promises';

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
  const box = new SecretBox(requireSecretsKey(config));
  const specs = loadSandboxSpecs(config.sandboxes.specsFile);
  // Read before anything starts: a bad LLM_MODELS_FILE stops start-up with what is wrong.
  const models = new ModelCatalog({ file: config.models.file, fromEndpoint: config.models.fromEndpoint });
  const database = openDatabase(servers.mongoUri, config.mongo.db, {
    serverSelectionTimeoutMs: config.mongo.serverSelectionTimeoutMs,
    appName: 'agent-control-api',
  });
  const stores = createStores(database.db, { box, eventQueryTimeoutMs: config.eventQueryTimeoutMs });
  const { sandboxSpecs } = stores;
  const temporal = boundedConnection(servers.temporalAddress);

  const hub = new EventHub();
  const metrics = config.metrics.apiAddress ? new ApiMetrics({ subscribers: () => hub.subscriberCount }) : undefined;
  const live = new LiveChannel(database.db, logger, {
    pollMs: config.live.pollMs,
    idlePollMs: config.live.idlePollMs,
    retainSlots: config.live.retainSlots,
    onRemoteSlot: metrics && ((ms) => metrics.liveChannelLagSeconds.observe(ms / 1000)),
  });

  let prepared = false;
  let closing = false;
  const prepare = async () => {
    for (let attempt = 1; !closing; attempt++) {
      try {
        await ensureIndexes(database.db, ALL_INDEXES);
        if (!(await stores.events.probeBlockReads()))
          logger.warn(
            'the database scans the event log for every query but one by _id (FerretDB on SQLite): pages and catch-ups read it sorted, not by blocks',
          );
        await sandboxSpecs.upsert(specs);
        await live.start(
          (doc) => hub.dispatch(doc),
          () => hub.hasSubscribers,
        ); // ready once it reads from the head
        prepared = true;
        logger.debug('indexes ensured');
        if (config.postgres.url) void makePostgresIndexes(config.postgres.url);
        void moveEventLayouts();
        return;
      } catch (e) {
        if (attempt === 1 || attempt % 10 === 0) logger.warn({ err: e }, 'creating indexes failed; retrying');
        await sleep(Math.min(5000, 250 * attempt));
      }
    }
  };
  /**
   * The PostgreSQL indexes only make queries faster: the api serves without them, so their absence is
   * an error in the log (with PostgreSQL's own message), retried with a growing wait, not a 503.
   */
  const makePostgresIndexes = async (url: string) => {
    for (let attempt = 1; !closing; attempt++) {
      try {
        const outcome = await ensurePostgresIndexes(database.db, url, ALL_INDEXES);
        if ('skipped' in outcome)
          logger.warn(`no PostgreSQL indexes made, queries scan whole tables: ${outcome.skipped}`);
        else logger.debug({ made: outcome.made }, 'PostgreSQL indexes ensured');
        return;
      } catch (e) {
        const wait = Math.min(60_000, 1000 * 2 ** Math.min(attempt, 6));
        logger.error(
          { err: e },
          `making the PostgreSQL indexes failed (POSTGRES_URL; queries scan whole tables meanwhile): ${(e as Error).message}; trying again in ${wait / 1000} s`,
        );
        await new Promise((r) => setTimeout(r, wait).unref());
      }
    }
  };
  /** Conversations stored before the block layout are moved onto it in the background (src/events/event-layout-migration.ts). */
  const moveEventLayouts = async () => {
    try {
      const moved = await migrateEventLayouts(
        { conversations: stores.conversations, events: stores.events, log: logger },
        { stopped: () => closing },
      );
      if (moved > 0) logger.info({ moved }, 'conversation logs moved to the block layout');
    } catch (e) {
      logger.error(
        { err: e },
        'moving conversation logs to the block layout failed; their pages are read the older way until the next start',
      );
    }
  };
  const preparing = prepare();

  const readiness = new Readiness({
    db: database.db,
    temporal,
    namespace: config.temporal.namespace,
    timeoutMs: config.readyTimeoutMs,
    databasePrepared: () => prepared,
  });
  const { apiKeys, conversations, events } = stores;
  // Workflows started here carry the active trace context (a start's span) in their headers.
  const temporalClient = new Client({
    connection: temporal,
    namespace: config.temporal.namespace,
    interceptors: { workflow: [new OpenTelemetryWorkflowClientInterceptor()] },
  });
  const services = createApiServices(stores, { box, temporal: temporalClient, config, live, log: logger });
  const { reconciler } = services;
  reconciler.start();
  const app = createApp({
    config,
    logger,
    readiness,
    apiKeys,
    users: stores.users,
    conversations,
    events,
    ingest: services.ingest,
    organizations: services.organizations,
    box,
    sandboxService: services.sandboxService,
    sandboxes: stores.sandboxes,
    sandboxSpecs,
    starts: services.starts,
    startTasks: stores.startTasks,
    appConversations: stores.appConversations,
    callbacks: services.callbacks,
    userSettings: services.userSettings,
    llmProfiles: services.llmProfiles,
    models,
    webClient: webClientConfig(config),
    gitSearches: createGitSearchService(stores, config),
    conversationService: services.conversationService,
    pendingMessages: services.pendingMessages,
    conversationViews: services.conversationViews,
    metrics,
  });

  // requestTimeout: the time a client has to send its whole request (headers and body). It ends when the
  // request is received, so an answer streamed for minutes (stream-start) is not cut by it.
  const { requestTimeoutMs } = config.limits;
  const server = http.createServer(
    {
      requestTimeout: requestTimeoutMs,
      headersTimeout: Math.min(requestTimeoutMs, 30_000),
      connectionsCheckingInterval: Math.min(30_000, Math.max(100, Math.floor(requestTimeoutMs / 4))),
    },
    app.koa.callback(),
  );
  answerClientErrors(server);
  // While closing, each answer ends its connection: a client that keeps one busy (a runtime's outbox)
  // would otherwise hold the close for the whole grace period, and should go to another replica anyway.
  server.on('request', (_req, res: http.ServerResponse) => {
    if (closing) res.setHeader('Connection', 'close');
  });
  // An api that never served stops what it started in the background (index work would keep a process,
  // a test run, alive), as close() does.
  const abandon = async (e: unknown): Promise<never> => {
    closing = true;
    await preparing;
    await reconciler.stop();
    await live.stop();
    await temporal.close().catch(() => undefined);
    await database.close();
    throw e;
  };
  // Metrics first, on their own listener: a busy METRICS_ADDRESS stops the start before the api listens.
  const metricsServer =
    metrics &&
    (await metrics
      .serve(config.metrics.apiAddress!, (err) => logger.error({ err }, 'metrics listener'))
      .catch(abandon));
  if (metricsServer) logger.info({ url: metricsServer.url }, 'serving Prometheus metrics');
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.api.port, config.api.host, () => resolve());
  }).catch(async (e: unknown) => {
    await metricsServer?.close();
    return abandon(e);
  });
  const closeSockets = attachEventSocket(server, {
    hub,
    apiKeys,
    conversations,
    events,
    log: logger,
    ready: () => prepared,
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
      closing = true;
      await closeSockets();
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      const idle = setInterval(() => server.closeIdleConnections(), 50); // those that went idle since
      const grace = setTimeout(() => server.closeAllConnections(), config.shutdownGraceMs);
      await closed;
      clearInterval(idle);
      clearTimeout(grace);
      await preparing;
      await reconciler.stop();
      await live.stop();
      await metricsServer?.close();
      await readiness.drain();
      await temporal.close().catch(() => undefined);
      await database.close();
    },
  };
}
