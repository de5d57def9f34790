/**
 * The stores: one per collection, built over the same database (and the secrets box for the one that
 * seals the users' secrets).
 */
import type { Db } from 'mongodb';
import type { SecretBox } from '../auth/secret-box';
import { ApiKeysStore } from '../store/api-keys-store';
import { AppConversationsStore } from '../store/app-conversations-store';
import { CallbacksStore } from '../store/callbacks-store';
import { ConversationsStore } from '../store/conversations-store';
import { ConversationStatesStore } from '../store/conversation-states-store';
import { PendingMessagesStore } from '../store/pending-messages-store';
import { EventsStore } from '../store/events-store';
import { MembershipsStore } from '../store/memberships-store';
import { OrganizationQuotasStore } from '../store/organization-quotas-store';
import { WorkerHostsStore } from '../store/worker-hosts-store';
import { OrganizationsStore } from '../store/organizations-store';
import { SandboxSpecsStore } from '../store/sandbox-specs-store';
import { SandboxesStore } from '../store/sandboxes-store';
import { StartTasksStore } from '../store/start-tasks-store';
import { UserSecretsStore } from '../store/user-secrets-store';
import { UserSettingsStore } from '../store/user-settings-store';
import { LlmProfilesStore } from '../store/llm-profiles-store';
import { UsersStore } from '../store/users-store';

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
  workerHosts: WorkerHostsStore;
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
    workerHosts: new WorkerHostsStore(db),
  };
  return options.box ? { ...stores, userSecrets: new UserSecretsStore(db, options.box) } : stores;
}
