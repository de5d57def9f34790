/**
 * App conversations and their start tasks (SPEC 2.3, 2.4, 3.1): the start request with its enums and
 * callback processors, the echo of the request kept in the start task, the views, and the query
 * parameters of the search, count and batch-get endpoints.
 */
import { z } from 'zod';
import { pageIdParam } from './page-cursor';
import { dateTimeQuery, ENV_VAR_NAME, pageLimit, uuidString } from './common';
import { SendMessageRequestSchema } from './messages';
import { SECRET_MASK } from './secret-mask';
import { SandboxStatusSchema } from './sandboxes';

// ---- enums ----

/** SPEC 2.4: the first six are neutral stand-ins for code hosting providers. */
export const GIT_PROVIDERS = [
  'git_host_a',
  'git_host_b',
  'git_host_c',
  'git_host_d',
  'git_host_e',
  'git_host_f',
  'enterprise_sso',
] as const;
export const GitProviderSchema = z.enum(GIT_PROVIDERS).meta({ id: 'GitProvider' });
export type GitProvider = z.infer<typeof GitProviderSchema>;

export const TRIGGERS = [
  'resolver',
  'gui',
  'suggested_task',
  'platform_api',
  'chat',
  'microagent_management',
  'issue_tracker_a',
  'issue_tracker_b',
  'issue_tracker_c',
  'git_host_a',
  'automation',
] as const;
export const TriggerSchema = z.enum(TRIGGERS).meta({ id: 'ConversationTrigger' });
export type Trigger = z.infer<typeof TriggerSchema>;

export const AGENT_TYPES = ['default', 'plan'] as const;
export const AgentTypeSchema = z.enum(AGENT_TYPES).meta({ id: 'AgentType' });
export type AgentType = z.infer<typeof AgentTypeSchema>;

/** The reference service's task types (SPEC 2.4 names MERGE_CONFLICTS). */
export const SUGGESTED_TASK_TYPES = [
  'MERGE_CONFLICTS',
  'FAILING_CHECKS',
  'UNRESOLVED_COMMENTS',
  'OPEN_ISSUE',
  'OPEN_PR',
  'CREATE_MICROAGENT',
] as const;
export const SuggestedTaskTypeSchema = z.enum(SUGGESTED_TASK_TYPES).meta({ id: 'SuggestedTaskType' });
export type SuggestedTaskType = z.infer<typeof SuggestedTaskTypeSchema>;

/** SPEC 3.1; app_conversation_id, sandbox_id and agent_server_url are set once READY. */
export const START_TASK_STATUSES = [
  'WORKING',
  'WAITING_FOR_SANDBOX',
  'PREPARING_REPOSITORY',
  'RUNNING_SETUP_SCRIPT',
  'SETTING_UP_GIT_HOOKS',
  'SETTING_UP_SKILLS',
  'STARTING_CONVERSATION',
  'READY',
  'ERROR',
] as const;
export const StartTaskStatusSchema = z.enum(START_TASK_STATUSES).meta({ id: 'AppConversationStartTaskStatus' });
export type StartTaskStatus = z.infer<typeof StartTaskStatusSchema>;

/** The statuses a start ends in: nothing follows them. */
export const ENDED_START_STATUSES: readonly StartTaskStatus[] = ['READY', 'ERROR'];
/** Whether a start in `status` has ended. */
export const startEnded = (status: string | null | undefined): boolean =>
  (ENDED_START_STATUSES as readonly string[]).includes(status ?? '');

// ---- callback processors (SPEC 2.4) ----

export const CALLBACK_PROCESSOR_KINDS = [
  'GitHostAV1CallbackProcessor',
  'GitHostBV1CallbackProcessor',
  'GitHostCV1CallbackProcessor',
  'IssueTrackerAV1CallbackProcessor',
  'IssueTrackerBV1CallbackProcessor',
  'ChatV1CallbackProcessor',
  'LoggingCallbackProcessor',
  'SetTitleCallbackProcessor',
] as const;
export type CallbackProcessorKind = (typeof CALLBACK_PROCESSOR_KINDS)[number];

