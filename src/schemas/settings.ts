/**
 * The user-facing settings surface, with the paths, parameters and bodies of the published OpenHands
 * Cloud API 0.0.1 where SPEC.md is silent (SPEC.md's neutral names win: git providers are git_host_a..f
 * and enterprise_sso). Secrets, git provider tokens, the user's settings over the organization's, the
 * model catalogue and what a web client needs at boot.
 */
import { z } from 'zod';
import { GIT_PROVIDERS, GitProviderSchema } from './app-conversations';
import { AgentSettingsDiffSchema, ConversationSettingsDiffSchema, ConversationSettingsSchema } from './organizations';
import { SECRET_MASK } from './secret-mask';
import { ENV_VAR_NAME } from './common';

export { GIT_PROVIDERS };
export type GitProvider = (typeof GIT_PROVIDERS)[number];

/** Limits of what a user may store (every input is bounded). */
export const SECRET_LIMITS = {
  /** Characters of a secret's name. */
  nameChars: 200,
  /** Characters of a description. */
  descriptionChars: 1000,
  /** Bytes (UTF-8) of a secret's value or a provider token. */
  valueBytes: 64 * 1024,
  /** Custom secrets per user. */
  perUser: 200,
  /** Bytes of the JSON of each stored settings diff (agent, conversation). */
  diffBytes: 256 * 1024,
} as const;

/** A name a start can export as an environment variable. */

export const SecretNameSchema = z
  .string()
  .min(1)
  .max(SECRET_LIMITS.nameChars)
  .superRefine((v, ctx) => {
    if (!ENV_VAR_NAME.test(v)) {
      ctx.addIssue({
        code: 'custom',
        message:
          'A secret name must be an environment variable name: letters, digits and _, not starting with a digit (such as DEPLOY_TOKEN)',
        params: { type: 'value_error', ctx: { pattern: ENV_VAR_NAME.source } },
      });
    }
  })
  .meta({
    description: 'An environment variable name: letters, digits and _, not starting with a digit.',
    pattern: ENV_VAR_NAME.source,
  });

const secretValue = (nonEmpty = false) =>
  (nonEmpty ? z.string().min(1, { error: 'A secret value must not be empty' }) : z.string())
    .refine((v) => Buffer.byteLength(v, 'utf8') <= SECRET_LIMITS.valueBytes, {
      error: `A secret value holds at most ${SECRET_LIMITS.valueBytes} bytes`,
    })
    .meta({ format: 'password', writeOnly: true });

const description = () => z.string().max(SECRET_LIMITS.descriptionChars).nullable().optional();

/** POST /api/v1/secrets: creates the secret, or overwrites one of the same name. */
export const CustomSecretCreateSchema = z
  .strictObject({
    name: SecretNameSchema,
    description: description(),
    value: secretValue(true),
  })
  .meta({ id: 'CustomSecretCreate', description: 'Custom secret model with value (for creating secrets).' });

/** PUT /api/v1/secrets/{secret_id}: a new name and/or description; the value stays. */
export const CustomSecretUpdateSchema = z
  .strictObject({ name: SecretNameSchema, description: description() })
  .meta({ id: 'CustomSecretWithoutValue', description: 'Custom secret model without value (for listing secrets).' });

/** How a secret is listed: never its value. */
export const CustomSecretViewSchema = z
  .object({
    name: z.string(),
    description: z.string().nullable(),
    created_at: z.iso.datetime(),
    updated_at: z.iso.datetime(),
  })
  .meta({
    id: 'CustomSecretView',
    description: 'A stored secret as listed: its name, description and dates, never its value.',
  });

export const CustomSecretPageSchema = z
  .object({ items: z.array(CustomSecretViewSchema), next_page_id: z.string().nullable() })
  .meta({ id: 'CustomSecretPage', description: 'Paginated response for custom secrets search.' });

export const EditResponseSchema = z
  .object({ message: z.string() })
  .meta({ id: 'EditResponse', description: 'General response to an edit operation' });

export const SecretIdParamsSchema = z.object({
  secret_id: z.string().min(1).max(SECRET_LIMITS.nameChars).meta({ description: "The secret's name." }),
});

export const ProviderTokenSchema = z
  .strictObject({
    token: secretValue()
      .nullable()
      .optional()
      .meta({ description: `The token; null, "" or "${SECRET_MASK}" keeps the stored one.` }),
    user_id: z.string().max(200).nullable().optional(),
    host: z
      .string()
      .max(255)
      .regex(/^[A-Za-z0-9.-]+(:\d{1,5})?$/, { error: 'A host name, optionally with a port (git.example.com:8443)' })
      .nullable()
      .optional(),
  })
  .meta({ id: 'ProviderToken' });

