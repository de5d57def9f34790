/**
 * The Koa application: request context, the one error middleware, the JSON body reader, then one router
 * per resource. Everything it needs comes in as `AppDeps`, built once in the api's composition root.
 */
import { OpenAPIRegistry } from '@asteasolutions/zod-to-openapi';
import Koa from 'koa';
import type { Readiness } from './readiness';
import type { Config } from '../config';
import type { Logger } from '../logger';
import { buildOpenApiDocument } from './openapi-document';
import type { EventIngest } from '../events/ingest';
import type { OrganizationsService } from '../orgs/organizations-service';
import type { ApiKeysStore } from '../store/api-keys-store';
import type { ConversationsStore } from '../store/conversations-store';
import type { EventsStore } from '../store/events-store';
import type { UsersStore } from '../store/users-store';
import type { ApiMetrics } from '../observability/metrics';
import type { SecretBox } from '../auth/secret-box';
import type { SandboxService } from '../sandboxes/sandbox-service';
import type { SandboxSpecsStore } from '../store/sandbox-specs-store';
import type { SandboxesStore } from '../store/sandboxes-store';
import type { AuthMiddlewares } from '../web/security';
import { apiKeyAuth, sessionKeyAuth } from './auth';
import { translateStoreError } from '../store/errors';
import { translateTemporalError } from '../temporal/call-bounds';
import { answerDeadline } from '../web/answer-deadline';
import { errorMiddleware, HttpError, RequestValidationError } from '../web/errors';
import { nulDetail } from '../web/json-body';
import { requestContext } from '../web/request-context';
import { ApiRouter } from '../web/route';
import { apiKeysRoutes } from './routers/api-keys.router';
import { docsRoutes } from './routers/docs.router';
import { eventsRoutes } from './routers/events.router';
import { organizationsRoutes } from './routers/organizations.router';
import { sandboxSpecsRoutes } from './routers/sandbox-specs.router';
import { sandboxesRoutes } from './routers/sandboxes.router';
import { appConversationsRoutes } from './routers/app-conversations.router';
import { appConversationExportRoutes } from './routers/app-conversation-exports.router';
import { appConversationActionsRoutes } from './routers/app-conversation-actions.router';
import { appConversationWorkspaceRoutes } from './routers/app-conversation-workspace.router';
import { pendingMessagesRoutes } from './routers/pending-messages.router';
import type { ConversationService } from '../app-conversations/conversation-service';
import type { ConversationViews } from '../app-conversations/conversation-views';
import type { PendingMessageService } from '../app-conversations/pending-messages';
import type { StartTaskService } from '../app-conversations/start-task-service';
import type { CallbackDispatch } from '../app-conversations/callback-dispatch';
import type { AppConversationsStore } from '../store/app-conversations-store';
import type { StartTasksStore } from '../store/start-tasks-store';
import { healthRoutes, PROBE_PATHS } from './routers/health.router';
import { usersRoutes } from './routers/users.router';
import { webhooksRoutes } from './routers/webhooks.router';
import { secretsRoutes } from './routers/secrets.router';
import { settingsRoutes } from './routers/settings.router';
import { llmProfilesRoutes } from './routers/llm-profiles.router';
import { configRoutes } from './routers/config.router';
import { webClientRoutes } from './routers/web-client.router';
import { gitRoutes } from './routers/git.router';
import { userGitRoutes } from './routers/user-git.router';
import type { GitSearchService } from '../git/git-search-service';
import type { UserSettingsService } from '../orgs/user-settings-service';
import type { LlmProfilesService } from '../orgs/llm-profiles-service';
import type { ModelCatalog } from '../orgs/model-catalog';
import type { WebClientConfig } from '../schemas/settings';
import './state';

export interface AppDeps {
  config: Pick<Config, 'api' | 'limits'> & Partial<Pick<Config, 'quotas'>>;
  logger: Logger;
  readiness: Readiness;
  apiKeys: ApiKeysStore;
  users: UsersStore;
  conversations: ConversationsStore;
  events: EventsStore;
  ingest: EventIngest;
  organizations: OrganizationsService;
  box: SecretBox;
  sandboxService: SandboxService;
  sandboxes: SandboxesStore;
  sandboxSpecs: SandboxSpecsStore;
  starts: StartTaskService;
  callbacks: CallbackDispatch;
  startTasks: StartTasksStore;
  appConversations: AppConversationsStore;
  conversationService: ConversationService;
  pendingMessages: PendingMessageService;
  conversationViews: ConversationViews;
  /** A user's own settings, secrets and provider tokens; the model catalogue; the web client's boot config. */
  userSettings: UserSettingsService;
  llmProfiles: LlmProfilesService;
  models: ModelCatalog;
  webClient: WebClientConfig;
  /** The caller's repositories, branches, installations, suggested tasks and account on their git host. */
  gitSearches: GitSearchService;
  /** Counts requests, ingest and streams when the api serves metrics (METRICS_ADDRESS). */
  metrics?: ApiMetrics;
}

export interface App {
  koa: Koa;
  /** The OpenAPI document of every route registered on this app. */
  openapi(): object;
}

/**
 * U+0000 in the path or the query: no stored id can hold it (404), no filter may (422). Before the
 * credential: a lookup with it would fail in the database, not say "not found".
 */
