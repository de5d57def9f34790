/**
 * What a start copies from storage (SPEC 2.4): the effective settings of the user's active organization
 * (the user's own settings laid over it), with its secrets in the clear, and the user's stored secrets
 * with the request's merged over them (the request wins on equal names, silently). Git provider tokens
 * arrive as `<PROVIDER>_TOKEN` (GIT_HOST_A_TOKEN, ...), over a custom secret of the same name.
 */
import type { SecretBox } from '../auth/secret-box';
import { Conflict, NotFound } from '../errors';
import type { AgentSettings, ConversationSettings } from '../schemas/organizations';
import type { LlmProfile, LlmProfilesStore } from '../store/llm-profiles-store';
import type { OrganizationsStore } from '../store/organizations-store';
import type { UserSecretsStore } from '../store/user-secrets-store';
import type { UserSettingsStore } from '../store/user-settings-store';
import type { UsersStore } from '../store/users-store';
import { openSecrets } from './organization-secrets';
import { applyAgentDiff, applyConversationDiff } from './user-settings-diffs';

export interface StartSettings {
  organization_id: string;
  agent_settings: AgentSettings;
  conversation_settings: ConversationSettings;
  secrets: Record<string, string>;
  /** The saved profile whose LLM these settings use (a start's agent_profile_id), at the revision read. */
  launched_agent_profile: { agent_profile_id: string; revision: number } | null;
}

/** Which saved LLM profile replaces the user's agent_settings.llm: by id (a start's), or by name (a switch). */
export type ProfileRef = { id: string } | { name: string };

/** The secret name a start gives a provider's token (what the clone step looks up). */
export const providerTokenName = (provider: string) => `${provider.toUpperCase()}_TOKEN`;

export class StartSettingsResolver {
  constructor(
    private readonly deps: {
      users: UsersStore;
      organizations: OrganizationsStore;
      userSecrets: UserSecretsStore;
      box: SecretBox;
      /** The users' own settings; without it a start uses the organization's alone. */
      userSettings?: UserSettingsStore;
      /** Saved LLM profiles; without it a start cannot name one. */
      llmProfiles?: LlmProfilesStore;
    },
  ) {}

  /** The user's profile named by `ref`; NotFound when they have none such. */
  async profile(userId: string, ref: ProfileRef): Promise<LlmProfile> {
    const found = !this.deps.llmProfiles
      ? null
      : 'id' in ref
        ? await this.deps.llmProfiles.byId(userId, ref.id)
        : await this.deps.llmProfiles.byName(userId, ref.name);
    if (!found)
      throw new NotFound(
        'id' in ref
          ? `You have no LLM profile with id ${ref.id} (GET /api/v1/settings/profiles lists yours)`
          : `You have no LLM profile named ${ref.name}`,
      );
    return found;
  }

  /**
   * The settings a start copies; with `profile`, that saved profile's LLM takes the place of the user's
   * own agent_settings.llm (laid over the organization's, as activating it would).
   */
  async resolve(
    userId: string,
    requestSecrets: Record<string, string> = {},
    profile?: ProfileRef,
  ): Promise<StartSettings> {
    const user = await this.deps.users.get(userId);
    if (!user?.current_org_id) throw new NotFound(`user ${userId} has no active organization`);
    const org = await this.deps.organizations.get(user.current_org_id);
    if (!org) throw new NotFound(`the active organization ${user.current_org_id} of user ${userId} does not exist`);
    let { agent_settings, conversation_settings } = org;
    const mine = await this.deps.userSettings?.get(userId);
    let ownDiff: Record<string, unknown> = {};
    if (mine) {
      const agent = applyAgentDiff(agent_settings, mine.agent_settings_diff);
      // A diff the organization changed under (another agent_kind) is left out rather than failing every start.
      if (agent.success) [agent_settings, ownDiff] = [agent.data, mine.agent_settings_diff];
      const conversation = applyConversationDiff(conversation_settings, mine.conversation_settings_diff);
      if (conversation.success) conversation_settings = conversation.data;
    }
    const chosen = profile ? await this.profile(userId, profile) : null;
    if (chosen) {
      const withProfile = applyAgentDiff(org.agent_settings, { ...ownDiff, llm: chosen.llm });
      if (!withProfile.success || withProfile.data.agent_kind === 'acp') {
        throw new Conflict(
          `The LLM profile ${chosen.name} does not fit your agent settings (${withProfile.success ? 'your agent is an ACP agent, which takes no LLM' : withProfile.error.issues[0]?.message})`,
        );
      }
      agent_settings = withProfile.data;
    }
    const open = openSecrets({ agent_settings, conversation_settings }, this.deps.box);
    const providers = await this.deps.userSecrets.providerTokens(userId);
    return {
      organization_id: org.id,
      agent_settings: open.agent_settings,
      conversation_settings: open.conversation_settings,
      secrets: {
        ...(await this.deps.userSecrets.all(userId)),
        ...Object.fromEntries(Object.entries(providers).map(([p, t]) => [providerTokenName(p), t.token])),
        ...requestSecrets,
      },
      launched_agent_profile: chosen ? { agent_profile_id: chosen.id, revision: chosen.revision } : null,
    };
  }
}