/** POST /api/v1/secrets/git-providers. */
export const ProviderTokensRequestSchema = z
  .strictObject({
    mcp_config: z.null().optional().meta({
      description:
        'Not stored here: set tool-server config with POST /api/v1/settings (agent_settings_diff.mcp_config).',
    }),
    provider_tokens: z
      .partialRecord(GitProviderSchema, ProviderTokenSchema)
      .meta({ propertyNames: { enum: [...GIT_PROVIDERS] } })
      .default({}),
  })
  .meta({ id: 'POSTProviderModel', description: 'Git provider tokens to store; providers not named keep theirs.' });

/** Query of GET /api/v1/secrets/search (as published). */
export const SecretSearchQuerySchema = z.object({
  name__contains: z
    .string()
    .max(SECRET_LIMITS.nameChars)
    .optional()
    .meta({ description: 'Filter by name containing this string.' }),
});

/** Keys of POST /api/v1/settings that the published API no longer takes (the nested settings objects). */
export const LEGACY_SETTINGS_KEYS = ['agent_settings', 'conversation_settings'] as const;

/** POST /api/v1/settings: a partial payload; the diffs are deep-merged into what the user stored. */
export const SettingsUpdateSchema = z
  .strictObject({
    agent_settings_diff: AgentSettingsDiffSchema.nullable()
      .optional()
      .meta({ description: "Merged into the user's agent settings (over the organization's)." }),
    conversation_settings_diff: ConversationSettingsDiffSchema.nullable()
      .optional()
      .meta({ description: "Merged into the user's conversation settings." }),
    llm_api_key: z
      .string()
      .max(SECRET_LIMITS.valueBytes)
      .nullable()
      .optional()
      .meta({
        description: `The user's LLM key; "${SECRET_MASK}" keeps it, "" removes it (the organization's applies).`,
        writeOnly: true,
      }),
    language: z.string().max(35).nullable().optional(),
    git_user_name: z.string().max(200).nullable().optional(),
    git_user_email: z.string().max(320).nullable().optional(),
    enable_sound_notifications: z.boolean().nullable().optional(),
    user_consents_to_analytics: z.boolean().nullable().optional(),
    ...Object.fromEntries(
      LEGACY_SETTINGS_KEYS.map((k) => [
        k,
        z
          .unknown()
          .refine(() => false, {
            error: `Legacy nested settings keys are not accepted: send ${k}_diff (merged into what is stored)`,
          })
          // No value is accepted, null neither: the document says so with `not: {}`.
          .meta({ not: {} })
          .optional()
          .meta({ description: `Not accepted: send ${k}_diff.`, deprecated: true }),
      ]),
    ),
  })
  .meta({ id: 'SettingsUpdate', description: 'Fields to change; null or absent leaves a field as it is.' });
export type SettingsUpdate = z.output<typeof SettingsUpdateSchema>;

export const ProviderTokensSetSchema = z
  .partialRecord(GitProviderSchema, z.string().nullable())
  .meta({ description: 'Providers with a stored token, each with its host (null: the default).' });

/** GET /api/v1/settings (the published GETSettingsModel, with the fields that mean something here). */
export const SettingsViewSchema = z
  .object({
    language: z.string().nullable(),
    user_version: z.number().int().nullable(),
    remote_runtime_resource_factor: z.number().int().nullable(),
    enable_sound_notifications: z.boolean(),
    enable_proactive_conversation_starters: z.boolean(),
    user_consents_to_analytics: z.boolean().nullable(),
    sandbox_base_container_image: z.string().nullable(),
    sandbox_runtime_container_image: z.string().nullable(),
    disabled_skills: z.array(z.string()).nullable(),
    max_budget_per_task: z.number().nullable(),
    email: z.string().nullable(),
    git_user_name: z.string().nullable(),
    git_user_email: z.string().nullable(),
    v1_enabled: z.boolean(),
    agent_settings: z.record(z.string(), z.unknown()).meta({
      description: `The effective agent settings: the user's over the organization's; secrets shown as "${SECRET_MASK}".`,
    }),
    conversation_settings: ConversationSettingsSchema,
    provider_tokens_set: ProviderTokensSetSchema,
    llm_api_key_set: z.boolean(),
    search_api_key_set: z.boolean(),
    organization_id: z.string(),
  })
  .meta({ id: 'GETSettingsModel', description: "The user's settings over the active organization's." });