const refuseNul: Koa.Middleware = async (ctx, next) => {
  if (/%00/i.test(ctx.path)) throw new HttpError(404, 'Not Found');
  if (/%00/i.test(ctx.querystring)) throw new RequestValidationError([nulDetail('query')]);
  await next();
};

/**
 * Counts every answer by method, route pattern and status (outermost, so errors are counted with the
 * status the error middleware gave them). The route is the router's pattern, never the raw path: label
 * values stay bounded whatever clients send.
 */
function countRequests(metrics: ApiMetrics): Koa.Middleware {
  return async (ctx, next) => {
    const stop = metrics.requestSeconds.startTimer();
    try {
      await next();
    } finally {
      const labels = {
        method: ctx.method,
        route: (ctx as { _matchedRoute?: unknown })._matchedRoute?.toString() ?? 'unmatched',
        status: String(ctx.status),
      };
      metrics.requests.inc(labels);
      stop(labels);
    }
  };
}

export function createApp(deps: AppDeps): App {
  const registry = new OpenAPIRegistry();
  const auth: AuthMiddlewares = {
    APIKeyHeader: apiKeyAuth(deps.apiKeys),
    SessionAPIKeyHeader: sessionKeyAuth(deps.conversations),
  };
  // The store (FerretDB on PostgreSQL: jsonb) cannot hold U+0000 in a string: refused at the edge.
  const router = (prefix: string, tag: string) =>
    new ApiRouter({ prefix, tag, registry, auth, maxBodyBytes: deps.config.limits.maxBodyBytes, rejectNul: true });

  const routers: ApiRouter[] = [
    healthRoutes(router('', 'health'), deps.readiness),
    usersRoutes(router('/api/v1/users', 'users'), deps.userSettings),
    userGitRoutes(router('/api/v1/users', 'users'), deps.gitSearches),
    gitRoutes(router('/api/v1/git', 'git'), deps.gitSearches),
    secretsRoutes(router('/api/v1/secrets', 'secrets'), deps.userSettings),
    settingsRoutes(router('/api/v1/settings', 'settings'), deps.userSettings),
    llmProfilesRoutes(router('/api/v1/settings/profiles', 'settings'), deps.llmProfiles),
    configRoutes(router('/api/v1/config', 'config'), { settings: deps.userSettings, catalog: deps.models }),
    webClientRoutes(router('/api/v1/web-client', 'web-client'), deps.webClient),
    apiKeysRoutes(router('/api/v1/api-keys', 'api-keys'), deps.apiKeys, deps.config.quotas?.apiKeys ?? null),
    eventsRoutes(router('/api/v1/conversation', 'events'), deps),
    webhooksRoutes(
      router('/api/v1/webhooks', 'webhooks'),
      deps.ingest,
      deps.sandboxService,
      deps.callbacks,
      deps.conversations,
      deps.metrics,
    ),
    sandboxesRoutes(router('/api/v1/sandboxes', 'sandboxes'), {
      service: deps.sandboxService,
      sandboxes: deps.sandboxes,
      box: deps.box,
    }),
    sandboxSpecsRoutes(router('/api/v1/sandbox-specs', 'sandbox-specs'), deps.sandboxSpecs),
    appConversationsRoutes(router('/api/v1/app-conversations', 'app-conversations'), deps),
    appConversationActionsRoutes(router('/api/v1/app-conversations', 'app-conversations'), deps),
    appConversationWorkspaceRoutes(router('/api/v1/app-conversations', 'app-conversations'), deps),
    pendingMessagesRoutes(router('/api/v1/conversations', 'pending-messages'), deps),
    appConversationExportRoutes(router('/api/v1/app-conversations', 'app-conversations'), {
      appConversations: deps.appConversations,
      events: deps.events,
      layout: (id) => deps.conversations.layout(id),
      // A file to keep and share: without the sandbox's live address and key.
      view: async (record) => {
        const {
          session_api_key: _key,
          conversation_url: _url,
          ...meta
        } = await deps.conversationViews.one(record.created_by_user_id, record);
        return { ...meta, agent_server_url: null };
      },
    }),
    organizationsRoutes(router('/api/organizations', 'organizations'), deps.organizations),
  ];

  let document: object | undefined;
  const openapi = () => (document ??= buildOpenApiDocument(registry, deps.config.api.publicBaseUrl));
  routers.push(docsRoutes(router('', 'docs'), openapi));

  const koa = new Koa({ proxy: false });
  // Errors after the answer began (a streamed body): a client that went away is not a server error.
  koa.on('error', (err: Error & { code?: string }) => {
    if (err.code === 'ERR_STREAM_PREMATURE_CLOSE' || err.code === 'ECONNRESET' || err.code === 'EPIPE') return;
    deps.logger.error({ err }, 'error while answering');
  });
  if (deps.metrics) koa.use(countRequests(deps.metrics));
  koa.use(requestContext(deps.logger, PROBE_PATHS));
  koa.use(errorMiddleware((e) => translateTemporalError(translateStoreError(e))));
  koa.use(answerDeadline(deps.config.limits.answerDeadlineMs));
  koa.use(refuseNul);
  for (const r of routers) koa.use(r.router.routes()).use(r.router.allowedMethods());
  return { koa, openapi };
}
