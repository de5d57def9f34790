/**
 * What a user sets for themselves, over their active organization: their own agent and conversation
 * settings (sparse diffs laid over the organization's, see user-settings-diffs.ts), their stored secrets
 * and git provider tokens, and who they are (users/me). Secrets are sealed on the way in, never shown on
 * the way out.
 */
import { SecretBox } from '../auth/secret-box';
import { Conflict, InvalidInput, NotFound } from '../errors';
import type { Organization } from '../schemas/organizations';
import { detailsInWords } from '../schemas/validation-detail';
import { SECRET_MASK } from '../schemas/secret-mask';
import { SECRET_LIMITS, type GitProvider, type SettingsUpdate, type SettingsView } from '../schemas/settings';
import type { MembershipsStore } from '../store/memberships-store';
import type { OrganizationsStore } from '../store/organizations-store';
import type { UserSecretInfo, UserSecretsStore } from '../store/user-secrets-store';
import type { UserSettings, UserSettingsStore } from '../store/user-settings-store';
import type { User, UsersStore } from '../store/users-store';
import { effectiveSettings, mergeUpdateDiffs, oversizedDiffs } from './user-settings-diffs';
import { meView, settingsView } from './user-settings-views';

type Json = Record<string, unknown>;

export interface UserSettingsDeps {
  users: UsersStore;
  organizations: OrganizationsStore;
  memberships: MembershipsStore;
  userSecrets: UserSecretsStore;
  userSettings: UserSettingsStore;
  box: SecretBox;
}

export interface SecretsPage {
  items: UserSecretInfo[];
  last: string | null;
}

/** The settings POST /api/v1/settings copies as they are sent (null and absent keep the stored value). */
const PLAIN_SETTINGS = ['language', 'git_user_name', 'git_user_email', 'user_consents_to_analytics'] as const;

/** A provider token sent as null, "" or the mask (or not sent) keeps the stored one. */
const keepsStoredToken = (token: string | null | undefined): boolean =>
  token === undefined || token === null || token === '' || token === SECRET_MASK;

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

  /** GET /api/v1/settings. */
  async load(userId: string): Promise<SettingsView> {
    const user = await this.user(userId);
    const org = await this.activeOrganization(user);
    const s = await this.deps.userSettings.get(userId);
    const providers = await this.deps.userSecrets.providersSet(userId);
    return settingsView(user, org, s, effectiveSettings(org, s), providers);
  }

  /** The caller's effective LLM with its key in the clear (for asking its endpoint which models it serves). */
  async effectiveLlm(userId: string): Promise<{ model?: string; base_url?: string; api_key?: string } | undefined> {
    const user = await this.user(userId);
    const org = await this.activeOrganization(user);
    const { agent } = effectiveSettings(org, await this.deps.userSettings.get(userId));
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
    const next: UserSettings = { ...s, user_version: s.user_version + 1, updated_at: new Date() };
    const problems = mergeUpdateDiffs(org, s, update, next, this.deps.box);
    // The update was valid by itself (the route checked it): what it makes with the stored diffs and the
    // organization's settings is not.
    if (problems.length > 0)
      throw new Conflict(
        `The change does not fit your stored settings over your organization's: ${detailsInWords(problems)}. ` +
          'To switch to another agent variant, name its agent_kind.',
      );
    const oversized = oversizedDiffs(next);
    if (oversized.length > 0) throw new InvalidInput(oversized);
    for (const k of PLAIN_SETTINGS) {
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
   * change); a provider without a stored token needs one: keeping what is not there conflicts with what is
   * stored (409), whatever the body's shape. Providers not named keep theirs.
   */
  async storeProviderTokens(
    userId: string,
    tokens: Partial<Record<GitProvider, { token?: string | null; host?: string | null }>>,
  ): Promise<void> {
    const stored = await this.deps.userSecrets.providersSet(userId);
    const missing = Object.entries(tokens)
      .filter(([provider, t]) => keepsStoredToken(t.token) && !stored[provider])
      .map(([provider]) => provider);
    if (missing.length > 0)
      throw new Conflict(
        `No token is stored for ${missing.join(', ')} to keep: send one (a null, "" or masked token keeps the stored one)`,
      );
    for (const [provider, t] of Object.entries(tokens)) {
      const keeps = keepsStoredToken(t.token);
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
    return meView(user, org, role, s, org ? effectiveSettings(org, s) : null);
  }
}
