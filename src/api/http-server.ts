/**
 * The api's HTTP server: the Koa app over the composed stores and services, the server's request bounds,
 * and its drain on close.
 */
import http from 'node:http';
import type { SecretBox } from '../auth/secret-box';
import { createGitSearchService, type ApiServices, type SealingStores } from '../composition';
import type { Config } from '../config';
import { createApp, type App } from '../http/app';
import type { Readiness } from '../http/readiness';
import type { Logger } from '../logger';
import type { ApiMetrics } from '../observability/metrics';
import type { ModelCatalog } from '../orgs/model-catalog';
import { webClientConfig } from '../orgs/web-client-config';
import { answerClientErrors } from '../web/client-errors';
import type { ApiLifecycle } from './prepare-database';

/** The Koa app over the api's stores and services. */
export function createApiApp(deps: {
  config: Config;
  logger: Logger;
  readiness: Readiness;
  box: SecretBox;
  models: ModelCatalog;
  stores: SealingStores;
  services: ApiServices;
  metrics: ApiMetrics | undefined;
}): App {
  const { config, logger, readiness, box, models, stores, services, metrics } = deps;
  return createApp({
    config,
    logger,
    readiness,
    apiKeys: stores.apiKeys,
    users: stores.users,
    conversations: stores.conversations,
    events: stores.events,
    ingest: services.ingest,
    organizations: services.organizations,
    box,
    sandboxService: services.sandboxService,
    sandboxes: stores.sandboxes,
    sandboxSpecs: stores.sandboxSpecs,
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
}

/** The api's HTTP server: its request bounds, client errors answered, connections ended while closing. */
export function createHttpServer(requestTimeoutMs: number, app: App, lifecycle: ApiLifecycle): http.Server {
  // requestTimeout: the time a client has to send its whole request (headers and body). It ends when the
  // request is received, so an answer streamed for minutes (stream-start) is not cut by it.
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
    if (lifecycle.closing) res.setHeader('Connection', 'close');
  });
  return server;
}

/** Stops taking connections and waits for those open to end: idle ones now, busy ones when idle or at the grace. */
export async function drainHttpServer(server: http.Server, graceMs: number): Promise<void> {
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  server.closeIdleConnections();
  const idle = setInterval(() => server.closeIdleConnections(), 50); // those that went idle since
  const grace = setTimeout(() => server.closeAllConnections(), graceMs);
  await closed;
  clearInterval(idle);
  clearTimeout(grace);
}
