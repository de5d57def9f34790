/** `agent-control-admin user`, `key` and `secret`: users, their API keys and their stored secrets. */
import type { Command } from 'commander';
import type { ApiKeyInfo, ApiKeysStore } from '../store/api-keys-store';
import type { AdminContext } from './admin-context';
import { findUser, withDatabase, withUser } from './admin-database';
import { CliError } from './admin-errors';

export function addUserCommands(program: Command, cli: AdminContext) {
  const user = program.command('user').description('users');
  user
    .command('create')
    .requiredOption('--email <email>', "the user's email address")
    .description('create a user')
    .action(async (o: { email: string }) => {
      if (!/^[^@\s]+@[^@\s]+$/.test(o.email)) throw new CliError(`--email ${o.email} is not an email address`);
      const u = await withDatabase(cli.config(), ({ orgs }) => orgs.createUser(o.email));
      cli.print(
        { id: u.id, email: u.email, personal_org_id: u.current_org_id },
        `created user ${u.id} <${u.email}>, personal organization ${u.current_org_id}`,
      );
    });
}

export function addKeyCommands(program: Command, cli: AdminContext) {
  const key = program.command('key').description('API keys (X-Access-Token)');
  key
    .command('create')
    .requiredOption('--user <id-or-email>', 'owner of the key')
    .option('--name <name>', 'what the key is for', 'cli')
    .description('create an API key; the key is printed this once')
    .action(async (o: { user: string; name: string }) => {
      const { key: info, raw } = await withUser(cli.config(), o.user, (owner, { apiKeys }) =>
        apiKeys.create(owner.id, o.name),
      );
      cli.print(
        { id: info.id, user_id: info.user_id, key: raw },
        `API key ${info.id} for user ${info.user_id}:\n${raw}\n(shown once; it is not stored)`,
      );
    });
  key
    .command('list')
    .requiredOption('--user <id-or-email>', 'owner of the keys')
    .description("list a user's keys (never the keys themselves)")
    .action(async (o: { user: string }) => {
      const items = await withUser(cli.config(), o.user, (owner, { apiKeys }) => allKeysOf(apiKeys, owner.id));
      cli.print(
        items,
        items.map((k) => `${k.id}  ${k.prefix}…  ${k.name}  ${k.revoked_at ? 'revoked' : 'live'}`).join('\n') ||
          '(no keys)',
      );
    });
  key
    .command('revoke')
    .argument('<key-id>', 'id of the key')
    .description('revoke an API key')
    .action(async (id: string) => {
      const done = await withDatabase(cli.config(), ({ apiKeys }) => apiKeys.revoke(id));
      if (!done) throw new CliError(`no live API key ${id}`);
      cli.print({ revoked: id }, `revoked ${id}`);
    });
}

/** Every key of the user, page by page. */
async function allKeysOf(apiKeys: ApiKeysStore, userId: string): Promise<ApiKeyInfo[]> {
  const all: ApiKeyInfo[] = [];
  let after: [number, string] | undefined;
  for (;;) {
    const page = await apiKeys.pageForUser(userId, 100, after);
    all.push(...page.items);
    if (!page.last) return all;
    after = page.last;
  }
}

export function addSecretCommands(program: Command, cli: AdminContext) {
  const secret = program.command('secret').description("a user's stored secrets, copied into their starts");
  secret
    .command('set')
    .requiredOption('--user <id-or-email>', 'the user')
    .requiredOption('--name <name>', 'secret name, such as GITHUB_TOKEN')
    .description('store a secret read from standard input (never from the command line)')
    .action(async (o: { user: string; name: string }) => {
      const value = (await readStdin()).replace(/\r?\n$/, '');
      if (!value) throw new CliError('send the secret value on standard input');
      // userSecrets() before the user is looked up: a missing SECRETS_KEY is said first.
      await withDatabase(cli.config(), async ({ users, userSecrets }) =>
        userSecrets().set((await findUser(users, o.user)).id, o.name, value),
      );
      cli.print({ stored: o.name }, `stored ${o.name}`);
    });
}

/** All of standard input, as text. */
function readStdin(): Promise<string> {
  return new Promise<string>((resolve) => {
    let data = '';
    process.stdin.on('data', (d: Buffer) => (data += d.toString()));
    process.stdin.on('end', () => resolve(data));
  });
}
