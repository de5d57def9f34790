/**
 * Organizations (SPEC 2.6) and their settings. The spec names the fields but not their allowed values;
 * the bounds here are the sensible ones (temperature 0..2, top_p 0..1, positive counts) and appear in
 * the OpenAPI description. Secret fields are encrypted at rest and masked in every response.
 */
import { z } from 'zod';
import { SECRET_MASK } from './secret-mask';

// Re-exported: the organization API is where the mask is a contract, and its tests import it from here.
export { SECRET_MASK };

const nonNegative = () => z.number().gte(0);
const positiveInt = () => z.number().int().gt(0);
// Not writeOnly: answers carry the field, masked.
const secret = (description: string) =>
  z.string().meta({ description: `${description} Secret: encrypted at rest, answered as "${SECRET_MASK}".` });

export const LLMSettingsSchema = z
  .strictObject({
    is_subscription: z.boolean(),
    model: z.string(),
    api_key: secret('LLM API key.'),
    auth_type: z.enum(['api_key', 'subscription']),
    subscription_vendor: z.string(),
    base_url: z.string(),
    api_version: z.string(),
    cloud_access_key_id: secret('Cloud access key id.'),
    cloud_secret_access_key: secret('Cloud secret access key.'),
    cloud_session_token: secret('Cloud session token.'),
    cloud_region_name: z.string(),
    cloud_profile_name: z.string(),
    cloud_role_name: z.string(),
    cloud_session_name: z.string(),
    cloud_bedrock_runtime_endpoint: z.string(),
    router_site_url: z.string(),
    router_app_name: z.string(),
    num_retries: z.number().int().gte(0),
    retry_multiplier: nonNegative(),
    retry_min_wait: nonNegative(),
    retry_max_wait: nonNegative(),
    timeout: z.number().gt(0),
    max_message_chars: positiveInt(),
    temperature: z.number().gte(0).lte(2),
    top_p: z.number().gte(0).lte(1),
    top_k: nonNegative(),
    max_input_tokens: positiveInt(),
    max_output_tokens: positiveInt(),
    model_canonical_name: z.string(),
    api_mode: z.enum(['auto', 'chat', 'responses']),
    capability_overrides: z.record(z.string(), z.unknown()),
    extra_headers: z.record(z.string(), z.string()),
    input_cost_per_token: nonNegative(),
    output_cost_per_token: nonNegative(),
    local_model_base_url: z.string(),
    stream: z.boolean(),
    drop_params: z.boolean(),
    modify_params: z.boolean(),
    disable_vision: z.boolean(),
    disable_stop_word: z.boolean(),
    caching_prompt: z.boolean(),
    log_completions: z.boolean(),
    log_completions_folder: z.string(),
    custom_tokenizer: z.string(),
    native_tool_calling: z.boolean(),
    force_string_serializer: z.boolean(),
    inline_image_urls: z.boolean(),
    reasoning_effort: z.enum(['low', 'medium', 'high', 'xhigh', 'none']),
    reasoning_summary: z.enum(['auto', 'concise', 'detailed']),
    enable_encrypted_reasoning: z.boolean(),
    prompt_cache_retention: z.string(),
    extended_thinking_budget: z.number().int().gte(0),
    seed: z.number().int(),
    usage_id: z.string(),
    gateway_extra_body: z.record(z.string(), z.unknown()),
  })
  .partial()
  .meta({ id: 'LLMSettings' });

export const SkillSchema = z
  .object({
    name: z.string(),
    content: z.string().optional(),
    source: z.string().optional(),
    version: z.string().optional(),
    description: z.string().optional(),
    license: z.string().optional(),
    compatibility: z.string().optional(),
    trigger: z.object({ type: z.string(), keywords: z.array(z.string()).default([]) }).optional(),
    mcp_tools: z.record(z.string(), z.unknown()).optional(),
    inputs: z.array(z.object({ name: z.string(), description: z.string().optional() })).optional(),
    is_agentskills_format: z.boolean().optional(),
    metadata: z.record(z.string(), z.unknown()).optional(),
    allowed_tools: z.array(z.string()).optional(),
    disable_model_invocation: z.boolean().optional(),
    resources: z
      .object({
        skill_root: z.string().optional(),
        scripts: z.array(z.string()).optional(),
        references: z.array(z.string()).optional(),
        assets: z.array(z.string()).optional(),
      })
      .optional(),
  })
  .meta({ id: 'Skill' });

