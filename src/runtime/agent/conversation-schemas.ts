/**
 * The runtime's conversation API: what a client (the control plane's start flow, a test) sends to create
 * and steer a conversation, and what it reads back. zod is the single source of validation and types.
 */
import { z } from 'zod';
import { HOOK_EVENT_TYPES } from '../../schemas/events';
import { MessageContentSchema, SendMessageRequestSchema } from '../../schemas/messages';
import { MetricsSnapshotSchema } from './conversation-metrics';

/** The execution states of a conversation (SPEC 3.3 names PAUSED and ERROR; the others are the reference SDK's). */
export const EXECUTION_STATUSES = [
  'idle',
  'running',
  'paused',
  'waiting_for_confirmation',
  'finished',
  'error',
] as const;
export type ExecutionStatus = (typeof EXECUTION_STATUSES)[number];

export const LlmSettingsSchema = z
  .strictObject({
    model: z.string().min(1),
    base_url: z.url().describe('An OpenAI-compatible endpoint, up to /v1.'),
    api_key: z.string().nullable().optional(),
    temperature: z.number().min(0).max(2).nullable().optional(),
    top_p: z.number().gt(0).max(1).nullable().optional(),
    max_output_tokens: z.number().int().positive().nullable().optional(),
    stream: z.boolean().default(false).describe('Stream the answer; deltas go out live as StreamingDeltaEvent.'),
    timeout_s: z.number().positive().max(3600).default(600),
    log_completions: z.boolean().default(false).describe('Emit an LLMCompletionLogEvent per completion.'),
    usage_id: z.string().default('default'),
  })
  .meta({ id: 'RuntimeLlmSettings' });

export const SwitchLlmRequestSchema = z
  .strictObject({ llm: LlmSettingsSchema })
  .meta({ id: 'RuntimeSwitchLlmRequest' });

export const CondenserSchema = z
  .strictObject({
    max_size: z.number().int().min(4).describe('Condense when the LLM view holds more events than this.'),
    keep_first: z
      .number()
      .int()
      .min(1)
      .default(2)
      .describe('Events at the head that are never forgotten (system prompt, first message).'),
  })
  .meta({ id: 'RuntimeCondenser' });

export const HookSchema = z.strictObject({
  matcher: z
    .string()
    .default('*')
    .describe('Tool names it applies to: `*`, a name, or a regular expression (PreToolUse/PostToolUse).'),
  command: z.string().min(1).describe('Shell command; gets the hook input as JSON on stdin. Exit 2 blocks.'),
  timeout: z.number().positive().max(600).default(60),
});
export type Hook = z.output<typeof HookSchema>;

/** The hook types this runtime runs; SessionEnd has no moment here (a conversation is never ended by the runtime). */
export const SUPPORTED_HOOK_TYPES = HOOK_EVENT_TYPES.filter((t) => t !== 'SessionEnd');

export const HooksSchema = z
  .strictObject(
    Object.fromEntries(SUPPORTED_HOOK_TYPES.map((t) => [t, z.array(HookSchema).default([])])) as Record<
      (typeof SUPPORTED_HOOK_TYPES)[number],
      z.ZodDefault<z.ZodArray<typeof HookSchema>>
    >,
  )
  .meta({ id: 'RuntimeHooks' });
export type Hooks = z.output<typeof HooksSchema>;

export const SkillSchema = z
  .strictObject({
    name: z.string().min(1),
    content: z.string(),
    triggers: z
      .array(z.string().min(1))
      .default([])
      .describe('Empty: always in the system prompt; otherwise added to a user message that contains a trigger.'),
  })
  .meta({ id: 'RuntimeSkill' });
export type Skill = z.output<typeof SkillSchema>;

/**
 * A message for the agent: the published SendMessageRequest (any role, text and image blocks) with the
 * runtime's own default of run (true: existing callers rely on it) and an optional id. The id becomes the
 * MessageEvent's id; a message whose id the conversation already holds is not added again (a delivery
 * repeated after a crash of the sender), also after a restart of the runtime, since the ids are those of
 * its stored events.
 */
export const UserMessageSchema = z
  .strictObject({
    role: SendMessageRequestSchema.shape.role,
    content: MessageContentSchema,
    run: z.boolean().default(true).describe('Start (or continue) the agent after adding the message.'),
    id: z
      .string()
      .min(1)
      .max(200)
      .refine((v) => !v.includes('\0'), { error: 'a message id may not contain the NUL character (U+0000)' })
      .optional()
      .describe('The id of the MessageEvent; a message with an id the conversation already holds is not added again.'),
  })
  .meta({ id: 'RuntimeSendMessageRequest' });
export type UserMessage = z.output<typeof UserMessageSchema>;

export const CreateConversationSchema = z
  .strictObject({
    conversation_id: z
      .string()
      .min(1)
      .max(200)
      .optional()
      .describe('Default: a new UUID. Events are reported under this id.'),
    agent: z.strictObject({
      llm: LlmSettingsSchema,
      system_message_suffix: z.string().nullable().optional(),
      condenser: CondenserSchema.nullable().optional(),
    }),
    workspace: z
      .strictObject({
        working_dir: z.string().min(1).default('.').describe('Relative to the runtime working directory.'),
      })
      .default({ working_dir: '.' }),
    initial_message: UserMessageSchema.nullable().optional(),
    max_iterations: z.number().int().positive().max(10_000).default(500),
    confirmation_mode: z
      .boolean()
      .default(false)
      .describe('Wait for a confirmation of every action before running it.'),
    secrets: z
      .record(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/), z.string())
      .default({})
      .describe('Environment of the agent commands; values are masked in what the agent sees.'),
    skills: z.array(SkillSchema).default([]),
    hooks: HooksSchema.default(HooksSchema.parse({})),
  })
  .meta({ id: 'StartRuntimeConversationRequest' });
export type CreateConversation = z.output<typeof CreateConversationSchema>;

export const ConfirmationResponseSchema = z
  .strictObject({ accept: z.boolean(), reason: z.string().min(1).default('User rejected the action') })
  .meta({ id: 'ConfirmationResponse' });

/** The agent server's `ask_agent` (published AskAgentRequest / AskAgentResponse). */
export const AskAgentRequestSchema = z
  .strictObject({ question: z.string().min(1).max(20_000) })
  .meta({ id: 'AskAgentRequest' });
export const AskAgentResponseSchema = z.object({ response: z.string() }).meta({ id: 'AskAgentResponse' });

export const ConversationInfoSchema = z
  .object({
    id: z.string(),
    execution_status: z.enum(EXECUTION_STATUSES),
    created_at: z.string(),
    updated_at: z.string(),
    workspace: z.string(),
    model: z.string(),
    max_iterations: z.number().int(),
    iterations: z.number().int(),
    confirmation_mode: z.boolean(),
    events: z.number().int().describe('Events written so far.'),
    unsent_events: z.number().int().describe('Events not yet acknowledged by the control plane.'),
    pending_actions: z.array(z.string()).describe('Ids of the ActionEvents waiting for a confirmation.'),
    metrics: MetricsSnapshotSchema.describe('Tokens and cost of every completion so far.'),
  })
  .meta({ id: 'RuntimeConversationInfo' });
export type ConversationInfo = z.output<typeof ConversationInfoSchema>;

export const ConversationPathSchema = z.object({ conversation_id: z.string().min(1).max(200) });
