/** What GET /api/v1/web-client/config answers: made once from the configuration at api start-up. */
import type { Config } from '../config';
import { SECRET_LIMITS, type WebClientConfig } from '../schemas/settings';

export function webClientConfig(
  config: Pick<Config, 'starts' | 'limits'>,
  startedAt: Date = new Date(),
): WebClientConfig {
  let cloneHost: string | undefined;
  try {
    cloneHost = new URL(config.starts.gitCloneBaseUrl).host;
  } catch {
    cloneHost = undefined;
  }
  return {
    kind: 'WebClientConfig',
    app_mode: 'saas',
    auth_mode: 'api_key',
    feature_flags: {
      enable_billing: false,
      hide_llm_settings: false,
      hide_users_page: true,
      hide_billing_page: true,
      hide_integrations_page: false,
      hide_personal_workspaces: false,
      allow_user_llm_configuration: true,
      enable_acp: true,
      deployment_mode: 'self_hosted',
      enable_onboarding: false,
      enable_automations: false,
    },
    // Starts clone `owner/repo` from GIT_CLONE_BASE_URL and post summaries to git host A.
    providers_configured: ['git_host_a'],
    maintenance_start_time: null,
    auth_url: null,
    recaptcha_site_key: null,
    analytics_client_key: null,
    git_host_a_app_slug: null,
    faulty_models: [],
    error_message: null,
    updated_at: startedAt.toISOString(),
    provider_default_hosts: cloneHost ? { git_host_a: cloneHost } : {},
    limits: {
      max_body_bytes: config.limits.maxBodyBytes,
      secret_value_bytes: SECRET_LIMITS.valueBytes,
      secrets_per_user: SECRET_LIMITS.perUser,
      page_limit: 100,
    },
  };
}