export const AgentContextSchema = z
  .strictObject({
    skills: z.array(SkillSchema),
    system_message_suffix: z.string(),
    user_message_suffix: z.string(),
    load_user_skills: z.boolean(),
    load_public_skills: z.boolean(),
    marketplace_path: z.string(),
    registered_marketplaces: z.array(
      z.object({
        name: z.string(),
        source: z.string(),
        ref: z.string().optional(),
        repo_path: z.string().optional(),
        auto_load: z.boolean().optional(),
      }),
    ),
    load_project_skills: z.boolean(),
    load_memory: z.boolean(),
    disabled_skills: z.array(z.string()),
    secrets: z.record(z.string(), z.string()),
    current_datetime: z.iso.datetime({ offset: true }),
  })
  .partial()
  .meta({ id: 'AgentContext' });

export const CondenserSchema = z
  .strictObject({
    enabled: z.boolean(),
    max_size: positiveInt(),
    condenser_kind: z.string(),
    max_tokens: positiveInt(),
    keep_first: z.number().int().gte(0),
    minimum_progress: z.number().gte(0).lte(1),
    hard_context_reset_max_retries: z.number().int().gte(0),
    hard_context_reset_context_scaling: z.number().gt(0).lte(1),
  })
  .partial()
  .meta({ id: 'CondenserSettings' });

export const VerificationSchema = z
  .strictObject({
    critic_enabled: z.boolean(),
    critic_mode: z.string(),
    enable_iterative_refinement: z.boolean(),
    critic_threshold: z.number().gte(0).lte(1),
    max_refinement_iterations: z.number().int().gte(0),
    critic_server_url: z.string(),
    critic_model_name: z.string(),
    critic_api_key: secret('Critic API key.'),
  })
  .partial()
  .meta({ id: 'VerificationSettings' });

export const AGENT_KINDS = ['platform', 'llm', 'acp'] as const;

/** The standard variant: builds the default agent (LLM, tools, tool-server config, condenser, critic). */
export const PlatformAgentSettingsSchema = z
  .strictObject({
    schema_version: z.number().int().gte(1).default(1),
    agent_kind: z.literal('platform'),
    agent: z.string().default('CodeActAgent'),
    llm: LLMSettingsSchema.default({}),
    tools: z.array(z.object({ name: z.string(), params: z.record(z.string(), z.unknown()).default({}) })).default([]),
    enable_sub_agents: z.boolean().default(false),
    enable_switch_llm_tool: z.boolean().default(false),
    tool_concurrency_limit: positiveInt().default(1),
    mcp_config: z.record(z.string(), z.unknown()).default({}),
    agent_context: AgentContextSchema.default({}),
    condenser: CondenserSchema.default({}),
    verification: VerificationSchema.default({}),
  })
  .meta({ id: 'PlatformAgentSettings' });

/**
 * The llm variant: the published document's legacy name of the standard agent, with the same fields
 * (SPEC 2.6 lists them for the standard variant) and bounds; system_message_suffix is kept from before.
 */
export const LLMAgentSettingsSchema = PlatformAgentSettingsSchema.extend({
  agent_kind: z.literal('llm'),
  system_message_suffix: z.string().optional(),
}).meta({ id: 'LLMAgentSettings' });

/** An agent behind an external agent-protocol server (fields beyond these: not shown by the spec). */
export const ACPAgentSettingsSchema = z
  .strictObject({
    schema_version: z.number().int().gte(1).default(1),
    agent_kind: z.literal('acp'),
    acp_command: z.array(z.string()).default([]),
    acp_env: z.record(z.string(), z.string()).default({}),
  })
  .meta({ id: 'ACPAgentSettings' });

export const AgentSettingsSchema = z
  .discriminatedUnion('agent_kind', [PlatformAgentSettingsSchema, LLMAgentSettingsSchema, ACPAgentSettingsSchema])
  .meta({ id: 'AgentSettings' });

const AGENT_SETTINGS_VARIANTS = [PlatformAgentSettingsSchema, LLMAgentSettingsSchema, ACPAgentSettingsSchema];

/** A variant's fields as a diff may name them: each optional, without its default (agent_kind too). */
const variantDiff = (variant: (typeof AGENT_SETTINGS_VARIANTS)[number]) => {
  const shape = Object.fromEntries(
    Object.entries(variant.shape as Record<string, z.ZodType>).map(([k, f]) => [
      k,
      (f instanceof z.ZodDefault ? (f.unwrap() as z.ZodType) : f).optional(),
    ]),
  );
  return (
    z
      .looseObject(shape)
      // Closed as a strict object is, but a key of another variant ends the branch: zod's union then weighs
      // every variant's problems, instead of taking the one whose only problem is an unknown key (a strict
      // object's unknown key never ends its branch, so zod would answer with it alone).
      .superRefine((v, ctx) => {
        const unknown = Object.keys(v).filter((k) => !(k in shape));
        if (unknown.length > 0) ctx.addIssue({ code: 'unrecognized_keys', keys: unknown, input: v, continue: false });
      })
      .meta({ additionalProperties: false })
  );
};

