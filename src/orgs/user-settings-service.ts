/**
 * What a user sets for themselves, over their active organization: their own agent and conversation
 * settings (sparse diffs laid over the organization's), their stored secrets and git provider tokens, and
 * who they are (users/me). Secrets are sealed on the way in, never shown on the way out.
 */
import { z } from 'zod';
import { SecretBox } from '../auth/secret-box';
import { Conflict, InvalidInput, NotFound } from '../errors';
import {
  AgentSettingsSchema,
  ConversationSettingsSchema,
  type AgentSettings,
  type ConversationSettings,
  type Organization,
  type Role,
} from '../schemas/organizations';
import { SECRET_MASK } from '../schemas/secret-mask';
import {
  PERMISSIONS,
  SECRET_LIMITS,
  type GitProvider,
  type SettingsUpdate,
  type SettingsView,
} from '../schemas/settings';
import { toValidationDetail, type ValidationDetail } from '../schemas/validation-detail';
import type { MembershipsStore } from '../store/memberships-store';
import type { OrganizationsStore } from '../store/organizations-store';
import type { UserSecretInfo, UserSecretsStore } from '../store/user-secrets-store';
import type { UserSettings, UserSettingsStore } from '../store/user-settings-store';
import type { User, UsersStore } from '../store/users-store';
import { maskSecrets, SECRET_PATHS } from './organization-secrets';
import { mergePatch } from './organizations-service';

type Json = Record<string, unknown>;

export interface UserSettingsDeps {
  users: UsersStore;
  organizations: OrganizationsStore;
  memberships: MembershipsStore;
  userSecrets: UserSecretsStore;
  userSettings: UserSettingsStore;
  box: SecretBox;
}

/** Secret paths inside agent_settings (SECRET_PATHS are the organization's, from its root). */
const AGENT_SECRET_PATHS = SECRET_PATHS.filter((p) => p[0] === 'agent_settings').map((p) => p.slice(1));

const isPlainObject = (v: unknown): v is Json => v !== null && typeof v === 'object' && !Array.isArray(v);

function getAt(obj: unknown, path: readonly string[]): unknown {
  let v: unknown = obj;
  for (const k of path) {
    if (!isPlainObject(v)) return undefined;
    v = v[k];
  }
  return v;
}

function deleteAt(obj: unknown, path: readonly string[]): void {
  const parent = getAt(obj, path.slice(0, -1));
  if (isPlainObject(parent)) delete parent[path[path.length - 1]!];
}

function setAt(obj: unknown, path: readonly string[], value: unknown): void {
  const parent = getAt(obj, path.slice(0, -1));
  if (isPlainObject(parent)) parent[path[path.length - 1]!] = value;
}

/**
 * The effective agent settings: the user's diff merged over the organization's. A diff naming another
 * agent_kind is a variant of its own (nothing of the organization's other variant carries over).
 */
export function applyAgentDiff(org: AgentSettings, diff: Json): z.ZodSafeParseResult<AgentSettings> {
  const base = diff.agent_kind !== undefined && diff.agent_kind !== org.agent_kind ? {} : org;
  return AgentSettingsSchema.safeParse(mergePatch(base, diff));
}

export function applyConversationDiff(
  org: ConversationSettings,
  diff: Json,
): z.ZodSafeParseResult<ConversationSettings> {
  return ConversationSettingsSchema.safeParse(mergePatch(org, diff));
}

/** Permissions of each role, as users/me lists them. */
export function permissionsOf(role: Role | null): string[] {
  if (!role) return [];
  const all = [...PERMISSIONS];
  return role === 'member' ? all.filter((p) => p !== 'edit_organization_settings') : all;
}

/** Validation details of a diff, located under its own body field. */
function underField(field: string, issues: readonly z.core.$ZodIssue[], merged: unknown): ValidationDetail[] {
  return toValidationDetail(issues, merged, 'body').map((d) => ({ ...d, loc: ['body', field, ...d.loc.slice(1)] }));
}