/** The most processors one start may register (each may reach a host when the agent finishes). */
export const MAX_PROCESSORS = 20;

/** What identifies the place a processor posts to (free-form, as published). */
const viewData = (description: string, properties: Record<string, object>) =>
  // The fields the processor reads, as the check below wants them, said in the document too; others are kept.
  z.record(z.string(), z.unknown()).default({}).meta({ description, properties });

/** A field of view data: a string `pattern` wants, a positive integer (`number`), or null (absent). */
const viewField = (pattern: RegExp, number?: { minimum: number }) => ({
  anyOf: [
    { type: 'string', pattern: pattern.source },
    ...(number ? [{ type: 'integer', minimum: number.minimum, maximum: Number.MAX_SAFE_INTEGER }] : []),
    { type: 'null' },
  ],
});

/**
 * The document's word for a processor whose `flag`, when true, needs `field` of its `view` data: the flag
 * false (or absent), or the view data with a non-null field.
 */
const needsWhenFlagged = (flag: string, view: string, field: string) => ({
  // Inside allOf: a bare anyOf beside the properties would read, to a client generator, as a union of its own.
  allOf: [
    {
      anyOf: [
        { properties: { [flag]: { const: false } } },
        {
          required: [view],
          properties: { [view]: { required: [field], properties: { [field]: { not: { type: 'null' } } } } },
        },
      ],
    },
  ],
});
const shouldRequestSummary = z.boolean().default(true).meta({
  description: 'When the agent finishes, ask it for a summary of its work and post it (once); false posts nothing.',
});
const issueKey = z
  .string()
  .regex(/^[A-Z][A-Z0-9_]*-\d+$/, { error: 'an issue key: a project key, a dash and a number (PROJ-123)' });
const processor = <K extends CallbackProcessorKind, S extends z.core.$ZodLooseShape>(
  kind: K,
  shape: S,
  description: string,
  check?: (p: Record<string, unknown>) => ViewProblem | null,
  doc: object = {},
) =>
  z
    .strictObject({ kind: z.literal(kind), ...shape })
    .superRefine((p, ctx) => {
      // What a post needs is checked when the start is asked for, not when the agent has finished.
      const problem = check?.(p as Record<string, unknown>);
      if (problem) ctx.addIssue({ code: 'custom', message: problem.message, path: problem.path });
    })
    .meta({ id: kind, description, ...doc });

type ViewProblem = { path: string[]; message: string };

/** A chat thread, as ChatV1CallbackProcessor names it: its channel and its first message's timestamp. */
const CHAT_CHANNEL_ID = /^[A-Za-z0-9]{1,40}$/;
const CHAT_THREAD_TS = /^\d{1,12}(\.\d{1,9})?$/;

/** owner/name (git host A, C) as the hosts write them: no path step such as `..`. */
export const REPOSITORY_NAME = /^(?!\.\.?\/)[A-Za-z0-9_.-]+\/(?!\.\.?$)[A-Za-z0-9_.-]+$/;

/** A view data field, when given, that is not what `test` wants: the problem. */
function viewProblem(
  view: unknown,
  field: string,
  test: (v: string) => boolean,
  what: string,
  required = false,
): ViewProblem | null {
  const v = (view as Record<string, unknown> | undefined)?.[field];
  if (v === undefined || v === null) return required ? { path: [field], message: `${field} is needed: ${what}` } : null;
  return (typeof v === 'string' || (typeof v === 'number' && Number.isSafeInteger(v))) && test(String(v))
    ? null
    : { path: [field], message: `${field} must be ${what}` };
}

