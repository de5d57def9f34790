/**
 * The activities of one host's worker over their dependencies: the stores and services they call are
 * built here once, over the worker's database and Temporal client.
 */
import { createActivities } from '../activities';
import type { ProviderRegistry } from '../activities/sandbox-providers';
import { SecretBox } from '../src/auth/secret-box';
import {
  createConversationServices,
  createOrganizationQuotas,
  createSandboxService,
  createServices,
  createStores,
  type ConversationServices,
  type SealingStores,
  type Services,
} from '../src/composition';
import type { SandboxService } from '../src/sandboxes/sandbox-service';
import type { WorkerDeps } from './worker';

/** What the activities call, besides the providers: the stores and the services over them. */
interface ActivityServices extends Pick<ConversationServices, 'pendingMessages' | 'conversationService'> {
  box: SecretBox;
  stores: SealingStores;
  settings: Services['startSettings'];
  sandboxService: SandboxService;
}

/** This host's part in the activities: who it is, its task queue, and the providers of its sandboxes. */
export interface ActivityHost {
  identity: string;
  hostQueue: string;
  providers: ProviderRegistry;
}

/** The activities of this host, and the stores they were built over (the sweep of leftovers reads them too). */
export function wireActivities(deps: WorkerDeps, host: ActivityHost) {
  const services = createActivityServices(deps);
  return { activities: hostActivities(deps, services, host), stores: services.stores };
}

function createActivityServices(deps: WorkerDeps): ActivityServices {
  const box = new SecretBox(deps.secretsKey);
  const stores = createStores(deps.db, { box });
  const settings = createServices(stores, { box }).startSettings;
  // Without the api's operation timeout: the default (60 s), as before.
  const sandboxService = createSandboxService(stores, {
    box,
    temporal: deps.client,
    taskQueue: deps.taskQueue,
    sandboxes: deps.config.sandboxes,
    quotas: deps.config,
  });
  const { pendingMessages, conversationService } = createConversationServices(stores, {
    box,
    temporal: deps.client,
    sandboxService,
    sandboxWaitMs: deps.config.starts.sandboxWaitMs,
  });
  return { box, stores, settings, sandboxService, pendingMessages, conversationService };
}

function hostActivities(deps: WorkerDeps, services: ActivityServices, host: ActivityHost) {
  const { box, stores, settings, sandboxService, pendingMessages, conversationService } = services;
  const { sandboxes, conversations, startTasks, appConversations } = stores;
  const { identity, hostQueue, providers } = host;
  return createActivities({
    db: deps.db,
    identity,
    taskQueue: deps.taskQueue,
    sandbox: {
      sandboxes,
      box,
      providers,
      startTimeoutMs: deps.config.sandboxes.startTimeoutMs,
      controlPlaneUrl: deps.config.sandboxes.controlPlaneUrl,
      conversations,
      hostQueue,
    },
    startTask: {
      startTasks,
      appConversations,
      conversations,
      sandboxes,
      sandboxService,
      settings,
      box,
      gitCloneBaseUrl: deps.config.starts.gitCloneBaseUrl,
      hostQueue,
    },
    callbacks: {
      appConversations,
      conversations,
      events: stores.events,
      callbacks: stores.callbacks,
      startTasks,
      settings,
      box,
      gitHostAApiUrl: deps.config.starts.gitHostAApiUrl,
      hosts: deps.config.callbackHosts,
      agents: conversationService,
    },
    pendingMessages: { pendingMessages },
    admission: {
      temporal: deps.client,
      taskQueue: deps.taskQueue,
      sandboxes,
      startTasks,
      organizationQuotas: createOrganizationQuotas(stores, deps.config),
    },
  });
}
