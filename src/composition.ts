/**
 * Where the stores and services are built: the api, the worker, the admin CLI, the tests and the benches
 * call these factories over their handles (the database, the secrets box, the Temporal client) instead of
 * constructing stores and services by hand. Nothing here connects or starts anything: the caller owns
 * the handles, and starts and stops what runs (the reconciler's sweep). This module holds the api's
 * composition and is the one entry point: the parts it builds on, in composition/, are re-exported here.
 */
import type { Client } from '@temporalio/client';
import { CallbackDispatch } from './app-conversations/callback-dispatch';
import { StartTaskReconciler } from './app-conversations/start-task-reconciler';
import { StartTaskService } from './app-conversations/start-task-service';
import type { SecretBox } from './auth/secret-box';
import type { Config } from './config';
import { EventIngest } from './events/ingest';
import type { LiveChannel } from './live/live-channel';
import type { Logger } from './logger';
import type { SandboxService } from './sandboxes/sandbox-service';
import type { StartTaskSettings } from './temporal/shared';
import { createConversationServices, type ConversationServices } from './composition/conversation-services';
import { createSandboxService } from './composition/sandbox-services';
import { createServices, type Services } from './composition/services';
import type { SealingStores } from './composition/stores';

export * from './composition/conversation-services';
export * from './composition/sandbox-services';
export * from './composition/services';
export * from './composition/stores';

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