const firstProblem = (view: string, ...problems: (ViewProblem | null)[]): ViewProblem | null => {
  const p = problems.find((x) => x !== null);
  return p ? { path: [view, ...p.path], message: p.message } : null;
};
const POSITIVE_INT = /^[1-9]\d{0,15}$/;
const positiveInt = (v: string) => POSITIVE_INT.test(v);
const PROJECT_PATH = /^[A-Za-z0-9_.-]+(\/[A-Za-z0-9_.-]+)+$/;
const DISCUSSION_ID = /^[0-9a-fA-F]{1,64}$/;

export const CallbackProcessorSchema = z
  .discriminatedUnion('kind', [
    processor(
      'GitHostAV1CallbackProcessor',
      {
        git_host_a_view_data: viewData(
          "The pull request: repo (owner/name) and pr_number; with inline_pr_comment, the review comment_id to reply to. Default: the start's repository and first pr_number.",
          {
            repo: viewField(REPOSITORY_NAME),
            full_name: viewField(REPOSITORY_NAME),
            pr_number: viewField(POSITIVE_INT, { minimum: 1 }),
            comment_id: viewField(POSITIVE_INT, { minimum: 1 }),
          },
        ),
        should_request_summary: shouldRequestSummary,
        inline_pr_comment: z
          .boolean()
          .default(false)
          .meta({ description: 'Reply in the review comment thread (comment_id) instead of on the pull request.' }),
      },
      "Posts the agent's summary to the originating pull request of git host A when the agent finishes.",
      (p) =>
        firstProblem(
          'git_host_a_view_data',
          viewProblem(p.git_host_a_view_data, 'repo', (v) => REPOSITORY_NAME.test(v), 'owner/name'),
          viewProblem(p.git_host_a_view_data, 'full_name', (v) => REPOSITORY_NAME.test(v), 'owner/name'),
          viewProblem(p.git_host_a_view_data, 'pr_number', positiveInt, 'a pull request number'),
          viewProblem(
            p.git_host_a_view_data,
            'comment_id',
            positiveInt,
            'the id of the review comment to reply to (inline_pr_comment)',
            p.inline_pr_comment === true,
          ),
        ),
      needsWhenFlagged('inline_pr_comment', 'git_host_a_view_data', 'comment_id'),
    ),
    processor(
      'GitHostBV1CallbackProcessor',
      {
        git_host_b_view_data: viewData(
          "The merge request: project_id (id or group/project path) and mr_iid; with inline_mr_comment, the discussion_id to reply in. Default: the start's repository and first pr_number.",
          {
            project_id: {
              anyOf: [
                ...viewField(POSITIVE_INT, { minimum: 1 }).anyOf,
                { type: 'string', pattern: PROJECT_PATH.source },
              ],
            },
            mr_iid: viewField(POSITIVE_INT, { minimum: 1 }),
            discussion_id: viewField(DISCUSSION_ID, { minimum: 0 }),
          },
        ),
        should_request_summary: shouldRequestSummary,
        inline_mr_comment: z.boolean().default(false).meta({
          description:
            'Reply in the merge request discussion (discussion_id) instead of as a note on the merge request.',
        }),
      },
      "Posts the agent's summary as a note on the originating merge request of git host B when the agent finishes.",
      (p) =>
        firstProblem(
          'git_host_b_view_data',
          viewProblem(
            p.git_host_b_view_data,
            'project_id',
            (v) => positiveInt(v) || PROJECT_PATH.test(v),
            'a project id or group/project path',
          ),
          viewProblem(p.git_host_b_view_data, 'mr_iid', positiveInt, 'a merge request iid'),
          viewProblem(
            p.git_host_b_view_data,
            'discussion_id',
            (v) => DISCUSSION_ID.test(v),
            'the id of the discussion to reply in (inline_mr_comment)',
            p.inline_mr_comment === true,
          ),
        ),
      needsWhenFlagged('inline_mr_comment', 'git_host_b_view_data', 'discussion_id'),
    ),
    processor(
      'GitHostCV1CallbackProcessor',
      {
        git_host_c_view_data: viewData(
          "The pull request: repo (workspace/repo_slug) and pr_id. Default: the start's repository and first pr_number.",
          { repo: viewField(REPOSITORY_NAME), pr_id: viewField(POSITIVE_INT, { minimum: 1 }) },
        ),
        should_request_summary: shouldRequestSummary,
      },
      "Posts the agent's summary as a comment on the originating pull request of git host C when the agent finishes.",
      (p) =>
        firstProblem(
          'git_host_c_view_data',
          viewProblem(p.git_host_c_view_data, 'repo', (v) => REPOSITORY_NAME.test(v), 'workspace/repo_slug'),
          viewProblem(p.git_host_c_view_data, 'pr_id', positiveInt, 'a pull request id'),
        ),
    ),
    processor(
      'IssueTrackerAV1CallbackProcessor',
      {
        should_request_summary: shouldRequestSummary,
        svc_acc_email: z.email({ error: "the service account's email address" }),
        issue_key: issueKey,
        issue_tracker_a_cloud_id: z
          .string()
          .regex(/^[A-Za-z0-9-]{1,100}$/, { error: 'the cloud site id (letters, digits and dashes)' }),
        decrypted_api_key: z
          .string()
          .optional()
          .superRefine((v, ctx) => {
            if (v === undefined) return;
            const message =
              "credentials are not taken in a request: store the service account's API key as the secret ISSUE_TRACKER_A_API_KEY (POST /api/v1/secrets)";
            ctx.addIssue({ code: 'custom', message, params: { withheld: true } });
          })
          // No value is accepted: the document says so with `not: {}`.
          .meta({ not: {}, description: 'Refused: the API key is the stored secret ISSUE_TRACKER_A_API_KEY.' }),
      },
      "Posts the agent's summary as a comment on the originating issue of issue tracker A's cloud site when the agent finishes.",
    ),
    processor(
      'IssueTrackerBV1CallbackProcessor',
      {
        should_request_summary: shouldRequestSummary,
        issue_key: issueKey,
        workspace_name: z.string().min(1).max(200),
        base_api_url: z.url({ protocol: /^https?$/, error: 'an absolute http(s) URL of the server' }),
      },
      "Posts the agent's summary as a comment on the originating issue of a self-hosted issue tracker B server (one of ISSUE_TRACKER_B_ORIGINS) when the agent finishes.",
    ),
    processor(
      'ChatV1CallbackProcessor',
      {
        chat_view_data: z.record(z.string(), z.string().nullable()).meta({
          description: 'The thread: channel_id and thread_ts.',
          // What the check below needs, said in the document too.
          required: ['channel_id', 'thread_ts'],
          properties: {
            channel_id: { type: 'string', pattern: CHAT_CHANNEL_ID.source },
            thread_ts: { type: 'string', pattern: CHAT_THREAD_TS.source },
          },
        }),
      },
      "Replies in the originating chat thread with the agent's summary when the agent finishes.",
      (p) =>
        firstProblem(
          'chat_view_data',
          viewProblem(p.chat_view_data, 'channel_id', (v) => CHAT_CHANNEL_ID.test(v), 'the channel id', true),
          viewProblem(
            p.chat_view_data,
            'thread_ts',
            (v) => CHAT_THREAD_TS.test(v),
            "the timestamp of the thread's first message",
            true,
          ),
        ),
    ),
    z
      .strictObject({
        kind: z.literal('LoggingCallbackProcessor'),
        level: z.enum(['debug', 'info', 'warning', 'error']).default('info'),
      })
      .meta({ id: 'LoggingCallbackProcessor' }),
    z.strictObject({ kind: z.literal('SetTitleCallbackProcessor') }).meta({ id: 'SetTitleCallbackProcessor' }),
  ])
  .meta({ id: 'CallbackProcessor' });
