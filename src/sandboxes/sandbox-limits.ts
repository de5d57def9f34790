/**
 * Whether a user may run one more sandbox: who may start process sandboxes, and the running-sandbox
 * quotas of the user (USER_MAX_RUNNING_SANDBOXES) and of the organization the sandbox counts in.
 */
import { TooMany } from '../errors';
import type { OrganizationLimits, OrganizationQuotas } from '../orgs/organization-quotas';
import type { SandboxesStore } from '../store/sandboxes-store';
import type { UsersStore } from '../store/users-store';

export interface SandboxLimitsDeps {
  sandboxes: Pick<SandboxesStore, 'countActive' | 'countActiveInOrganization'>;
  users: Pick<UsersStore, 'get'>;
  /** Who may start process sandboxes: everyone, unless they are not isolated and not shared on purpose. */
  processSandboxes: { restricted: boolean; users: string[] };
  /** Sandboxes one user may have starting or running at once (USER_MAX_RUNNING_SANDBOXES); null: no limit. */
  maxRunning?: number | null;
  /** What an organization's members may have together; absent: no organization limits. */
  organizationQuotas?: Pick<OrganizationQuotas, 'limitsOf' | 'ofUser'>;
}

export class SandboxLimits {
  constructor(private readonly deps: SandboxLimitsDeps) {}

  /** A user allowed process sandboxes: always when they are isolated or shared on purpose, else only if listed (by id or email). */
  async mayRunProcesses(userId: string): Promise<boolean> {
    const { restricted, users } = this.deps.processSandboxes;
    if (!restricted || users.includes(userId)) return true;
    if (!users.some((u) => u.includes('@'))) return false;
    const user = await this.deps.users.get(userId);
    return !!user && users.includes(user.email);
  }

  /**
   * The organization a new sandbox counts in, with its limits: `organizationId` (a start's, the one it
   * waited in line for), else the user's current one; null without organization quotas or organization.
   */
  async organizationOfNew(userId: string, organizationId?: string): Promise<OrganizationLimits | null> {
    const quotas = this.deps.organizationQuotas;
    if (!quotas) return null;
    return organizationId ? await quotas.limitsOf(organizationId) : await quotas.ofUser(userId);
  }

  /** The limits of the organization an existing sandbox counts in; null without organization quotas or organization. */
  async organizationOf(organizationId: string | null | undefined): Promise<OrganizationLimits | null> {
    const quotas = this.deps.organizationQuotas;
    return quotas && organizationId ? await quotas.limitsOf(organizationId) : null;
  }

  /**
   * One more running sandbox of the user past USER_MAX_RUNNING_SANDBOXES, or of the organization it counts
   * in past the organization's quota, is refused (429), saying which and what to do.
   */
  async withinQuota(userId: string, organization: OrganizationLimits | null): Promise<void> {
    const max = this.deps.maxRunning;
    const orgMax = organization?.runningSandboxes.max;
    const [active, orgActive] = await Promise.all([
      max ? this.deps.sandboxes.countActive(userId) : 0,
      organization && orgMax ? this.deps.sandboxes.countActiveInOrganization(organization.organizationId) : 0,
    ]);
    if (max && active >= max) {
      throw new TooMany(
        `You have ${active} sandboxes starting or running, as many as one user may (USER_MAX_RUNNING_SANDBOXES=${max}): pause or delete one first`,
      );
    }
    if (organization && orgMax && orgActive >= orgMax) {
      throw new TooMany(
        `Your organization ${organization.organizationId} has ${orgActive} sandboxes starting or running, as many as it may (${organization.runningSandboxes.named}): you or another member must pause or delete one first`,
      );
    }
  }
}
