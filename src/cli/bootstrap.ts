import type { OrganizationsService } from '../orgs/organizations-service';
import type { ApiKeysStore } from '../store/api-keys-store';
import { DuplicateEmailError, type UsersStore } from '../store/users-store';

export const ADMIN_EMAIL = 'admin@localhost';

/**
 * On a fresh install (no users), creates the admin user and a first API key. Returns the raw key once,
 * or null when users already exist (the key was shown on the first run and is not stored).
 */
export async function bootstrapAdmin(
  users: UsersStore,
  apiKeys: ApiKeysStore,
  orgs: OrganizationsService,
): Promise<{ userId: string; key: string } | null> {
  if ((await users.count()) > 0) return null;
  let user;
  try {
    user = await orgs.createUser(ADMIN_EMAIL);
  } catch (e) {
    if (e instanceof DuplicateEmailError) return null; // another launcher got there first
    throw e;
  }
  const { raw } = await apiKeys.create(user.id, 'bootstrap');
  return { userId: user.id, key: raw };
}