/** Seals the secrets of a new agent diff: the mask keeps the user's stored value (or none), "" removes it. */
function sealDiffSecrets(patch: Json, previous: Json, box: SecretBox): Json {
  const out = structuredClone(patch);
  for (const path of AGENT_SECRET_PATHS) {
    const v = getAt(out, path);
    if (typeof v !== 'string') continue;
    if (v === SECRET_MASK || SecretBox.isSealed(v)) {
      const before = getAt(previous, path);
      if (typeof before === 'string') setAt(out, path, before);
      else deleteAt(out, path);
    } else if (v !== '') {
      setAt(out, path, box.seal(v));
    }
  }
  return out;
}

/** Removes the secrets set to "" (after merging): the organization's value applies again. */
function dropClearedSecrets(diff: Json): Json {
  for (const path of AGENT_SECRET_PATHS) if (getAt(diff, path) === '') deleteAt(diff, path);
  return diff;
}

export interface SecretsPage {
  items: UserSecretInfo[];
  last: string | null;
}

export class UserSettingsService {
  constructor(private readonly deps: UserSettingsDeps) {}

  private async user(userId: string): Promise<User> {
    const user = await this.deps.users.get(userId);
    if (!user) throw new NotFound('User not found');
    return user;
  }

  /** The user's active organization (sealed, as stored). */
  private async activeOrganization(user: User): Promise<Organization> {
    const org = user.current_org_id ? await this.deps.organizations.get(user.current_org_id) : null;
    if (!org)
      throw new NotFound(
        'Your active organization does not exist; switch to one of yours (POST /api/organizations/{org_id}/switch)',
      );
    return org;
  }

  /** Effective agent and conversation settings, sealed; an organization that changed under a user's diff falls back to its own. */
  private effective(org: Organization, s: UserSettings): { agent: AgentSettings; conversation: ConversationSettings } {
    const agent = applyAgentDiff(org.agent_settings, s.agent_settings_diff);
    const conversation = applyConversationDiff(org.conversation_settings, s.conversation_settings_diff);
    return {
      agent: agent.success ? agent.data : org.agent_settings,
      conversation: conversation.success ? conversation.data : org.conversation_settings,
    };
  }

  /** GET /api/v1/settings. */
  async load(userId: string): Promise<SettingsView> {
    const user = await this.user(userId);
    const org = await this.activeOrganization(user);
    const s = await this.deps.userSettings.get(userId);
    const { agent, conversation } = this.effective(org, s);
    const providers = await this.deps.userSecrets.providersSet(userId);
    const llm = agent.agent_kind === 'acp' ? undefined : agent.llm;
    return {
      language: s.language,
      user_version: s.user_version,
      remote_runtime_resource_factor: org.remote_runtime_resource_factor,
      enable_sound_notifications: s.enable_sound_notifications,
      enable_proactive_conversation_starters: org.enable_proactive_conversation_starters,
      user_consents_to_analytics: s.user_consents_to_analytics,
      sandbox_base_container_image: org.sandbox_base_container_image || null,
      sandbox_runtime_container_image: org.sandbox_runtime_container_image || null,
      disabled_skills: agent.agent_kind === 'platform' ? (agent.agent_context.disabled_skills ?? null) : null,
      max_budget_per_task: org.max_budget_per_task,
      email: user.email,
      git_user_name: s.git_user_name,
      git_user_email: s.git_user_email,
      v1_enabled: org.v1_enabled,
      agent_settings: maskSecrets({ agent_settings: agent }).agent_settings as unknown as Json,
      conversation_settings: conversation,
      provider_tokens_set: Object.fromEntries(Object.entries(providers).map(([p, i]) => [p, i.host])),
      llm_api_key_set: typeof llm?.api_key === 'string' && llm.api_key !== '',
      search_api_key_set: org.search_api_key !== '',
      organization_id: org.id,
    };
  }

