/**
 * Where the stores and services are built: the api, the worker, the admin CLI, the tests and the benches
 * call these factories over their handles (the database, the secrets box, the Temporal client) instead of
 * constructing stores and services by hand. Nothing here connects or starts anything: the caller owns
 * the handles, and starts and stops what runs (the reconciler's sweep).
 */
import type { Client } from '@temporalio/client';
import type { Db } from 'mongodb';
import { CallbackDispatch } from './app-conversations/callback-dispatch';
import { ConversationService } from './app-conversations/conversation-service';
import { ConversationViews } from './app-conversations/conversation-views';
import { PendingMessageService } from './app-conversations/pending-messages';
import { StartTaskReconciler } from './app-conversations/start-task-reconciler';
import { StartTaskService } from './app-conversations/start-task-service';
import type { SecretBox } from './auth/secret-box';
import type { Config } from './config';
import { EventIngest } from './events/ingest';
import { GitHostA } from './git/git-host-a';
import { GitSearchService } from './git/git-search-service';
import type { LiveChannel } from './live/live-channel';
import type { Logger } from './logger';
import { OrganizationQuotas } from './orgs/organization-quotas';
import { OrganizationsService } from './orgs/organizations-service';
import { StartSettingsResolver } from './orgs/start-settings';
import { UserSettingsService } from './orgs/user-settings-service';
import { LlmProfilesService } from './orgs/llm-profiles-service';
import { SandboxService, sandboxWorkflowSettings } from './sandboxes/sandbox-service';
import { ApiKeysStore } from './store/api-keys-store';
import { AppConversationsStore } from './store/app-conversations-store';
import { CallbacksStore } from './store/callbacks-store';
import { ConversationsStore } from './store/conversations-store';
import { ConversationStatesStore } from './store/conversation-states-store';
import { PendingMessagesStore } from './store/pending-messages-store';
import { EventsStore } from './store/events-store';
import { MembershipsStore } from './store/memberships-store';
import { OrganizationQuotasStore } from './store/organization-quotas-store';
import { OrganizationsStore } from './store/organizations-store';
import { SandboxSpecsStore } from './store/sandbox-specs-store';
import { SandboxesStore } from './store/sandboxes-store';
import { StartTasksStore } from './store/start-tasks-store';
import type { StartTaskSettings } from './temporal/shared';
import { UserSecretsStore } from './store/user-secrets-store';
import { UserSettingsStore } from './store/user-settings-store';
import { LlmProfilesStore } from './store/llm-profiles-store';
import { UsersStore } from './store/users-store';

export interface StoresOptions {
  /** Seals and opens the users' stored secrets; without it there is no `userSecrets` store. */
  box?: SecretBox;
  /**
   * Time budget of each read of the event log (the config's EVENT_QUERY_TIMEOUT_MS in the api).
   * @default 15000 (EventsStore's default)
   */
  eventQueryTimeoutMs?: number;
}

/** One store per collection, over the same database. */
export interface Stores {
  apiKeys: ApiKeysStore;
  appConversations: AppConversationsStore;
  callbacks: CallbacksStore;
  conversations: ConversationsStore;
  conversationStates: ConversationStatesStore;
  events: EventsStore;
  memberships: MembershipsStore;
  pendingMessages: PendingMessagesStore;
  organizations: OrganizationsStore;
  organizationQuotas: OrganizationQuotasStore;
  sandboxSpecs: SandboxSpecsStore;
  sandboxes: SandboxesStore;
  startTasks: StartTasksStore;
  users: UsersStore;
  userSettings: UserSettingsStore;
  llmProfiles: LlmProfilesStore;
}

/** The stores with the one that needs the secrets box. */
export interface SealingStores extends Stores {
  userSecrets: UserSecretsStore;
}

export function createStores(db: Db, options: StoresOptions & { box: SecretBox }): SealingStores;
export function createStores(db: Db, options?: StoresOptions): Stores;
export function createStores(db: Db, options: StoresOptions = {}): Stores | SealingStores {
  const stores: Stores = {
    apiKeys: new ApiKeysStore(db),
    appConversations: new AppConversationsStore(db),
    callbacks: new CallbacksStore(db),
    conversations: new ConversationsStore(db),
    conversationStates: new ConversationStatesStore(db),
    pendingMessages: new PendingMessagesStore(db),
    events: new EventsStore(db, { queryTimeoutMs: options.eventQueryTimeoutMs }),
    memberships: new MembershipsStore(db),
    organizations: new OrganizationsStore(db),
    organizationQuotas: new OrganizationQuotasStore(db),
    sandboxSpecs: new SandboxSpecsStore(db),
    sandboxes: new SandboxesStore(db),
    startTasks: new StartTasksStore(db),
    users: new UsersStore(db),
    userSettings: new UserSettingsStore(db),
    llmProfiles: new LlmProfilesStore(db),
  };
  return options.box ? { ...stores, userSecrets: new UserSecretsStore(db, options.box) } : stores;
}

