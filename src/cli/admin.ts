#!/usr/bin/env node
/**
 * agent-control-admin: users, API keys and a health check of the whole system, for operators.
 * Raw API keys are printed once, when created, and never stored.
 */
import { Client, Connection, WorkflowFailedError } from '@temporalio/client';
import { Command, Option } from 'commander';
import { ConfigError, loadConfig, type Config } from '../config';
import { SecretBox } from '../auth/secret-box';
import { createOrganizationQuotas, createServices, createStores, type Stores as AllStores } from '../composition';
import type { OrganizationsService } from '../orgs/organizations-service';
import type { OrganizationLimit } from '../orgs/organization-quotas';
import { ROLES, type Role } from '../schemas/organizations';
import type { UserSecretsStore } from '../store/user-secrets-store';
import { ALL_INDEXES } from '../store/indexes';
import { ensureIndexes, openDatabase } from '../store/mongo';
import { ensurePostgresIndexes } from '../store/postgres-indexes';
import type { UsersStore } from '../store/users-store';
import { WORKFLOW_TYPES, diagnosticsWorkflowId, type DiagnosticsResult } from '../temporal/shared';
import { ADMIN_EMAIL, bootstrapAdmin } from './bootstrap';
import { runDemo } from './demo';
import { resolveSecretsKey, resolveServers } from './embedded-servers';

class CliError extends Error {}

interface Stores extends Pick<
  AllStores,
  'users' | 'apiKeys' | 'memberships' | 'conversations' | 'organizations' | 'organizationQuotas'
> {
  orgs: OrganizationsService;
  /** Needs SECRETS_KEY (or the launcher's key file). */
  userSecrets: () => UserSecretsStore;
}

