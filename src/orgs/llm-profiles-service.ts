/**
 * A user's saved LLM profiles (the published /api/v1/settings/profiles): save one (the request's LLM, or
 * a copy of the user's current one), list, read (never a key), rename, delete, and activate one (its LLM
 * becomes the user's agent_settings.llm, over the organization's). Keys are sealed before they are
 * stored; a profile used later (a start's agent_profile_id, a conversation's switch) is opened by
 * StartSettingsResolver.
 */
import type { SecretBox } from '../auth/secret-box';
import { Conflict, InvalidInput, NotFound } from '../errors';
import { MAX_PROFILES_PER_USER, type SaveProfileRequest } from '../schemas/llm-profiles';
import { SECRET_MASK } from '../schemas/secret-mask';
import { SECRET_LIMITS } from '../schemas/settings';
import type { LlmProfile, LlmProfilesStore } from '../store/llm-profiles-store';
import type { OrganizationsStore } from '../store/organizations-store';
import type { UserSettingsStore } from '../store/user-settings-store';
import type { UsersStore } from '../store/users-store';
import { LLM_SECRET_FIELDS } from './organization-secrets';
import { applyAgentDiff } from './user-settings-diffs';

type Json = Record<string, unknown>;

export interface LlmProfilesDeps {
  users: UsersStore;
  organizations: OrganizationsStore;
  userSettings: UserSettingsStore;
  llmProfiles: LlmProfilesStore;
  box: SecretBox;
}

const str = (v: unknown) => (typeof v === 'string' && v !== '' ? v : null);
const keySet = (llm: Json) => str(llm.api_key) !== null;
const info = (p: LlmProfile) => ({
  name: p.name,
  model: str(p.llm.model),
  base_url: str(p.llm.base_url),
  api_key_set: keySet(p.llm),
  id: p.id,
  revision: p.revision,
});

/** The LLM without its secrets (for a profile saved with include_secrets false). */
const withoutSecrets = (llm: Json): Json =>
  Object.fromEntries(Object.entries(llm).filter(([k]) => !(LLM_SECRET_FIELDS as readonly string[]).includes(k)));

export class LlmProfilesService {
  constructor(private readonly deps: LlmProfilesDeps) {}

  /** The user's settings and their active organization's agent settings. */
  private async context(userId: string) {
    const user = await this.deps.users.get(userId);
    const org = user?.current_org_id ? await this.deps.organizations.get(user.current_org_id) : null;
    if (!org)
      throw new NotFound(
        'Your active organization does not exist; switch to one of yours (POST /api/organizations/{org_id}/switch)',
      );
    return { org, settings: await this.deps.userSettings.get(userId) };
  }

  private async named(userId: string, name: string): Promise<LlmProfile> {
    const p = await this.deps.llmProfiles.byName(userId, name);
    if (!p) throw new NotFound(`You have no LLM profile named ${name}`);
    return p;
  }

  async list(userId: string) {
    const [profiles, activeId] = await Promise.all([
      this.deps.llmProfiles.list(userId),
      this.deps.llmProfiles.activeId(userId),
    ]);
    return { profiles: profiles.map(info), active_profile: profiles.find((p) => p.id === activeId)?.name ?? null };
  }

  async get(userId: string, name: string) {
    const p = await this.named(userId, name);
    const config: Json = { ...p.llm };
    for (const k of LLM_SECRET_FIELDS) config[k] = null;
    return { name: p.name, config, api_key_set: keySet(p.llm), id: p.id, revision: p.revision };
  }