export type CallbackProcessor = z.output<typeof CallbackProcessorSchema>;

// ---- observability metadata: OpenTelemetry attribute values ----

/** Why `v` is not an OpenTelemetry attribute value, or null when it is one. */
function attributeProblem(v: unknown): string | null {
  const scalar = (x: unknown) => typeof x === 'string' || typeof x === 'number' || typeof x === 'boolean';
  if (scalar(v)) return null;
  if (!Array.isArray(v))
    return `a value is a string, number, boolean or a list of one of those, not ${v === null ? 'null' : typeof v}`;
  if (!v.every(scalar)) return 'a list may hold only strings, numbers or booleans (no null, object or list)';
  const types = [...new Set(v.map((x) => typeof x))];
  return types.length > 1 ? `a list must hold values of one type, found ${types.join(' and ')}` : null;
}

const attributeValue = z.preprocess(
  (v, ctx) => {
    const problem = attributeProblem(v);
    if (problem === null) return v;
    ctx.addIssue({ code: 'custom', message: problem, input: v });
    return z.NEVER;
  },
  z.union([z.string(), z.number(), z.boolean(), z.array(z.string()), z.array(z.number()), z.array(z.boolean())]),
);

export const ObservabilityMetadataSchema = z.record(z.string().min(1), attributeValue).meta({
  propertyNames: { type: 'string', minLength: 1 },
  description: 'Trace-level metadata: scalars (string, number, boolean) or homogeneous lists of one scalar type.',
});

