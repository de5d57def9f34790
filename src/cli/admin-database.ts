/**
 * The admin CLI's database: the stores and services a command works on, open for the command's length
 * (indexes made first), and the user an `--user`/`--owner` option names.
 */
import type { Config } from '../config';
import { SecretBox } from '../auth/secret-box';
import { createServices, createStores, type Stores as AllStores } from '../composition';
import type { OrganizationsService } from '../orgs/organizations-service';
import type { UserSecretsStore } from '../store/user-secrets-store';
import { ALL_INDEXES } from '../store/indexes';
import { ensureIndexes, openDatabase } from '../store/mongo';
import { ensurePostgresIndexes } from '../store/postgres-indexes';
import type { User, UsersStore } from '../store/users-store';
import { CliError } from './admin-errors';
import { resolveSecretsKey, resolveServers } from './embedded-servers';

export interface Stores extends Pick<
  AllStores,
  'users' | 'apiKeys' | 'memberships' | 'conversations' | 'organizations' | 'organizationQuotas'
> {
  orgs: OrganizationsService;
  /** Needs SECRETS_KEY (or the launcher's key file). */
  userSecrets: () => UserSecretsStore;
}

export async function withDatabase<T>(config: Config, fn: (stores: Stores) => Promise<T>): Promise<T> {
  const { mongoUri, postgresUrl } = resolveServers(config);
  if (!mongoUri)
    throw new CliError('MONGODB_URI is not set and no launcher runs on DATA_DIR; start the service or set MONGODB_URI');
  const key = resolveSecretsKey(config);
  const database = openDatabase(mongoUri, config.mongo.db, {
    serverSelectionTimeoutMs: config.mongo.serverSelectionTimeoutMs,
    appName: 'agent-control-admin',
  });
  try {
    await ensureIndexes(database.db, ALL_INDEXES);
    if (postgresUrl) {
      // Only speed: a failure is said, and the command goes on (the api tries again at its start).
      const outcome = await ensurePostgresIndexes(database.db, postgresUrl, ALL_INDEXES).catch((e: Error) => ({
        skipped: e.message,
      }));
      if ('skipped' in outcome)
        console.error(`warning: PostgreSQL indexes not made (queries scan whole tables): ${outcome.skipped}`);
    }
    // Creating users and organizations seals no secret; a placeholder key serves when none is set
    // (the user secrets need the real one: `userSecrets` refuses to run without it).
    const box = key ? new SecretBox(key) : new SecretBox(SecretBox.generateKey());
    const stores = createStores(database.db, { box });
    const { users, apiKeys, memberships, conversations, organizations, organizationQuotas } = stores;
    const userSecrets = () => {
      if (!key) throw new CliError('SECRETS_KEY is not set and no launcher has kept one in DATA_DIR');
      return stores.userSecrets;
    };
    return await fn({
      users,
      apiKeys,
      memberships,
      conversations,
      organizations,
      organizationQuotas,
      orgs: createServices(stores, { box }).organizations,
      userSecrets,
    });
  } finally {
    await database.close();
  }
}

/** The user `ref` names: an id, or an email (it has an @). */
export async function findUser(users: UsersStore, ref: string): Promise<User> {
  const user = ref.includes('@') ? await users.findByEmail(ref) : await users.get(ref);
  if (!user) throw new CliError(`no user ${ref}`);
  return user;
}

/** `fn` over the user `ref` names and the stores, in `withDatabase`. */
export function withUser<T>(config: Config, ref: string, fn: (user: User, stores: Stores) => Promise<T>): Promise<T> {
  return withDatabase(config, async (stores) => fn(await findUser(stores.users, ref), stores));
}