  /**
   * Saves the request's LLM (its secrets sealed; the mask or none keeps the profile's key when
   * preserve_existing_api_key says so), or a copy of the user's current agent_settings.llm.
   */
  async save(userId: string, name: string, request: SaveProfileRequest) {
    let llm: Json;
    if (request.llm) {
      llm = { ...request.llm };
      const previous = request.preserve_existing_api_key
        ? (await this.deps.llmProfiles.byName(userId, name))?.llm
        : undefined;
      for (const k of LLM_SECRET_FIELDS) {
        const v = llm[k];
        if (v === undefined || v === '' || v === SECRET_MASK) {
          delete llm[k];
          if (typeof previous?.[k] === 'string') llm[k] = previous[k];
        } else {
          llm[k] = this.deps.box.seal(String(v));
        }
      }
    } else {
      const { org, settings } = await this.context(userId);
      const current = applyAgentDiff(org.agent_settings, settings.agent_settings_diff);
      const agent = current.success ? current.data : org.agent_settings;
      if (agent.agent_kind === 'acp')
        throw new Conflict("Your agent is an ACP agent, which has no LLM to copy: send the profile's llm");
      // Secrets only from the user's own settings: a profile never carries the organization's key out of
      // it (to another organization, or past a rotation); where it has none, the organization's applies.
      const own = (current.success ? settings.agent_settings_diff.llm : undefined) as Json | undefined;
      llm = withoutSecrets(agent.llm);
      for (const k of LLM_SECRET_FIELDS) if (typeof own?.[k] === 'string' && own[k] !== '') llm[k] = own[k]; // sealed as stored
    }
    if (!request.include_secrets) llm = withoutSecrets(llm);
    const bytes = Buffer.byteLength(JSON.stringify(llm), 'utf8');
    if (bytes > SECRET_LIMITS.diffBytes) {
      throw new InvalidInput([
        {
          loc: ['body', 'llm'],
          msg: `The profile would hold ${bytes} bytes, more than ${SECRET_LIMITS.diffBytes}`,
          type: 'too_long',
          input: null,
          ctx: { max_bytes: SECRET_LIMITS.diffBytes },
        },
      ]);
    }
    const saved = await this.deps.llmProfiles.save(userId, name, llm, MAX_PROFILES_PER_USER);
    if (!saved)
      throw new Conflict(`You have ${MAX_PROFILES_PER_USER} profiles, the most a user may keep: delete one first`);
    return { name: saved.name, message: `Profile ${saved.name} saved (revision ${saved.revision})` };
  }

  /** Idempotent: a name the user has no profile of is deleted too. */
  async delete(userId: string, name: string) {
    const existed = await this.deps.llmProfiles.delete(userId, name);
    return { name, message: existed ? `Profile ${name} deleted` : `No profile named ${name}: nothing to delete` };
  }

  async rename(userId: string, name: string, newName: string) {
    if (name === newName) await this.named(userId, name);
    else if (!(await this.deps.llmProfiles.rename(userId, name, newName)))
      throw new NotFound(`You have no LLM profile named ${name}`);
    return { name: newName, message: `Profile ${name} renamed to ${newName}` };
  }

  /** The profile's LLM becomes the user's agent_settings.llm (the organization's fills what it leaves out). */
  async activate(userId: string, name: string) {
    const p = await this.named(userId, name);
    const { org, settings } = await this.context(userId);
    const diff = { ...settings.agent_settings_diff, llm: p.llm };
    const checked = applyAgentDiff(org.agent_settings, diff);
    if (!checked.success)
      throw new Conflict(`The profile ${name} does not fit your agent settings: ${checked.error.issues[0]?.message}`);
    if (checked.data.agent_kind === 'acp')
      throw new Conflict(
        'Your agent is an ACP agent, which takes no LLM: set agent_settings.agent_kind to platform or llm first',
      );
    const bytes = Buffer.byteLength(JSON.stringify(diff), 'utf8');
    if (bytes > SECRET_LIMITS.diffBytes)
      throw new Conflict(
        `Your agent settings with this profile would hold ${bytes} bytes, more than ${SECRET_LIMITS.diffBytes}`,
      );
    const put = {
      ...settings,
      agent_settings_diff: diff,
      user_version: settings.user_version + 1,
      updated_at: new Date(),
    };
    if (!(await this.deps.userSettings.put(put, settings.user_version)))
      throw new Conflict('Your settings changed while the profile was activated; activate it again');
    await this.deps.llmProfiles.setActive(userId, p.id);
    return { name, message: `Profile ${name} is now your LLM`, model: str(checked.data.llm.model) };
  }
}