// ---- the start request ----

const SPAN_NAME = /^[A-Za-z0-9._/ -]+$/;

/**
 * An optional field: absent, or null, which the reference service's clients send for a field they leave
 * out (its schema has anyOf[..., null] nearly everywhere). Both mean "not given"; the document shows
 * anyOf[the field's schema, null], as the reference's does. The object holding it drops the field
 * (`closed`), so a parsed request holds only what was given, and its defaults.
 */
const optional = <T extends z.ZodType>(schema: T) =>
  z
    .union([schema, z.null()])
    .optional()
    .transform((v) => v ?? undefined);
/** An optional field with a default, filled in when the field is absent or null. */
const withDefault = <T extends z.ZodType>(schema: T, fill: () => z.output<T>) =>
  z
    .union([schema, z.null()])
    .optional()
    .transform((v): z.output<T> => v ?? fill())
    .meta({ default: fill() });

/** A closed object (unknown fields refused) whose fields a null left undefined are dropped. */
const closed = <S extends z.ZodRawShape>(shape: S, meta: { id: string; description?: string }) =>
  z
    .strictObject(shape)
    .meta(meta)
    .transform((o) => Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as typeof o);

/**
 * The first message (the reference's SendMessageRequest): any of its roles, text and image content, and
 * `run` false unless asked, as published: a start whose message should set the agent going sends `run: true`.
 */
export const InitialMessageSchema = SendMessageRequestSchema;

const suggestedTaskShape = {
  git_provider: optional(GitProviderSchema),
  task_type: optional(SuggestedTaskTypeSchema),
  repo: optional(z.string()),
  issue_number: optional(z.number().int().gte(0)),
  title: optional(z.string()),
};
export const SuggestedTaskSchema = closed(suggestedTaskShape, { id: 'SuggestedTask' });

/** A repository: owner/repo, a URL or a path, never with credentials in it (they belong in `secrets`). */
const repositoryRef = (description: string) =>
  z
    .string()
    .min(1)
    .refine((v) => !/^[a-z][a-z0-9+.-]*:\/\/[^/@\s]*@/i.test(v), {
      error: 'Put no credentials in the URL: send the token in secrets (GIT_TOKEN or <GIT_PROVIDER>_TOKEN)',
    })
    .meta({ description });