/** The services every process with the secrets key uses: organizations, and the settings a start copies. */
export interface Services {
  organizations: OrganizationsService;
  startSettings: StartSettingsResolver;
  /** A user's own settings, secrets and provider tokens (the /api/v1/settings and /api/v1/secrets routes). */
  userSettings: UserSettingsService;
  /** A user's saved LLM profiles (/api/v1/settings/profiles). */
  llmProfiles: LlmProfilesService;
}

export function createServices(stores: SealingStores, deps: { box: SecretBox }): Services {
  const { users, organizations, memberships, userSecrets, userSettings, llmProfiles } = stores;
  return {
    organizations: new OrganizationsService({ users, organizations, memberships, box: deps.box }),
    startSettings: new StartSettingsResolver({
      users,
      organizations,
      userSecrets,
      userSettings,
      llmProfiles,
      box: deps.box,
    }),
    userSettings: new UserSettingsService({
      users,
      organizations,
      memberships,
      userSecrets,
      userSettings,
      box: deps.box,
    }),
    llmProfiles: new LlmProfilesService({ users, organizations, userSettings, llmProfiles, box: deps.box }),
  };
}

/** The git searches, over the hosts this service reaches (git host A at GIT_HOST_A_API_URL). */
export function createGitSearchService(
  stores: Pick<SealingStores, 'userSecrets'>,
  config: Pick<Config, 'starts' | 'gitHosts'>,
): GitSearchService {
  return new GitSearchService({
    userSecrets: stores.userSecrets,
    hosts: [new GitHostA(config.starts.gitHostAApiUrl)],
    timeoutMs: config.gitHosts.timeoutMs,
  });
}

export interface SandboxServiceOptions {
  box: SecretBox;
  temporal: Client;
  taskQueue: string;
  sandboxes: Config['sandboxes'];
  /** How long pause, resume and delete wait for the workflow (the api passes its config's; else 60 s). */
  operationTimeoutMs?: number;
  /** How long they wait for a worker to accept them before a 503 (the api passes its config's; else 10 s). */
  answerTimeoutMs?: number;
  /** The user and organization quotas (the api and the worker pass their config's; else no limit). */
  quotas?: Pick<Config, 'quotas' | 'organizationQuotas'>;
}

/** What each organization may hold: the operator's overrides over the configuration's defaults. */
export function createOrganizationQuotas(
  stores: Pick<Stores, 'users' | 'memberships' | 'organizationQuotas'>,
  config: Pick<Config, 'organizationQuotas'>,
): OrganizationQuotas {
  return new OrganizationQuotas({
    users: stores.users,
    memberships: stores.memberships,
    quotas: stores.organizationQuotas,
    defaults: config.organizationQuotas,
  });
}

/** The sandboxes' service: the api's routes and the worker's start tasks create and resume through it. */
export function createSandboxService(stores: Stores, options: SandboxServiceOptions): SandboxService {
  return new SandboxService({
    sandboxes: stores.sandboxes,
    specs: stores.sandboxSpecs,
    conversations: stores.conversations,
    box: options.box,
    temporal: options.temporal,
    taskQueue: options.taskQueue,
    defaultSpecId: options.sandboxes.defaultSpecId,
    settings: sandboxWorkflowSettings(options.sandboxes),
    operationTimeoutMs: options.operationTimeoutMs,
    answerTimeoutMs: options.answerTimeoutMs,
    users: stores.users,
    processSandboxes: {
      restricted: options.sandboxes.processIsolation === 'restricted',
      users: options.sandboxes.processUsers,
    },
    maxRunning: options.quotas?.quotas.runningSandboxes ?? null,
    organizationQuotas: options.quotas && createOrganizationQuotas(stores, options.quotas),
  });
}

/** What acts on started conversations: messages (now or queued), run control, rename, delete, workspace views. */
export interface ConversationServices {
  conversationService: ConversationService;
  pendingMessages: PendingMessageService;
  conversationViews: ConversationViews;
}

