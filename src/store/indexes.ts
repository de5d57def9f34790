import { apiKeysIndexes } from './api-keys-store';
import { conversationsIndexes } from './conversations-store';
import { eventsIndexes } from './events-store';
import { membershipsIndexes } from './memberships-store';
import { organizationsIndexes } from './organizations-store';
import { userSecretsIndexes } from './user-secrets-store';
import type { CollectionIndexes } from './mongo';
import { usersIndexes } from './users-store';
import { sandboxesIndexes } from './sandboxes-store';
import { startTasksIndexes } from './start-tasks-store';
import { appConversationsIndexes } from './app-conversations-store';
import { callbacksIndexes } from './callbacks-store';

/** Every index the service relies on, created at start-up. */
export const ALL_INDEXES: readonly CollectionIndexes[] = [
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
];
