/**
 * The 19 event kinds of SPEC 2.1 as closed zod objects discriminated by `kind`. Parsing fills every
 * default (per-kind `source`, `is_error: false`, `stdout: ""`, nullable fields as null, ...) so stored and
 * served events carry them. Payloads whose shape the spec does not show are JSON objects.
 */
import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { eventTimeAsSent, normalizeEventTime } from './event-time';

export const EVENT_KINDS = [
  'ServerErrorEvent',
  'ACPToolCallEvent',
  'Condensation',
  'CondensationRequest',
  'CondensationSummaryEvent',
  'ConversationErrorEvent',
  'ConversationStateUpdateEvent',
  'HookExecutionEvent',
  'LLMCompletionLogEvent',
  'ActionEvent',
  'MessageEvent',
  'AgentErrorEvent',
  'ObservationEvent',
  'UserRejectObservation',
  'SystemPromptEvent',
  'StreamingDeltaEvent',
  'TokenEvent',
  'InterruptEvent',
  'PauseEvent',
] as const;
export type EventKind = (typeof EVENT_KINDS)[number];

export const EVENT_SOURCES = ['agent', 'user', 'environment', 'hook'] as const;
export type EventSource = (typeof EVENT_SOURCES)[number];

export const ACTION_KINDS = [
  'MCPToolAction',
  'FinishAction',
  'InvokeSkillAction',
  'SwitchLLMAction',
  'ThinkAction',
  'VisionInspectAction',
  'ApplyPatchAction',
  'BrowserAction',
  'BrowserClickAction',
  'BrowserCloseTabAction',
  'BrowserGetContentAction',
  'BrowserGetStateAction',
  'BrowserGetStorageAction',
  'BrowserGoBackAction',
  'BrowserListTabsAction',
  'BrowserNavigateAction',
  'BrowserScrollAction',
  'BrowserSetStorageAction',
  'BrowserStartRecordingAction',
  'BrowserStopRecordingAction',
  'BrowserSwitchTabAction',
  'BrowserTypeAction',
  'DelegateAction',
  'FileEditorAction',
  'EditAction',
  'ListDirectoryAction',
  'ReadFileAction',
  'WriteFileAction',
  'GlobAction',
  'GrepAction',
  'PlanningFileEditorAction',
  'TaskAction',
  'TaskTrackerAction',
  'TerminalAction',
  'ConsultAdvisorAction',
  'SleeptimeComputeAction',
  'WorkflowAction',
] as const;

/** UNKNOWN is the spec's default; the other values are those of the reference agent SDK. */
export const SECURITY_RISKS = ['UNKNOWN', 'LOW', 'MEDIUM', 'HIGH'] as const;

export const HOOK_EVENT_TYPES = [
  'PreToolUse',
  'PostToolUse',
  'UserPromptSubmit',
  'SessionStart',
  'SessionEnd',
  'Stop',
] as const;

// ---- supporting shapes ----

const jsonObject = (description: string) => z.record(z.string(), z.unknown()).meta({ description });
const nullableString = () => z.string().nullable().default(null);

export const TextContentSchema = z
  .strictObject({
    text: z.string(),
    type: z.literal('text').default('text'),
    cache_prompt: z.boolean().default(false),
  })
  .meta({ id: 'TextContent' });

export const ThinkingBlockSchema = z
  .object({ thinking: z.string(), type: z.literal('thinking').default('thinking'), signature: nullableString() })
  .meta({ id: 'ThinkingBlock' });

export const RedactedThinkingBlockSchema = z
  .object({ data: z.string(), type: z.literal('redacted_thinking').default('redacted_thinking') })
  .meta({ id: 'RedactedThinkingBlock' });

export const ReasoningItemModelSchema = z
  .object({
    id: nullableString(),
    summary: z.array(z.string()).default([]),
    content: z.array(z.string()).nullable().default(null),
    encrypted_content: nullableString().meta({ description: 'Never logged nor rendered.' }),
    status: nullableString(),
  })
  .meta({ id: 'ReasoningItemModel' });

export const ActionSchema = z
  .looseObject({ kind: z.enum(ACTION_KINDS) })
  .meta({ id: 'Action', description: 'An executable action; its payload fields depend on its kind.' });

/** Thinking blocks are told apart by `type`; a block without one is a ThinkingBlock. */
const ThinkingBlockItemSchema = z.union([
  RedactedThinkingBlockSchema.extend({ type: z.literal('redacted_thinking') }),
  ThinkingBlockSchema,
]);