  /** The caller's effective LLM with its key in the clear (for asking its endpoint which models it serves). */
  async effectiveLlm(userId: string): Promise<{ model?: string; base_url?: string; api_key?: string } | undefined> {
    const user = await this.user(userId);
    const org = await this.activeOrganization(user);
    const { agent } = this.effective(org, await this.deps.userSettings.get(userId));
    if (agent.agent_kind === 'acp') return undefined;
    const key = agent.llm.api_key;
    return {
      model: agent.llm.model,
      base_url: agent.llm.base_url,
      api_key: key && SecretBox.isSealed(key) ? this.deps.box.open(key) : key,
    };
  }

  /** POST /api/v1/settings: diffs merged into the stored ones, the result validated whole over the organization's. */
  async store(userId: string, update: SettingsUpdate): Promise<SettingsView> {
    const user = await this.user(userId);
    const org = await this.activeOrganization(user);
    const s = await this.deps.userSettings.get(userId);
    const problems: ValidationDetail[] = [];
    const next: UserSettings = { ...s, user_version: s.user_version + 1, updated_at: new Date() };

    let agentPatch: Json | undefined = update.agent_settings_diff ?? undefined;
    if (update.llm_api_key !== undefined && update.llm_api_key !== null)
      agentPatch = mergePatch(agentPatch ?? {}, { llm: { api_key: update.llm_api_key } }) as Json;
    if (agentPatch) {
      const current = this.effective(org, s).agent;
      const kindChanges = agentPatch.agent_kind !== undefined && agentPatch.agent_kind !== current.agent_kind;
      const previous = kindChanges ? {} : s.agent_settings_diff;
      const diff = dropClearedSecrets(
        mergePatch(previous, sealDiffSecrets(agentPatch, s.agent_settings_diff, this.deps.box)) as Json,
      );
      const checked = applyAgentDiff(org.agent_settings, diff);
      if (checked.success) next.agent_settings_diff = diff;
      else
        problems.push(
          ...underField(
            'agent_settings_diff',
            checked.error.issues,
            mergePatch(
              diff.agent_kind !== undefined && diff.agent_kind !== org.agent_settings.agent_kind
                ? {}
                : org.agent_settings,
              diff,
            ),
          ),
        );
    }
    if (update.conversation_settings_diff) {
      const diff = mergePatch(s.conversation_settings_diff, update.conversation_settings_diff) as Json;
      const checked = applyConversationDiff(org.conversation_settings, diff);
      if (checked.success) next.conversation_settings_diff = diff;
      else
        problems.push(
          ...underField(
            'conversation_settings_diff',
            checked.error.issues,
            mergePatch(org.conversation_settings, diff),
          ),
        );
    }
    for (const [field, diff] of [
      ['agent_settings_diff', next.agent_settings_diff],
      ['conversation_settings_diff', next.conversation_settings_diff],
    ] as const) {
      const bytes = Buffer.byteLength(JSON.stringify(diff), 'utf8');
      if (bytes > SECRET_LIMITS.diffBytes) {
        problems.push({
          loc: ['body', field],
          msg: `Your stored ${field} would hold ${bytes} bytes, more than ${SECRET_LIMITS.diffBytes}`,
          type: 'too_long',
          input: null,
          ctx: { max_bytes: SECRET_LIMITS.diffBytes },
        });
      }
    }
    if (problems.length > 0) throw new InvalidInput(problems);
    for (const k of ['language', 'git_user_name', 'git_user_email', 'user_consents_to_analytics'] as const) {
      if (update[k] !== undefined && update[k] !== null) (next as unknown as Json)[k] = update[k];
    }
    if (typeof update.enable_sound_notifications === 'boolean')
      next.enable_sound_notifications = update.enable_sound_notifications;
    if (!(await this.deps.userSettings.put(next, s.user_version)))
      throw new Conflict('Your settings changed while this change was made; send it again');
    return this.load(userId);
  }

  // ---- secrets ----

  async searchSecrets(userId: string, limit: number, afterName?: string, nameContains?: string): Promise<SecretsPage> {
    return this.deps.userSecrets.page(userId, limit, afterName, nameContains);
  }