async function withDatabase<T>(config: Config, fn: (stores: Stores) => Promise<T>): Promise<T> {
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

/** A quota given on the command line: a whole number (0: no limit), or `default` for the configuration's. */
function quotaValue(flag: string, value: string | undefined): number | null | undefined {
  if (value === undefined) return undefined;
  if (value === 'default') return null;
  if (!/^\d{1,9}$/.test(value)) throw new CliError(`${flag} must be a whole number >= 0 (0: no limit) or "default"`);
  return Number(value);
}

function role(value: string): Role {
  if (!(ROLES as readonly string[]).includes(value)) throw new CliError(`--role must be one of ${ROLES.join(', ')}`);
  return value as Role;
}

async function findUser(users: UsersStore, ref: string) {
  const user = ref.includes('@') ? await users.findByEmail(ref) : await users.get(ref);
  if (!user) throw new CliError(`no user ${ref}`);
  return user;
}

const print = (value: unknown, json: boolean, text: string) => console.log(json ? JSON.stringify(value) : text);

export function buildCli(config: () => Config): Command {
  const program = new Command('agent-control-admin')
    .description('Administer users and API keys of the agent control service')
    .addOption(new Option('--json', 'print machine-readable JSON'))
    .showHelpAfterError();
  const json = () => Boolean(program.opts<{ json?: boolean }>().json);

  const user = program.command('user').description('users');
  user
    .command('create')
    .requiredOption('--email <email>', "the user's email address")
    .description('create a user')
    .action(async (o: { email: string }) => {
      if (!/^[^@\s]+@[^@\s]+$/.test(o.email)) throw new CliError(`--email ${o.email} is not an email address`);
      const u = await withDatabase(config(), ({ orgs }) => orgs.createUser(o.email));
      print(
        { id: u.id, email: u.email, personal_org_id: u.current_org_id },
        json(),
        `created user ${u.id} <${u.email}>, personal organization ${u.current_org_id}`,
      );
    });

  const key = program.command('key').description('API keys (X-Access-Token)');
  key
    .command('create')
    .requiredOption('--user <id-or-email>', 'owner of the key')
    .option('--name <name>', 'what the key is for', 'cli')
    .description('create an API key; the key is printed this once')
    .action(async (o: { user: string; name: string }) => {
      const { key: info, raw } = await withDatabase(config(), async ({ users, apiKeys }) =>
        apiKeys.create((await findUser(users, o.user)).id, o.name),
      );
      print(
        { id: info.id, user_id: info.user_id, key: raw },
        json(),
        `API key ${info.id} for user ${info.user_id}:\n${raw}\n(shown once; it is not stored)`,
      );
    });
  key
    .command('list')
    .requiredOption('--user <id-or-email>', 'owner of the keys')
    .description("list a user's keys (never the keys themselves)")
    .action(async (o: { user: string }) => {
      const items = await withDatabase(config(), async ({ users, apiKeys }) => {
        const owner = await findUser(users, o.user);
        const all = [];
        let after: [number, string] | undefined;
        for (;;) {
          const page = await apiKeys.pageForUser(owner.id, 100, after);
          all.push(...page.items);
          if (!page.last) return all;
          after = page.last;
        }
      });
      print(
        items,
        json(),
        items.map((k) => `${k.id}  ${k.prefix}…  ${k.name}  ${k.revoked_at ? 'revoked' : 'live'}`).join('\n') ||
          '(no keys)',
      );
    });
  key
    .command('revoke')
    .argument('<key-id>', 'id of the key')
    .description('revoke an API key')
    .action(async (id: string) => {
      const done = await withDatabase(config(), ({ apiKeys }) => apiKeys.revoke(id));
      if (!done) throw new CliError(`no live API key ${id}`);
      print({ revoked: id }, json(), `revoked ${id}`);
    });

  const org = program.command('org').description('organizations and their members');
  org
    .command('create')
    .requiredOption('--name <name>', 'organization name')
    .requiredOption('--owner <id-or-email>', 'its first owner')
    .description('create an organization')
    .action(async (o: { name: string; owner: string }) => {
      const created = await withDatabase(config(), async ({ users, orgs }) =>
        orgs.createOrganization(o.name, (await findUser(users, o.owner)).id),
      );
      print({ id: created.id, name: created.name }, json(), `created organization ${created.id} (${created.name})`);
    });
  org
    .command('add-member')
    .requiredOption('--org <org-id>', 'the organization')
    .requiredOption('--user <id-or-email>', 'the user')
    .option('--role <role>', `one of ${ROLES.join(', ')}`, 'member')
    .description("add a member, or change a member's role")
    .action(async (o: { org: string; user: string; role: string }) => {
      const r = role(o.role);
      const userId = await withDatabase(config(), async ({ users, memberships }) => {
        const u = await findUser(users, o.user);
        await memberships.put(o.org, u.id, r);
        return u.id;
      });
      print({ organization_id: o.org, user_id: userId, role: r }, json(), `${userId} is ${r} of ${o.org}`);
    });
  org
    .command('remove-member')
    .requiredOption('--org <org-id>', 'the organization')
    .requiredOption('--user <id-or-email>', 'the user')
    .description('remove a member')
    .action(async (o: { org: string; user: string }) => {
      const done = await withDatabase(config(), async ({ users, memberships }) =>
        memberships.remove(o.org, (await findUser(users, o.user)).id),
      );
      if (!done) throw new CliError(`${o.user} is not a member of ${o.org}`);
      print({ removed: o.user }, json(), `removed ${o.user} from ${o.org}`);
    });
  org
    .command('members')
    .requiredOption('--org <org-id>', 'the organization')
    .description('list members and roles')
    .action(async (o: { org: string }) => {
      const list = await withDatabase(config(), ({ memberships }) => memberships.members(o.org));
      print(list, json(), list.map((m) => `${m.user_id}  ${m.role}`).join('\n') || '(no members)');
    });

  org
    .command('quotas')
    .requiredOption('--org <org-id>', 'the organization')
    .option(
      '--running-sandboxes <n>',
      'sandboxes its members may have starting or running together (0: no limit; "default": ORG_MAX_RUNNING_SANDBOXES)',
    )
    .option(
      '--concurrent-starts <n>',
      'starts of its members under way at once, more wait in line (0: no limit; "default": ORG_MAX_CONCURRENT_STARTS)',
    )
    .description("show an organization's quotas, or set its own over the defaults")
    .action(async (o: { org: string; runningSandboxes?: string; concurrentStarts?: string }) => {
      const overrides = {
        running_sandboxes: quotaValue('--running-sandboxes', o.runningSandboxes),
        concurrent_starts: quotaValue('--concurrent-starts', o.concurrentStarts),
      };
      const c = config();
      const limits = await withDatabase(c, async ({ users, memberships, organizations, organizationQuotas }) => {
        if (!(await organizations.get(o.org))) throw new CliError(`no organization ${o.org}`);
        if (overrides.running_sandboxes !== undefined || overrides.concurrent_starts !== undefined)
          await organizationQuotas.set(o.org, overrides);
        return createOrganizationQuotas({ users, memberships, organizationQuotas }, c).limitsOf(o.org);
      });
      const shown = (l: OrganizationLimit) => `${l.max ?? 'no limit'} (${l.named})`;
      print(
        {
          organization_id: o.org,
          running_sandboxes: limits.runningSandboxes,
          concurrent_starts: limits.concurrentStarts,
        },
        json(),
        `organization ${o.org}: running sandboxes ${shown(limits.runningSandboxes)}, concurrent starts ${shown(limits.concurrentStarts)}`,
      );
    });

  const secret = program.command('secret').description("a user's stored secrets, copied into their starts");
  secret
    .command('set')
    .requiredOption('--user <id-or-email>', 'the user')
    .requiredOption('--name <name>', 'secret name, such as GITHUB_TOKEN')
    .description('store a secret read from standard input (never from the command line)')
    .action(async (o: { user: string; name: string }) => {
      const value = (
        await new Promise<string>((resolve) => {
          let data = '';
          process.stdin.on('data', (d: Buffer) => (data += d.toString()));
          process.stdin.on('end', () => resolve(data));
        })
      ).replace(/\r?\n$/, '');
      if (!value) throw new CliError('send the secret value on standard input');
      await withDatabase(config(), async ({ users, userSecrets }) =>
        userSecrets().set((await findUser(users, o.user)).id, o.name, value),
      );
      print({ stored: o.name }, json(), `stored ${o.name}`);
    });

  program
    .command('bootstrap')
    .description('on a fresh install, create the admin user and its first API key')
    .action(async () => {
      const created = await withDatabase(config(), ({ users, apiKeys, orgs }) => bootstrapAdmin(users, apiKeys, orgs));
      print(
        created ?? {},
        json(),
        created ? `admin user ${created.userId}, API key:\n${created.key}` : 'users exist already; nothing created',
      );
    });

  program
    .command('demo')
    .description(
      'play a labelled demo conversation with a scripted LLM (no LLM key needed) through the running service',
    )
    .option('--user <id-or-email>', 'the user it runs as', ADMIN_EMAIL)
    .option('--timeout <seconds>', 'how long the whole demo may take', '120')
    .action(async (o: { user: string; timeout: string }) => {
      const c = config();
      const result = await withDatabase(c, async ({ users, apiKeys, conversations }) => {
        const owner = await findUser(users, o.user);
        // A key of its own for the demo's calls, revoked when it ends: the user's keys are not stored raw.
        const { key: info, raw } = await apiKeys.create(owner.id, 'demo');
        try {
          return await runDemo({
            apiUrl: c.api.publicBaseUrl,
            apiKey: raw,
            llmPort: c.demoLlmPort,
            userId: owner.id,
            conversations,
            print: json() ? () => undefined : (line) => console.log(line),
            timeoutMs: Number(o.timeout) * 1000,
          });
        } finally {
          await apiKeys.revoke(info.id);
        }
      });
      if (json()) console.log(JSON.stringify(result));
      if (result.status !== 'finished') throw new CliError(`the demo conversation ended ${result.status}`);
    });

  program
    .command('doctor')
    .description('run a diagnostics workflow: a worker polls the task queue and reaches the database')
    .option('--timeout <seconds>', 'how long to wait for a worker', '30')
    .action(async (o: { timeout: string }) => {
      const c = config();
      const { temporalAddress } = resolveServers(c);
      if (!temporalAddress) throw new CliError('TEMPORAL_ADDRESS is not set and no launcher runs on DATA_DIR');
      const connection = await Connection.connect({ address: temporalAddress });
      try {
        const client = new Client({ connection, namespace: c.temporal.namespace });
        const result = await client.workflow
          .execute<() => Promise<DiagnosticsResult>>(WORKFLOW_TYPES.diagnostics, {
            taskQueue: c.temporal.taskQueue,
            workflowId: diagnosticsWorkflowId(new Date()),
            workflowExecutionTimeout: `${Number(o.timeout)} seconds`,
          })
          .catch((e: unknown) => {
            if (e instanceof WorkflowFailedError) {
              throw new CliError(
                `no worker finished the diagnostics workflow on task queue ${c.temporal.taskQueue} within ${o.timeout} s: is the worker running?`,
              );
            }
            throw e;
          });
        print(
          result,
          json(),
          `worker ${result.worker.identity} on ${result.worker.taskQueue}; database ${result.database.ok ? `ok (${result.database.latencyMs} ms)` : `DOWN: ${result.database.error}`}`,
        );
        if (!result.database.ok) process.exitCode = 1;
      } finally {
        await connection.close();
      }
    });
  return program;
}

if (require.main === module) {
  buildCli(() => loadConfig())
    .parseAsync(process.argv)
    .catch((e: Error) => {
      console.error(e instanceof CliError || e instanceof ConfigError ? e.message : e);
      process.exit(1);
    });
}