export const PluginSchema = closed(
  {
    source: repositoryRef('A git repository (URL or path) holding the plugin.'),
    ref: optional(z.string()),
    repo_path: optional(z.string()),
    parameters: withDefault(z.record(z.string(), z.unknown()), () => ({})),
  },
  {
    id: 'PluginSpec',
    description: 'Loaded for the conversation; its skills and tool-server config are merged into the agent.',
  },
);

/** Every optional field takes null as "not given" (see `optional`); unknown fields are still refused. */
const startRequestShape = {
  sandbox_id: optional(z.string()).meta({ description: 'An existing sandbox to use.' }),
  conversation_id: optional(uuidString()),
  initial_message: optional(InitialMessageSchema),
  system_message_suffix: optional(z.string()),
  processors: withDefault(z.array(CallbackProcessorSchema).max(MAX_PROCESSORS), () => []),
  llm_model: optional(z.string()),
  agent_profile_id: optional(z.string()).meta({
    description:
      'The id of one of your saved LLM profiles (GET /api/v1/settings/profiles): its LLM replaces your agent_settings.llm for this conversation.',
  }),
  selected_repository: optional(repositoryRef('owner/repo, a URL or a local path.')),
  selected_branch: optional(z.string()),
  git_provider: optional(GitProviderSchema),
  suggested_task: optional(SuggestedTaskSchema),
  title: optional(z.string()),
  trigger: optional(TriggerSchema),
  pr_number: withDefault(z.array(z.number().int().gte(0)), () => []),
  parent_conversation_id: optional(uuidString()),
  agent_type: withDefault(AgentTypeSchema, () => 'default' as const),
  public: optional(z.boolean()),
  observability_metadata: optional(ObservabilityMetadataSchema),
  observability_tags: optional(z.array(z.string().min(1))).meta({
    description: 'Tags for the conversation root span.',
  }),
  observability_span_name: optional(
    z
      .string()
      .min(1)
      .max(100)
      .regex(SPAN_NAME, { error: 'a stable, low-cardinality name: letters, digits, ".", "_", "-", "/" and spaces' }),
  ).meta({ description: 'A named child span under the root span.' }),
  plugins: optional(z.array(PluginSchema)),
  secrets: withDefault(
    z
      .record(
        z.string().regex(ENV_VAR_NAME, { error: 'a secret name: letters, digits and "_", not starting with a digit' }),
        z.string(),
      )
      .meta({ propertyNames: { type: 'string', pattern: ENV_VAR_NAME.source } }),
    () => ({}),
  ).meta({
    description: 'Merged over the stored secrets; a request secret wins on an equal name.',
    writeOnly: true,
  }),
};

export const StartRequestSchema = closed(startRequestShape, { id: 'AppConversationStartRequest' });
export type StartRequest = z.output<typeof StartRequestSchema>;

/** The request as the start task keeps and shows it (SPEC 2.3): defaults and filled-in fields present, secrets masked. */
export const EchoedStartRequestSchema = z
  .strictObject({
    ...startRequestShape,
    processors: z.array(CallbackProcessorSchema),
    pr_number: z.array(z.number().int()),
    agent_type: AgentTypeSchema,
    // A union with null, not .nullable(): the document then shows anyOf[$ref, null] (.nullable() of a
    // named schema comes out as the bare $ref).
    git_provider: z.union([GitProviderSchema, z.null()]),
    trigger: z.union([TriggerSchema, z.null()]),
    suggested_task: z
      .strictObject({
        ...suggestedTaskShape,
        git_provider: z.union([GitProviderSchema, z.null()]),
        task_type: z.union([SuggestedTaskTypeSchema, z.null()]),
      })
      .optional(),
    secrets: z.record(z.string(), z.string()).meta({ description: `Secret names; every value is "${SECRET_MASK}".` }),
  })
  .meta({ id: 'AppConversationStartRequestEcho' });
export type EchoedStartRequest = z.output<typeof EchoedStartRequestSchema>;