export type SettingsView = z.infer<typeof SettingsViewSchema>;

/** A JSON Schema document (what the two schema routes answer). */
export const JsonSchemaDocumentSchema = z
  .record(z.string(), z.unknown())
  .meta({ id: 'JsonSchemaDocument', description: 'A JSON Schema (draft 2020-12).' });

// ---- models ----

export const LLMModelSchema = z
  .object({
    provider: z.string().nullable(),
    name: z.string(),
    verified: z.boolean(),
    hidden: z.boolean(),
    canonical: z.string().nullable(),
  })
  .meta({ id: 'LLMModel', description: 'LLM Model object for API responses.' });
export type LLMModel = z.infer<typeof LLMModelSchema>;

export const LLMModelPageSchema = z
  .object({ items: z.array(LLMModelSchema), next_page_id: z.string().nullable() })
  .meta({ id: 'LLMModelPage' });

export const LLMProviderSchema = z
  .object({ name: z.string(), verified: z.boolean() })
  .meta({ id: 'Provider', description: 'LLM Provider object for API responses.' });
export const LLMProviderPageSchema = z
  .object({ items: z.array(LLMProviderSchema), next_page_id: z.string().nullable() })
  .meta({ id: 'ProviderPage' });

/** One entry of LLM_MODELS_FILE: "provider/name" or an object. */
export const ModelFileEntrySchema = z.union([
  z.string().min(1).max(300),
  z.strictObject({
    provider: z.string().min(1).max(100).nullable().optional(),
    name: z.string().min(1).max(300),
    verified: z.boolean().optional(),
    hidden: z.boolean().optional(),
    canonical: z.string().max(300).nullable().optional(),
  }),
]);
export const ModelFileSchema = z.array(ModelFileEntrySchema).max(10_000);

/** `true`/`false` in a query string, as FastAPI reads a bool. */
export const queryBool = () =>
  z
    .string()
    .transform((v, ctx) => {
      const s = v.trim().toLowerCase();
      if (['true', '1', 'yes', 'on'].includes(s)) return true;
      if (['false', '0', 'no', 'off'].includes(s)) return false;
      ctx.addIssue({
        code: 'custom',
        message: 'Input should be a valid boolean, unable to interpret input',
        params: { type: 'bool_parsing' },
      });
      return z.NEVER;
    })
    .optional()
    .meta({ type: 'boolean' });

// ---- users/me and the web client ----

export const PERMISSIONS = [
  'view_organization',
  'switch_organization',
  'edit_organization_settings',
  'manage_own_settings',
  'manage_own_secrets',
  'manage_own_api_keys',
  'start_conversations',
] as const;

export const WebClientConfigSchema = z
  .object({
    kind: z.literal('WebClientConfig'),
    app_mode: z.enum(['oss', 'saas']),
    auth_mode: z
      .literal('api_key')
      .meta({ description: 'Every /api route takes an API key in X-Access-Token; there is no login page.' }),
    feature_flags: z.object({
      enable_billing: z.boolean(),
      hide_llm_settings: z.boolean(),
      hide_users_page: z.boolean(),
      hide_billing_page: z.boolean(),
      hide_integrations_page: z.boolean(),
      hide_personal_workspaces: z.boolean(),
      allow_user_llm_configuration: z.boolean(),
      enable_acp: z.boolean(),
      deployment_mode: z.enum(['cloud', 'self_hosted']).nullable(),
      enable_onboarding: z.boolean(),
      enable_automations: z.boolean(),
    }),
    providers_configured: z.array(GitProviderSchema),
    maintenance_start_time: z.iso.datetime().nullable(),
    auth_url: z.string().nullable(),
    recaptcha_site_key: z.string().nullable(),
    analytics_client_key: z.string().nullable(),
    git_host_a_app_slug: z.string().nullable(),
    faulty_models: z.array(z.string()),
    error_message: z.string().nullable(),
    updated_at: z.iso.datetime(),
    provider_default_hosts: z.partialRecord(GitProviderSchema, z.string()),
    limits: z.object({
      max_body_bytes: z.number().int(),
      secret_value_bytes: z.number().int(),
      secrets_per_user: z.number().int(),
      page_limit: z.number().int(),
    }),
  })
  .meta({ id: 'WebClientConfig', description: 'What a web client needs at boot.' });
export type WebClientConfig = z.infer<typeof WebClientConfigSchema>;
