/**
 * How a user's settings are shown: GET /api/v1/settings' view and GET /api/v1/users/me's summary, secrets
 * masked, and the permissions each role is listed with.
 */
import { ConversationSettingsSchema, type Organization, type Role } from '../schemas/organizations';
import { PERMISSIONS, type SettingsView } from '../schemas/settings';
import type { ProviderTokenInfo } from '../store/user-secrets-store';
import type { UserSettings } from '../store/user-settings-store';
import type { User } from '../store/users-store';
import { maskSecrets } from './organization-secrets';
import type { EffectiveSettings } from './user-settings-diffs';

type Json = Record<string, unknown>;

/** Permissions of each role, as users/me lists them. */
export function permissionsOf(role: Role | null): string[] {
  if (!role) return [];
  const all = [...PERMISSIONS];
  return role === 'member' ? all.filter((p) => p !== 'edit_organization_settings') : all;
}

/** The effective agent settings with every secret masked. */
const maskedAgentSettings = (agent: EffectiveSettings['agent']): Json =>
  maskSecrets({ agent_settings: agent }).agent_settings as unknown as Json;

/** GET /api/v1/settings' answer: the user's settings over their active organization's, and which secrets are set. */
export function settingsView(
  user: User,
  org: Organization,
  s: UserSettings,
  { agent, conversation }: EffectiveSettings,
  providers: Record<string, ProviderTokenInfo>,
): SettingsView {
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
    agent_settings: maskedAgentSettings(agent),
    conversation_settings: conversation,
    provider_tokens_set: Object.fromEntries(Object.entries(providers).map(([p, i]) => [p, i.host])),
    llm_api_key_set: typeof llm?.api_key === 'string' && llm.api_key !== '',
    search_api_key_set: org.search_api_key !== '',
    organization_id: org.id,
  };
}

/** GET /api/v1/users/me's answer: the user, their active organization (if any) and role there, and a settings summary. */
export function meView(
  user: User,
  org: Organization | null,
  role: Role | null,
  s: UserSettings,
  effective: EffectiveSettings | null,
) {
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
    agent_settings: effective ? maskedAgentSettings(effective.agent) : {},
    conversation_settings: effective?.conversation ?? ConversationSettingsSchema.parse({}),
  };
}
