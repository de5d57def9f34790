/**
 * Users, organizations and memberships together: every user has a personal organization; members read
 * theirs, owners and admins change them, anyone switches to one they belong to. Secrets are sealed on
 * the way in and masked on the way out, on every path.
 */
import { randomUUID } from 'node:crypto';
import type { SecretBox } from '../auth/secret-box';
import { Conflict, Forbidden, NotFound } from '../errors';
import { detailsInWords, toValidationDetail } from '../schemas/validation-detail';
import {
  AgentSettingsSchema,
  ConversationSettingsSchema,
  OrganizationEditableSchema,
  type Organization,
  type Role,
} from '../schemas/organizations';
import type { MembershipsStore } from '../store/memberships-store';
import type { OrganizationsStore } from '../store/organizations-store';
import type { User, UsersStore } from '../store/users-store';
import { maskSecrets, sealSecrets } from './organization-secrets';

export interface OrganizationsDeps {
  users: UsersStore;
  organizations: OrganizationsStore;
  memberships: MembershipsStore;
  box: SecretBox;
}

const EDITORS: readonly Role[] = ['owner', 'admin'];

export function newOrganization(name: string, isPersonal: boolean): Organization {
  return {
    id: randomUUID(),
    name,
    contact_name: '',
    contact_email: '',
    conversation_expiration: 30 * 24 * 3600,
    remote_runtime_resource_factor: 1,
    billing_margin: 0,
    enable_proactive_conversation_starters: false,
    sandbox_base_container_image: '',
    sandbox_runtime_container_image: '',
    org_version: 1,
    agent_settings: AgentSettingsSchema.parse({ agent_kind: 'platform' }),
    conversation_settings: ConversationSettingsSchema.parse({}),
    search_api_key: '',
    sandbox_api_key: '',
    max_budget_per_task: 0,
    v1_enabled: true,
    credits: 0,
    is_personal: isPersonal,
  };
}

const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  v !== null && typeof v === 'object' && !Array.isArray(v);

/** JSON merge patch (RFC 7386) without deletion: objects merge key by key, anything else replaces. */
export function mergePatch(target: unknown, patch: unknown): unknown {
  if (!isPlainObject(patch) || !isPlainObject(target)) return structuredClone(patch);
  const out: Record<string, unknown> = { ...target };
  for (const [k, v] of Object.entries(patch)) {
    // defineProperty: a key named __proto__ is data like any other, never the object's prototype.
    Object.defineProperty(out, k, {
      value: mergePatch(Object.hasOwn(target, k) ? target[k] : undefined, v),
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  return out;
}

export class OrganizationsService {
  constructor(private readonly deps: OrganizationsDeps) {}

  /** A new user with their personal organization (owner), which is also their active one. */
  async createUser(email: string): Promise<User> {
    const userId = randomUUID();
    const org = newOrganization(email.trim().toLowerCase(), true);
    await this.deps.organizations.insert(org);
    await this.deps.memberships.put(org.id, userId, 'owner');
    return this.deps.users.create(email, org.id, userId);
  }

  async createOrganization(name: string, ownerUserId: string): Promise<Organization> {
    const org = newOrganization(name, false);
    await this.deps.organizations.insert(org);
    await this.deps.memberships.put(org.id, ownerUserId, 'owner');
    return maskSecrets(org);
  }

  /** The organization and the caller's role: 404 when it does not exist, 403 when the caller is no member. */
  private async access(orgId: string, userId: string): Promise<{ org: Organization; role: Role }> {
    const org = await this.deps.organizations.get(orgId);
    if (!org) throw new NotFound('Organization not found');
    const role = await this.deps.memberships.role(orgId, userId);
    if (!role) throw new Forbidden('You are not a member of this organization');
    return { org, role };
  }

  async get(orgId: string, userId: string): Promise<Organization> {
    return maskSecrets((await this.access(orgId, userId)).org);
  }

  async list(
    userId: string,
    limit: number,
    afterOrgId?: string,
  ): Promise<{ items: Organization[]; last: string | null }> {
    const page = await this.deps.memberships.pageForUser(userId, limit, afterOrgId);
    const orgs = await this.deps.organizations.getMany(page.items.map((m) => m.organization_id));
    return { items: orgs.map(maskSecrets), last: page.last };
  }

  /**
   * Applies a partial update (objects merge, other values replace; a secret equal to the mask keeps the
   * stored one), validates the result whole, and bumps org_version.
   */
  async update(orgId: string, userId: string, patch: Record<string, unknown>): Promise<Organization> {
    const { org, role } = await this.access(orgId, userId);
    if (!EDITORS.includes(role)) throw new Forbidden('Only owners and admins can change an organization');
    const current = Object.fromEntries(
      Object.keys(OrganizationEditableSchema.shape).map((k) => [k, org[k as keyof Organization]]),
    );
    // Switching agent_kind starts that variant afresh rather than merging two shapes.
    const agentPatch = patch.agent_settings;
    const kindChanges =
      isPlainObject(agentPatch) &&
      agentPatch.agent_kind !== undefined &&
      agentPatch.agent_kind !== org.agent_settings.agent_kind;
    const base = kindChanges ? { ...current, agent_settings: {} } : current;
    const merged = mergePatch(base, patch);
    const parsed = OrganizationEditableSchema.safeParse(merged);
    // The patch was valid by itself (the route checked it): what it makes with the stored settings is not.
    if (!parsed.success)
      throw new Conflict(
        `The change does not fit the organization's stored settings: ${detailsInWords(toValidationDetail(parsed.error.issues, merged, 'body'))}. ` +
          'To switch agent_settings to another variant, name its agent_kind.',
      );
    const next: Organization = sealSecrets(
      { ...org, ...parsed.data, org_version: org.org_version + 1 },
      org,
      this.deps.box,
    );
    if (!(await this.deps.organizations.replace(next, org.org_version))) {
      throw new Conflict('The organization changed meanwhile; read it again and retry');
    }
    return maskSecrets(next);
  }

  /** SPEC 4.3: makes a member's organization their active one. */
  async switch(orgId: string, userId: string): Promise<Organization> {
    const { org } = await this.access(orgId, userId);
    // The user exists (the caller's key resolved to it) and is a member: a false here is a broken
    // invariant, a 500 with the cause logged by the api.
    if (!(await this.deps.users.setCurrentOrg(userId, orgId)))
      throw new Error(`switching user ${userId} to organization ${orgId} changed no user`);
    return maskSecrets(org);
  }
}