/**
 * A diff deep-merged into AgentSettings (`agent_settings_diff` bodies): fields of one variant, each a value
 * that variant takes; a diff that mixes variants is refused (422). What the merge makes with the stored
 * settings is validated whole again: a diff that does not fit them (fields of another variant than the
 * stored one, without naming its agent_kind) is a conflict with them (409).
 */
export const AgentSettingsDiffSchema = z
  .union(
    AGENT_SETTINGS_VARIANTS.map(variantDiff) as [ReturnType<typeof variantDiff>, ...ReturnType<typeof variantDiff>[]],
  )
  .meta({
    id: 'AgentSettingsDiff',
    description: 'Fields of one AgentSettings variant to change, merged into what is stored.',
  });

export const ConversationSettingsSchema = z
  .strictObject({
    schema_version: z.number().int().gte(1).default(1),
    max_iterations: positiveInt().lte(10_000).default(100),
    confirmation_mode: z.boolean().default(false),
    security_analyzer: z.string().default('none'),
  })
  .meta({ id: 'ConversationSettings' });

/**
 * A diff of ConversationSettings (`*_diff` bodies): only its fields, each a value of the field's type; what
 * the merge makes is validated whole again.
 */
export const ConversationSettingsDiffSchema = z
  .strictObject(
    Object.fromEntries(
      Object.entries(ConversationSettingsSchema.shape).map(([k, field]) => [k, field.unwrap().optional()]),
    ) as {
      [K in keyof typeof ConversationSettingsSchema.shape]: z.ZodOptional<
        ReturnType<(typeof ConversationSettingsSchema.shape)[K]['unwrap']>
      >;
    },
  )
  .meta({
    id: 'ConversationSettingsDiff',
    description: 'Fields of ConversationSettings to change.',
  });

/** Fields an owner or admin may change (PATCH); the rest belong to the service (ids, billing, credits). */
export const OrganizationEditableSchema = z.strictObject({
  name: z.string().trim().min(1).max(200),
  contact_name: z.string().max(200),
  contact_email: z.string().max(320),
  conversation_expiration: z.number().int().gt(0).meta({ description: 'Seconds a conversation lives without use.' }),
  remote_runtime_resource_factor: z.number().int().gte(1).lte(16),
  enable_proactive_conversation_starters: z.boolean(),
  sandbox_base_container_image: z.string(),
  sandbox_runtime_container_image: z.string(),
  agent_settings: AgentSettingsSchema,
  conversation_settings: ConversationSettingsSchema,
  search_api_key: secret('Search API key.'),
  sandbox_api_key: secret('Sandbox API key.'),
  max_budget_per_task: z.number().gte(0),
  v1_enabled: z.boolean(),
});

/** What the published OrgUpdate body adds to the PATCH (sparse diffs merged into the stored settings). */
export const PUBLISHED_ORG_PATCH_FIELDS = {
  agent_settings_diff: AgentSettingsDiffSchema.nullable()
    .optional()
    .meta({ description: 'Merged into agent_settings (as agent_settings is); send one of the two.' }),
  conversation_settings_diff: ConversationSettingsDiffSchema.nullable()
    .optional()
    .meta({ description: 'Merged into conversation_settings; send one of the two.' }),
  llm_api_key: z
    .string()
    .max(65_536)
    .nullable()
    .optional()
    .meta({
      description: `Sets agent_settings.llm.api_key. Secret: encrypted at rest; "${SECRET_MASK}" keeps it.`,
      writeOnly: true,
    }),
};

export const OrganizationSchema = z
  .object({
    id: z.string().meta({ format: 'uuid' }),
    name: z.string(),
    contact_name: z.string(),
    contact_email: z.string(),
    conversation_expiration: z.number().int(),
    remote_runtime_resource_factor: z.number().int(),
    billing_margin: z.number(),
    enable_proactive_conversation_starters: z.boolean(),
    sandbox_base_container_image: z.string(),
    sandbox_runtime_container_image: z.string(),
    org_version: z.number().int(),
    agent_settings: AgentSettingsSchema,
    conversation_settings: ConversationSettingsSchema,
    search_api_key: z.string(),
    sandbox_api_key: z.string(),
    max_budget_per_task: z.number(),
    v1_enabled: z.boolean(),
    credits: z.number(),
    is_personal: z.boolean(),
  })
  .meta({ id: 'Organization' });

export type Organization = z.output<typeof OrganizationSchema>;
export type AgentSettings = z.output<typeof AgentSettingsSchema>;
export type LLMSettings = z.output<typeof LLMSettingsSchema>;
export type ConversationSettings = z.output<typeof ConversationSettingsSchema>;

export const ROLES = ['owner', 'admin', 'member'] as const;
export type Role = (typeof ROLES)[number];