// ---- the events ----

/** ISO 8601 date-time; a value without zone is read as UTC. */
const eventTimestamp = z
  .string()
  .refine((v) => normalizeEventTime(v) !== null, {
    message: 'Input should be a valid datetime, in ISO 8601 form such as 2024-05-01T12:00:00.000Z',
    params: { type: 'datetime_from_date_parsing' },
  })
  .meta({ description: 'Event time, ISO 8601; without a zone it is read as UTC.', format: 'date-time' });

/**
 * A field validation fills in when it is absent, with a value made at that moment. Not a zod `.default`:
 * the OpenAPI generator would call the function once and print its value (one fixed random UUID, the
 * build's time) as every event's `default`; the description says what is filled in instead.
 */
const filledWhenAbsent = (schema: z.ZodType<string, string>, fill: () => string, description: string) =>
  schema
    .optional()
    .transform((v) => v ?? fill())
    .meta({ description });

function event<K extends EventKind, S extends z.ZodRawShape>(kind: K, defaultSource: EventSource | null, own: S) {
  return z
    .strictObject({
      id: filledWhenAbsent(
        z
          .string()
          .min(1)
          .max(200)
          .refine((v) => !v.includes('\0'), { error: 'an event id may not contain the NUL character (U+0000)' }),
        () => randomUUID(),
        'The event id: a new UUID when absent.',
      ),
      timestamp: filledWhenAbsent(
        eventTimestamp.transform((v) => eventTimeAsSent(v)!),
        () => new Date().toISOString(),
        'Event time, ISO 8601; without a zone it is read as UTC (and kept as its UTC date-time, …Z); the time of receipt when absent.',
      ),
      source: defaultSource ? z.enum(EVENT_SOURCES).default(defaultSource) : z.enum(EVENT_SOURCES),
      parent_id: z.string().nullable().default(null),
      kind: z.literal(kind),
      ...own,
    })
    .meta({ id: kind });
}

export const ServerErrorEventSchema = event('ServerErrorEvent', null, { code: z.string(), detail: z.string() });

export const ACPToolCallEventSchema = event('ACPToolCallEvent', 'agent', {
  tool_call_id: z.string(),
  title: z.string(),
  status: nullableString(),
  tool_kind: nullableString(),
  raw_input: z.unknown().default(null),
  raw_output: z.unknown().default(null),
  content: z.array(z.unknown()).nullable().default(null),
  is_error: z.boolean().default(false),
});

export const CondensationSchema = event('Condensation', 'environment', {
  forgotten_event_ids: z
    .array(z.string())
    .default([])
    .refine((ids) => new Set(ids).size === ids.length, { message: 'forgotten_event_ids must be unique' }),
  summary: nullableString(),
  summary_offset: z.number().int().gte(0).nullable().default(null),
  llm_response_id: z.string(),
});

export const CondensationRequestSchema = event('CondensationRequest', 'environment', {});

export const CondensationSummaryEventSchema = event('CondensationSummaryEvent', 'environment', { summary: z.string() });

export const ConversationErrorEventSchema = event('ConversationErrorEvent', null, {
  code: z.string(),
  detail: z.string(),
});

export const ConversationStateUpdateEventSchema = event('ConversationStateUpdateEvent', 'environment', {
  key: z.string().optional().meta({ description: 'Unique key of the update.' }),
  value: z.unknown().optional().meta({ description: 'Serialized state update.' }),
});

export const HookExecutionEventSchema = event('HookExecutionEvent', 'hook', {
  hook_event_type: z.enum(HOOK_EVENT_TYPES),
  hook_command: z.string(),
  tool_name: nullableString(),
  success: z.boolean(),
  blocked: z.boolean().default(false),
  exit_code: z.number().int(),
  stdout: z.string().default(''),
  stderr: z.string().default(''),
  reason: nullableString(),
  additional_context: nullableString(),
  error: nullableString(),
  action_id: nullableString(),
  message_id: nullableString(),
  hook_input: z.record(z.string(), z.unknown()).nullable().default(null),
});

export const LLMCompletionLogEventSchema = event('LLMCompletionLogEvent', 'environment', {
  filename: z.string(),
  log_data: z.string(),
  model_name: z.string().default('unknown'),
  usage_id: z.string().default('default'),
});