/** The echo of a parsed request: git_provider and trigger filled in (trigger defaults to platform_api), secret values masked. */
export function echoRequest(req: StartRequest): EchoedStartRequest {
  const { suggested_task: task, ...rest } = req;
  return {
    ...rest,
    git_provider: req.git_provider ?? null,
    trigger: req.trigger ?? 'platform_api',
    ...(task
      ? { suggested_task: { ...task, git_provider: task.git_provider ?? null, task_type: task.task_type ?? null } }
      : {}),
    secrets: Object.fromEntries(Object.keys(req.secrets).map((name) => [name, SECRET_MASK])),
  };
}

// ---- views ----

const nullableString = (description?: string) =>
  z
    .string()
    .nullable()
    .meta(description ? { description } : {});

export const StartTaskSchema = z
  .object({
    id: z.string(),
    created_by_user_id: z.string(),
    status: StartTaskStatusSchema,
    detail: nullableString('What the task is doing, or why it failed.'),
    request: EchoedStartRequestSchema,
    app_conversation_id: nullableString('Set once READY.'),
    sandbox_id: nullableString('Set once READY.'),
    agent_server_url: nullableString('Set once READY.'),
    created_at: z.iso.datetime(),
    updated_at: z.iso.datetime(),
  })
  .meta({ id: 'AppConversationStartTask' });
export type StartTask = z.output<typeof StartTaskSchema>;

export const StartTaskPageSchema = z
  .object({ items: z.array(StartTaskSchema), next_page_id: z.string().nullable() })
  .meta({ id: 'AppConversationStartTaskPage' });

/** The reference's execution states of a conversation's agent. */
export const ConversationExecutionStatusSchema = z
  .enum(['idle', 'running', 'paused', 'waiting_for_confirmation', 'finished', 'error', 'stuck', 'deleting'])
  .meta({ id: 'ConversationExecutionStatus' });

export const TokenUsageSchema = z
  .object({
    model: z.string(),
    prompt_tokens: z.number().int().gte(0),
    completion_tokens: z.number().int().gte(0),
    cache_read_tokens: z.number().int().gte(0),
    cache_write_tokens: z.number().int().gte(0),
    reasoning_tokens: z.number().int().gte(0),
    context_window: z.number().int().gte(0),
    per_turn_token: z.number().int().gte(0),
    response_id: z.string(),
  })
  .meta({ id: 'TokenUsage' });

export const MetricsSnapshotSchema = z
  .object({
    model_name: z.string(),
    accumulated_cost: z.number().gte(0),
    max_budget_per_task: z.number().nullable(),
    accumulated_token_usage: TokenUsageSchema.nullable(),
  })
  .meta({ id: 'MetricsSnapshot' });
export type MetricsSnapshot = z.output<typeof MetricsSnapshotSchema>;

/** The published LaunchedAgentProfile: which agent profile, at which revision, launched a conversation. */
export const LaunchedAgentProfileSchema = z
  .object({ agent_profile_id: z.uuid(), revision: z.number().int().min(0) })
  .meta({ id: 'LaunchedAgentProfile' });