  /** Creates a secret, or overwrites one of the same name; a new name past the per-user limit is refused. */
  async createSecret(userId: string, s: { name: string; value: string; description?: string | null }): Promise<void> {
    if (
      !(await this.deps.userSecrets.has(userId, s.name)) &&
      (await this.deps.userSecrets.count(userId)) >= SECRET_LIMITS.perUser
    ) {
      throw new Conflict(`You have ${SECRET_LIMITS.perUser} secrets, the most a user may keep: delete one first`);
    }
    await this.deps.userSecrets.set(userId, s.name, s.value, s.description);
  }

  async updateSecret(userId: string, name: string, next: { name: string; description?: string | null }): Promise<void> {
    await this.deps.userSecrets.update(userId, name, next);
  }

  async deleteSecret(userId: string, name: string): Promise<void> {
    if (!(await this.deps.userSecrets.delete(userId, name))) throw new NotFound(`Secret ${name} not found`);
  }

  /**
   * Stores git provider tokens. A token that is null, "" or the mask keeps the stored one (its host may
   * change); a provider without a stored token needs one. Providers not named keep theirs.
   */
  async storeProviderTokens(
    userId: string,
    tokens: Partial<Record<GitProvider, { token?: string | null; host?: string | null }>>,
  ): Promise<void> {
    const stored = await this.deps.userSecrets.providersSet(userId);
    const problems: ValidationDetail[] = [];
    for (const [provider, t] of Object.entries(tokens)) {
      const keeps = t.token === undefined || t.token === null || t.token === '' || t.token === SECRET_MASK;
      if (keeps && !stored[provider]) {
        problems.push({
          loc: ['body', 'provider_tokens', provider, 'token'],
          msg: `No token is stored for ${provider}: send one`,
          type: 'missing',
          input: t.token ?? null,
        });
      }
    }
    if (problems.length > 0) throw new InvalidInput(problems);
    for (const [provider, t] of Object.entries(tokens)) {
      const keeps = t.token === undefined || t.token === null || t.token === '' || t.token === SECRET_MASK;
      const host = t.host === undefined ? (stored[provider]?.host ?? null) : t.host;
      if (keeps) await this.deps.userSecrets.setProviderHost(userId, provider, host);
      else await this.deps.userSecrets.setProviderToken(userId, provider, t.token!, host);
    }
  }

  async unsetProviderTokens(userId: string): Promise<number> {
    return this.deps.userSecrets.deleteProviderTokens(userId);
  }

  // ---- who the caller is ----

  /** GET /api/v1/users/me: the user, their active organization and role there, and a settings summary. */
  async me(userId: string) {
    const user = await this.user(userId);
    const org = user.current_org_id ? await this.deps.organizations.get(user.current_org_id) : null;
    const role = org ? await this.deps.memberships.role(org.id, userId) : null;
    const s = await this.deps.userSettings.get(userId);
    const effective = org ? this.effective(org, s) : null;
    return {
      id: user.id,
      email: user.email,
      current_org_id: user.current_org_id,
      created_at: user.created_at.toISOString(),
      org_id: org?.id ?? null,
      org_name: org?.name ?? null,
      role: role ?? null,
      permissions: permissionsOf(role ?? null),
      language: s.language,
      git_user_name: s.git_user_name,
      git_user_email: s.git_user_email,
      v1_enabled: org?.v1_enabled ?? true,
      agent_settings: effective
        ? (maskSecrets({ agent_settings: effective.agent }).agent_settings as unknown as Json)
        : {},
      conversation_settings: effective?.conversation ?? ConversationSettingsSchema.parse({}),
    };
  }
}

/** JSON Schema of what POST /api/v1/settings' agent_settings_diff may hold (whole, before the diff is taken). */
export function agentSettingsJsonSchema(): Json {
  return z.toJSONSchema(AgentSettingsSchema, { io: 'input', unrepresentable: 'any' }) as Json;
}

export function conversationSettingsJsonSchema(): Json {
  return z.toJSONSchema(ConversationSettingsSchema, { io: 'input', unrepresentable: 'any' }) as Json;
}
