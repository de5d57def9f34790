/**
 * What a start copies from storage (SPEC 2.4): the effective settings of the user's active organization,
 * with its secrets in the clear, and the user's stored secrets with the request's merged over them
 * (the request wins on equal names, silently).
 */
import type { SecretBox } from '../auth/secret-box';
import type { AgentSettings, ConversationSettings } from '../schemas/organizations';
import type { OrganizationsStore } from '../store/organizations-store';
import type { UserSecretsStore } from '../store/user-secrets-store';
import type { UsersStore } from '../store/users-store';
import { openSecrets } from './organization-secrets';

export interface StartSettings {
  organization_id: string;
  agent_settings: AgentSettings;
  conversation_settings: ConversationSettings;
  secrets: Record<string, string>;
}

export class StartSettingsResolver {
  constructor(
    private readonly deps: { users: UsersStore; organizations: OrganizationsStore; userSecrets: UserSecretsStore; box: SecretBox },
  ) {}

  async resolve(userId: string, requestSecrets: Record<string, string> = {}): Promise<StartSettings> {
    const user = await this.deps.users.get(userId);
    if (!user?.current_org_id) throw new Error(`user ${userId} has no active organization`);
    const org = await this.deps.organizations.get(user.current_org_id);
    if (!org) throw new Error(`the active organization ${user.current_org_id} of user ${userId} does not exist`);
    const open = openSecrets(org, this.deps.box);
    return {
      organization_id: org.id,
      agent_settings: open.agent_settings,
      conversation_settings: open.conversation_settings,
      secrets: { ...(await this.deps.userSecrets.all(userId)), ...requestSecrets },
    };
  }
}