export const ActionEventSchema = event('ActionEvent', 'agent', {
  thought: z.array(TextContentSchema),
  reasoning_content: nullableString(),
  thinking_blocks: z.array(ThinkingBlockItemSchema).default([]),
  responses_reasoning_item: ReasoningItemModelSchema.nullable().default(null),
  action: ActionSchema.nullable().default(null),
  tool_name: z.string(),
  tool_call_id: z.string(),
  tool_call: jsonObject('MessageToolCall: the call as received.'),
  llm_response_id: z.string(),
  security_risk: z.enum(SECURITY_RISKS).default('UNKNOWN'),
  critic_result: jsonObject('CriticResult').nullable().default(null),
  summary: nullableString(),
});

export const MessageEventSchema = event('MessageEvent', null, {
  llm_message: jsonObject('Message'),
  llm_response_id: nullableString(),
  activated_skills: z.array(z.string()).default([]),
  extended_content: z.array(TextContentSchema).default([]),
  sender: nullableString(),
  critic_result: jsonObject('CriticResult').nullable().default(null),
});

export const AgentErrorEventSchema = event('AgentErrorEvent', 'agent', {
  tool_name: z.string(),
  tool_call_id: z.string(),
  error: z.string(),
});

export const ObservationEventSchema = event('ObservationEvent', 'environment', {
  tool_name: z.string(),
  tool_call_id: z.string(),
  observation: jsonObject('Observation'),
  action_id: z.string(),
  extended_content: z.array(TextContentSchema).default([]),
});

export const UserRejectObservationSchema = event('UserRejectObservation', 'environment', {
  tool_name: z.string(),
  tool_call_id: z.string(),
  rejection_reason: z.string().default('User rejected the action'),
  rejection_source: z.enum(['user', 'hook']).default('user'),
  action_id: z.string(),
});

export const SystemPromptEventSchema = event('SystemPromptEvent', 'agent', {
  system_prompt: TextContentSchema,
  tools: z.array(jsonObject('ToolDefinition')),
  dynamic_context: TextContentSchema.nullable().default(null),
});

export const StreamingDeltaEventSchema = event('StreamingDeltaEvent', 'agent', {
  content: nullableString(),
  reasoning_content: nullableString(),
});

export const TokenEventSchema = event('TokenEvent', null, {
  prompt_token_ids: z.array(z.number().int()),
  response_token_ids: z.array(z.number().int()),
});

export const InterruptEventSchema = event('InterruptEvent', 'user', {});
export const PauseEventSchema = event('PauseEvent', 'user', {});

export const EventSchema = z
  .discriminatedUnion('kind', [
    ServerErrorEventSchema,
    ACPToolCallEventSchema,
    CondensationSchema,
    CondensationRequestSchema,
    CondensationSummaryEventSchema,
    ConversationErrorEventSchema,
    ConversationStateUpdateEventSchema,
    HookExecutionEventSchema,
    LLMCompletionLogEventSchema,
    ActionEventSchema,
    MessageEventSchema,
    AgentErrorEventSchema,
    ObservationEventSchema,
    UserRejectObservationSchema,
    SystemPromptEventSchema,
    StreamingDeltaEventSchema,
    TokenEventSchema,
    InterruptEventSchema,
    PauseEventSchema,
  ])
  .meta({ id: 'Event' });

export type Event = z.output<typeof EventSchema>;

/** A webhook batch. Its size is bounded by MAX_BODY_BYTES. */
export const EventBatchSchema = z.array(EventSchema).max(10_000).meta({ id: 'EventBatch' });

export const EventPageSchema = z
  .object({ items: z.array(EventSchema), next_page_id: z.string().nullable() })
  .meta({ id: 'EventPage' });

/** Events that are published live and never written to the log (SPEC 6). */
export const TRANSIENT_KINDS: ReadonlySet<EventKind> = new Set(['StreamingDeltaEvent']);

/**
 * The state update that carries a whole snapshot (key `full_state`): the OpenHands agent server sends one
 * to a subscriber that joins (its webhook, now and then), keeps none in its own log, and the next ones
 * say again what it holds. Live clients get it; the log, which must match the runtime's, does not.
 */
export const SNAPSHOT_STATE_KEY = 'full_state';

/** Published live, never stored: a transient kind, or a state snapshot. */
export const isTransient = (e: { kind: string; key?: unknown }): boolean =>
  TRANSIENT_KINDS.has(e.kind as EventKind) ||
  (e.kind === 'ConversationStateUpdateEvent' && e.key === SNAPSHOT_STATE_KEY);