export const AppConversationSchema = z
  .object({
    id: z.string(),
    created_by_user_id: z.string(),
    sandbox_id: nullableString(),
    title: nullableString(),
    selected_repository: nullableString(),
    selected_branch: nullableString(),
    git_provider: GitProviderSchema.nullable(),
    trigger: TriggerSchema.nullable(),
    agent_server_url: nullableString(),
    start_task_id: nullableString('The start task that started it.'),
    llm_model: nullableString('The model its agent was started with.'),
    public: z.boolean().nullable(),
    pr_number: z.array(z.number().int()),
    tags: z.record(z.string(), z.string()),
    parent_conversation_id: nullableString(),
    sub_conversation_ids: z
      .array(z.string())
      .meta({ description: 'Conversations started with this one as their parent.' }),
    sandbox_status: SandboxStatusSchema.meta({ description: 'The sandbox as it is now; MISSING when it is gone.' }),
    execution_status: ConversationExecutionStatusSchema.nullable().meta({
      description:
        'What its agent last reported (ConversationStateUpdateEvent), or the runtime itself after a run control.',
    }),
    metrics: MetricsSnapshotSchema.nullable().meta({
      description: 'Tokens and cost so far, as the runtime last reported them.',
    }),
    conversation_url: nullableString("The conversation on the sandbox's agent server (while it runs)."),
    session_api_key: nullableString(
      "The sandbox's session key, for calls to conversation_url; only while the sandbox runs.",
    ),
    acp_server: nullableString(
      'The ACP provider its agent runs (the published field); null: this service runs no ACP agents.',
    ),
    launched_agent_profile: LaunchedAgentProfileSchema.nullable().meta({
      description:
        'The saved LLM profile its start named in agent_profile_id (GET /api/v1/settings/profiles), at the revision the start used; null: none.',
    }),
    created_at: z.iso.datetime(),
    updated_at: z.iso.datetime(),
  })
  .meta({ id: 'AppConversation' });
export type AppConversation = z.output<typeof AppConversationSchema>;

export const AppConversationPageSchema = z
  .object({ items: z.array(AppConversationSchema), next_page_id: z.string().nullable() })
  .meta({ id: 'AppConversationPage' });

// ---- query parameters ----

export const START_TASKS_LISTING = 'app-conversation-start-tasks';
export const APP_CONVERSATIONS_LISTING = 'app-conversations';
/** A page cursor's key: the sort time (epoch ms) of the last item, then its id (ties). */
const pageKey = z.tuple([z.number().int(), z.string()]);
const pageId = (listing: string) =>
  pageIdParam(listing, pageKey)
    .optional()
    .meta({ type: 'string', description: 'The next_page_id of the previous page (an opaque cursor).' });

/** The orders of both listings (start tasks, conversations): by creation or last update, either way. */
export const TIME_SORT_ORDERS = ['CREATED_AT', 'CREATED_AT_DESC', 'UPDATED_AT', 'UPDATED_AT_DESC'] as const;

export const StartTaskCountQuerySchema = z.object({
  conversation_id__eq: uuidString()
    .optional()
    .meta({ description: 'Keep only the tasks that started this conversation.' }),
  created_at__gte: dateTimeQuery('Created at or after this time.'),
  created_at__lt: dateTimeQuery('Created before this time.'),
});

export const StartTaskSearchQuerySchema = StartTaskCountQuerySchema.extend({
  sort_order: z
    .enum(TIME_SORT_ORDERS)
    .default('CREATED_AT_DESC')
    .meta({ description: 'By creation or by last change (the last status), oldest or newest first; ties by id.' }),
  page_id: pageId(START_TASKS_LISTING),
  limit: pageLimit(),
});

export const AppConversationCountQuerySchema = z.object({
  title__contains: z
    .string()
    .min(1)
    .max(200)
    .optional()
    .meta({ description: 'Keep titles containing this text (case-insensitive).' }),
  created_at__gte: dateTimeQuery('Created at or after this time.'),
  created_at__lt: dateTimeQuery('Created before this time.'),
  updated_at__gte: dateTimeQuery('Updated at or after this time.'),
  updated_at__lt: dateTimeQuery('Updated before this time.'),
  sandbox_id__eq: z.string().min(1).max(100).optional(),
});

export const AppConversationSearchQuerySchema = AppConversationCountQuerySchema.extend({
  sort_order: z.enum(TIME_SORT_ORDERS).default('CREATED_AT_DESC'),
  page_id: pageId(APP_CONVERSATIONS_LISTING),
  limit: pageLimit(),
});

/** `?id=a&id=b`: a plain array, so the router keeps every repeated value (as for events). */
export const IdsQuerySchema = z.object({
  id: z.array(z.string().min(1).max(200)).min(1).max(100).meta({ description: 'Ids (1..100); repeat the parameter.' }),
});
