/** The benchmarks' caller: a user made through the stores and an API key of theirs. */
import type { Db } from 'mongodb';
import { createStores } from '../src/composition';

/** A user and an API key of theirs, for the X-Access-Token header. */
export async function benchCaller(db: Db): Promise<{ userId: string; key: string }> {
  const { users, apiKeys } = createStores(db);
  const user = await users.create('bench@example.com');
  const { raw } = await apiKeys.create(user.id, 'bench');
  return { userId: user.id, key: raw };
}
