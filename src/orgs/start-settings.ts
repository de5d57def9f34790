/**
 * What a start copies from storage (SPEC 2.4): the effective settings of the user's active organization
 * (the user's own settings laid over it), with its secrets in the clear, and the user's stored secrets
 * with the request's merged over them (the request wins on equal names, silently). Git provider tokens
 * arrive as `<PROVIDER>_TOKEN` (GIT_HOST_A_TOKEN, ...), over a custom secret of the same name.
 */
import type { SecretBox } from '../auth/secret-box';
import type { AgentSettings, ConversationSettings } from '../schemas/organizations';
import type { OrganizationsStore } from '../store/organizations-store';
import type { UserSecretsStore } from '../store/user-secrets-store';
import type { UserSettingsStore } from '../store/user-settings-store';
import type { UsersStore } from '../store/users-store';
import { openSecrets } from './organization-secrets';
import { applyAgentDiff, applyConversationDiff } from './user-settings-service';

export interface StartSettings {
  organization_id: string;
  agent_settings: AgentSettings;
  conversation_settings: ConversationSettings;
  secrets: Record<string, string>;
}

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
    },
  ) {}

  async resolve(userId: string, requestSecrets: Record<string, string> = {}): Promise<StartSettings> {
    const user = await this.deps.users.get(userId);
    if (!user?.current_org_id) throw new Error(`user ${userId} has no active organization`);
    const org = await this.deps.organizations.get(user.current_org_id);
    if (!org) throw new Error(`the active organization ${user.current_org_id} of user ${userId} does not exist`);
    let { agent_settings, conversation_settings } = org;
    if (this.deps.userSettings) {
      const mine = await this.deps.userSettings.get(userId);
      const agent = applyAgentDiff(agent_settings, mine.agent_settings_diff);
      // A diff the organization changed under (another agent_kind) is left out rather than failing every start.
      if (agent.success) agent_settings = agent.data;
      const conversation = applyConversationDiff(conversation_settings, mine.conversation_settings_diff);
      if (conversation.success) conversation_settings = conversation.data;
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
    };
  }
}
