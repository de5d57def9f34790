import { apiKeysIndexes } from './api-keys-store';
import { conversationsIndexes } from './conversations-store';
import { eventsIndexes } from './events-collection';
import { membershipsIndexes } from './memberships-store';
import { organizationsIndexes } from './organizations-store';
import { userSecretsIndexes } from './user-secrets-store';
import type { CollectionIndexes } from './mongo';
import { usersIndexes } from './users-store';
import { sandboxesIndexes } from './sandboxes-store';
import { startTasksIndexes } from './start-tasks-store';
import { appConversationsIndexes } from './app-conversations-store';
import { callbacksIndexes } from './callbacks-store';
import { pendingMessagesIndexes } from './pending-messages-store';
import { llmProfilesIndexes } from './llm-profiles-store';

/** Every index the service relies on, created at start-up. What each collection is for: docs/collections.md. */
export const ALL_INDEXES: readonly CollectionIndexes[] = [
  pendingMessagesIndexes,
  usersIndexes,
  apiKeysIndexes,
  conversationsIndexes,
  eventsIndexes,
  organizationsIndexes,
  membershipsIndexes,
  userSecretsIndexes,
  sandboxesIndexes,
  startTasksIndexes,
  appConversationsIndexes,
  callbacksIndexes,
  llmProfilesIndexes,
  // Read by _id only: declared so that they exist from the start, with the `_id` index PostgreSQL can
  // use under FerretDB (src/store/postgres-indexes.ts). live_events is src/live/live-slots.ts's.
  { collection: 'ingest_leases', indexes: [] },
  { collection: 'sandbox_usage', indexes: [] },
  { collection: 'callback_state', indexes: [] },
  { collection: 'live_events', indexes: [] },
  { collection: 'conversation_states', indexes: [] },
  { collection: 'user_settings', indexes: [] },
  { collection: 'active_llm_profiles', indexes: [] },
  { collection: 'organization_quotas', indexes: [] },
];
