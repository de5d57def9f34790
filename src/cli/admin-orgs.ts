/** `agent-control-admin org`: organizations, their members and roles, and their quotas. */
import type { Command } from 'commander';
import { createOrganizationQuotas } from '../composition';
import type { OrganizationLimit } from '../orgs/organization-quotas';
import { ROLES, type Role } from '../schemas/organizations';
import type { AdminContext } from './admin-context';
import { withDatabase, withUser } from './admin-database';
import { CliError } from './admin-errors';

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

export function addOrgCommands(program: Command, cli: AdminContext) {
  const org = program.command('org').description('organizations and their members');
  org
    .command('create')
    .requiredOption('--name <name>', 'organization name')
    .requiredOption('--owner <id-or-email>', 'its first owner')
    .description('create an organization')
    .action(async (o: { name: string; owner: string }) => {
      const created = await withUser(cli.config(), o.owner, (owner, { orgs }) =>
        orgs.createOrganization(o.name, owner.id),
      );
      cli.print({ id: created.id, name: created.name }, `created organization ${created.id} (${created.name})`);
    });
  org
    .command('add-member')
    .requiredOption('--org <org-id>', 'the organization')
    .requiredOption('--user <id-or-email>', 'the user')
    .option('--role <role>', `one of ${ROLES.join(', ')}`, 'member')
    .description("add a member, or change a member's role")
    .action(async (o: { org: string; user: string; role: string }) => {
      const r = role(o.role);
      const userId = await withUser(cli.config(), o.user, async (u, { memberships }) => {
        await memberships.put(o.org, u.id, r);
        return u.id;
      });
      cli.print({ organization_id: o.org, user_id: userId, role: r }, `${userId} is ${r} of ${o.org}`);
    });
  org
    .command('remove-member')
    .requiredOption('--org <org-id>', 'the organization')
    .requiredOption('--user <id-or-email>', 'the user')
    .description('remove a member')
    .action(async (o: { org: string; user: string }) => {
      const done = await withUser(cli.config(), o.user, (u, { memberships }) => memberships.remove(o.org, u.id));
      if (!done) throw new CliError(`${o.user} is not a member of ${o.org}`);
      cli.print({ removed: o.user }, `removed ${o.user} from ${o.org}`);
    });
  org
    .command('members')
    .requiredOption('--org <org-id>', 'the organization')
    .description('list members and roles')
    .action(async (o: { org: string }) => {
      const list = await withDatabase(cli.config(), ({ memberships }) => memberships.members(o.org));
      cli.print(list, list.map((m) => `${m.user_id}  ${m.role}`).join('\n') || '(no members)');
    });
  addQuotasCommand(org, cli);
}

function addQuotasCommand(org: Command, cli: AdminContext) {
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
      const c = cli.config();
      const limits = await withDatabase(c, async ({ users, memberships, organizations, organizationQuotas }) => {
        if (!(await organizations.get(o.org))) throw new CliError(`no organization ${o.org}`);
        if (overrides.running_sandboxes !== undefined || overrides.concurrent_starts !== undefined)
          await organizationQuotas.set(o.org, overrides);
        return createOrganizationQuotas({ users, memberships, organizationQuotas }, c).limitsOf(o.org);
      });
      const shown = (l: OrganizationLimit) => `${l.max ?? 'no limit'} (${l.named})`;
      cli.print(
        {
          organization_id: o.org,
          running_sandboxes: limits.runningSandboxes,
          concurrent_starts: limits.concurrentStarts,
        },
        `organization ${o.org}: running sandboxes ${shown(limits.runningSandboxes)}, concurrent starts ${shown(limits.concurrentStarts)}`,
      );
    });
}