export function createConversationServices(
  stores: Stores,
  deps: {
    box: SecretBox;
    temporal: Client;
    sandboxService: SandboxService;
    sandboxWaitMs: number;
    startSettings?: StartSettingsResolver;
  },
): ConversationServices {
  const conversationService = new ConversationService({
    ...stores,
    startSettings: deps.startSettings,
    sandboxService: deps.sandboxService,
    box: deps.box,
    temporal: deps.temporal,
    // A message waits at most a minute for a sandbox to come back; a runtime call at most 30 s.
    settings: { runtimeCallTimeoutMs: 30_000, sandboxWaitMs: Math.min(deps.sandboxWaitMs, 60_000) },
  });
  return {
    conversationService,
    pendingMessages: new PendingMessageService({
      ...stores,
      conversations: conversationService,
      temporal: deps.temporal,
    }),
    conversationViews: new ConversationViews({ ...stores, box: deps.box }),
  };
}

export interface ApiServicesDeps {
  box: SecretBox;
  /** The api's client: workflows it starts carry the trace context of the request. */
  temporal: Client;
  config: Pick<
    Config,
    | 'temporal'
    | 'sandboxes'
    | 'starts'
    | 'limits'
    | 'workflowAnswerTimeoutMs'
    | 'callbacks'
    | 'callbackHosts'
    | 'quotas'
    | 'organizationQuotas'
  >;
  live: Pick<LiveChannel, 'publish'>;
  log: Logger;
}

/** Everything the api's routes call. The reconciler is built, not started: the api starts and stops it. */
export interface ApiServices extends Services, ConversationServices {
  ingest: EventIngest;
  sandboxService: SandboxService;
  reconciler: StartTaskReconciler;
  starts: StartTaskService;
  callbacks: CallbackDispatch;
}

/** What each start-task workflow is given from the configuration: its bounds, its user's quotas, and how its lines wait. */
export function startTaskSettings(config: Pick<Config, 'starts' | 'quotas'>): StartTaskSettings {
  const { starts, quotas } = config;
  const limits = { maxStarts: quotas.concurrentStarts, maxRunning: quotas.runningSandboxes };
  return {
    sandboxWaitMs: starts.sandboxWaitMs,
    setupScriptTimeoutMs: starts.setupScriptTimeoutMs,
    // Always: an organization may have quotas of its own even when users have none.
    admission: { ...limits, queueWaitMs: starts.queueWaitMs, pollMs: starts.queuePollMs },
  };
}

export function createApiServices(stores: SealingStores, deps: ApiServicesDeps): ApiServices {
  const { box, temporal, config, live, log } = deps;
  const taskQueue = config.temporal.taskQueue;
  const { startTasks, conversations, appConversations } = stores;
  const settings = startTaskSettings(config);
  // Brings back start tasks whose workflow was lost (periodic sweep, and a followed task that stalls).
  const reconciler = new StartTaskReconciler(
    { startTasks, temporal, taskQueue, settings, log },
    { afterMs: config.starts.reconcileAfterMs },
  );
  const sandboxService = createSandboxService(stores, {
    box,
    temporal,
    taskQueue,
    sandboxes: config.sandboxes,
    operationTimeoutMs: config.sandboxes.operationTimeoutMs,
    answerTimeoutMs: config.workflowAnswerTimeoutMs,
    quotas: config,
  });
  const services = createServices(stores, { box });
  return {
    ...services,
    ...createConversationServices(stores, {
      box,
      temporal,
      sandboxService,
      sandboxWaitMs: config.starts.sandboxWaitMs,
      startSettings: services.startSettings,
    }),
    ingest: new EventIngest({
      events: stores.events,
      conversations,
      states: stores.conversationStates,
      live,
      log,
      maxEventsPerConversation: config.limits.maxEventsPerConversation,
    }),
    sandboxService,
    reconciler,
    starts: new StartTaskService({
      startTasks,
      conversations,
      box,
      temporal,
      taskQueue,
      settings,
      reconciler,
      follow: config.starts.streamFollow,
      answerTimeoutMs: config.workflowAnswerTimeoutMs,
      maxPending: config.quotas.pendingStarts,
      maxConversations: config.quotas.conversations,
      appConversations,
      issueTrackerBOrigins: config.callbackHosts.issueTrackerBOrigins,
      llmProfiles: stores.llmProfiles,
    }),
    callbacks: new CallbackDispatch({ temporal, taskQueue, appConversations, log, idleMs: config.callbacks.idleMs }),
  };
}
