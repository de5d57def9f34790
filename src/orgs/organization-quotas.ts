/**
 * What one organization may hold at once, shared by its members: sandboxes starting or running, and
 * starts under way. Each is the operator's override for that organization when set
 * (`agent-control-admin org quotas`), else the configuration's default (ORG_MAX_RUNNING_SANDBOXES,
 * ORG_MAX_CONCURRENT_STARTS); 0 means none. A user acts in their current organization while they are
 * a member of it: what they start or create counts there.
 */
import type { MembershipsStore } from '../store/memberships-store';
import type { OrganizationQuotasStore } from '../store/organization-quotas-store';
import type { UsersStore } from '../store/users-store';

/** One limit: its value (null: none) and how a message names where it comes from. */
export interface OrganizationLimit {
  max: number | null;
  /** `ORG_MAX_RUNNING_SANDBOXES=3`, or `its own quota: 3` when the operator set one for it. */
  named: string;
}

export interface OrganizationLimits {
  organizationId: string;
  runningSandboxes: OrganizationLimit;
  concurrentStarts: OrganizationLimit;
}

export interface OrganizationQuotasDeps {
  users: Pick<UsersStore, 'get'>;
  memberships: Pick<MembershipsStore, 'role'>;
  quotas: Pick<OrganizationQuotasStore, 'get'>;
  /** The configuration's defaults; null: none. */
  defaults: { runningSandboxes: number | null; concurrentStarts: number | null };
}

const limit = (override: number | null | undefined, fallback: number | null, variable: string): OrganizationLimit => {
  if (override === null || override === undefined) return { max: fallback, named: `${variable}=${fallback ?? 0}` };
  return { max: override || null, named: `its own quota: ${override}` };
};

export class OrganizationQuotas {
  constructor(private readonly deps: OrganizationQuotasDeps) {}

  async limitsOf(organizationId: string): Promise<OrganizationLimits> {
    const own = await this.deps.quotas.get(organizationId);
    const { defaults } = this.deps;
    return {
      organizationId,
      runningSandboxes: limit(own.running_sandboxes, defaults.runningSandboxes, 'ORG_MAX_RUNNING_SANDBOXES'),
      concurrentStarts: limit(own.concurrent_starts, defaults.concurrentStarts, 'ORG_MAX_CONCURRENT_STARTS'),
    };
  }

  /**
   * The organization the user acts in now, and its limits; null for a user without one, or no longer a
   * member of it (removed while it was their current one): nothing they make counts there then.
   */
  async ofUser(userId: string): Promise<OrganizationLimits | null> {
    const orgId = (await this.deps.users.get(userId))?.current_org_id;
    if (!orgId || !(await this.deps.memberships.role(orgId, userId))) return null;
    return this.limitsOf(orgId);
  }
}
