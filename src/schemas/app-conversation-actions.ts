/**
 * What a client sends to act on a started conversation (the reference's AppConversationUpdateRequest,
 * AppSendMessageRequest, the pending messages), and what it gets back. Optional fields take `null` as
 * "not given", as the reference's clients send it.
 */
import { z } from 'zod';
import { GitProviderSchema } from './app-conversations';
import { uuidString } from './common';
import { MessageContentSchema } from './messages';
import { SandboxStatusSchema } from './sandboxes';

/** An optional field whose null means "not given". */
const notGiven = <T extends z.ZodType>(schema: T) =>
  schema
    .nullable()
    .optional()
    .transform((v) => v ?? undefined);

export const ConversationPathSchema = z.object({ conversation_id: uuidString() });

export const AppConversationUpdateRequestSchema = z
  .strictObject({
    title: notGiven(z.string().min(1).max(500)),
    public: notGiven(z.boolean()),
    selected_repository: notGiven(z.string().min(1).max(500)),
    selected_branch: notGiven(z.string().min(1).max(500)),
    git_provider: notGiven(GitProviderSchema),
  })
  .meta({ id: 'AppConversationUpdateRequest', description: 'Only the fields given change; null means not given.' });

export const AppSendMessageRequestSchema = z
  .strictObject({
    role: z.literal('user').default('user'),
    content: MessageContentSchema,
    run: z.boolean().default(true).meta({ description: 'Run the agent on it (the default).' }),
  })
  .meta({ id: 'AppSendMessageRequest' });

export const AppSendMessageResponseSchema = z
  .object({
    success: z.boolean(),
    sandbox_status: SandboxStatusSchema,
    message: z.string().nullable().meta({ description: 'What happened on the way (a paused sandbox resumed).' }),
  })
  .meta({ id: 'AppSendMessageResponse' });

export const SuccessSchema = z.object({ success: z.boolean() }).meta({ id: 'Success' });

/** A client's message id: stored once per conversation however often it is sent. */
export const MESSAGE_ID = /^[A-Za-z0-9._:-]{1,100}$/;

/** A queued message waits in the database: at most this much content (serialized). */
export const MAX_PENDING_MESSAGE_BYTES = 1024 * 1024;

export const PendingMessageRequestSchema = z
  .strictObject({
    role: z.literal('user').default('user'),
    content: MessageContentSchema.refine((c) => Buffer.byteLength(JSON.stringify(c)) <= MAX_PENDING_MESSAGE_BYTES, {
      error: `at most ${MAX_PENDING_MESSAGE_BYTES} bytes of content in a queued message (send larger ones once the conversation is READY)`,
    }),
    id: notGiven(
      z.string().regex(MESSAGE_ID, { error: 'a message id: 1..100 letters, digits, ".", "_", ":" or "-"' }),
    ).meta({
      description: 'Yours to choose: sending the same id again stores the message once (default: a new UUID).',
    }),
  })
  .meta({ id: 'PendingMessageRequest' });
export type PendingMessageRequest = z.output<typeof PendingMessageRequestSchema>;

export const PendingMessageResponseSchema = z
  .object({
    id: z.string(),
    queued: z.boolean().meta({ description: 'false: the conversation was READY and the message went to it at once.' }),
    position: z.number().int().meta({ description: 'Place among the waiting messages (1-based); 0 when delivered.' }),
    conversation_id: z.string(),
  })
  .meta({ id: 'PendingMessageResponse' });

export const PendingMessageSchema = z
  .object({
    id: z.string(),
    conversation_id: z.string(),
    role: z.string(),
    status: z.enum(['QUEUED', 'DELIVERED', 'UNDELIVERED']),
    detail: z.string().nullable().meta({ description: 'Why it was not delivered.' }),
    created_at: z.iso.datetime(),
    updated_at: z.iso.datetime(),
  })
  .meta({
    id: 'PendingMessage',
    description: 'A queued message and what became of it (its content is what was sent; not repeated here).',
  });

export const FileQuerySchema = z.object({
  file_path: z.string().min(1).max(4096).default('PLAN.md').meta({
    description:
      "Relative to the conversation's working directory (the repository), or absolute inside the sandbox's workspace.",
  }),
});

export const GitChangesQuerySchema = z.object({
  path: z
    .string()
    .min(1)
    .max(4096)
    .meta({ description: 'The git repository (relative to the working directory, or absolute).' }),
  ref: notGiven(z.string().min(1).max(200)).meta({ description: 'The git ref to compare with (default HEAD).' }),
});

export const GitDiffQuerySchema = z.object({
  path: z.string().min(1).max(4096).meta({ description: 'The file to diff.' }),
  ref: notGiven(z.string().min(1).max(200)).meta({ description: 'The git ref to compare with (default HEAD).' }),
});

export { GitChangeSchema, GitDiffSchema } from './git';

export const SkillResponseSchema = z
  .object({
    name: z.string(),
    type: z.enum(['repo', 'knowledge', 'agentskills']),
    content: z.string(),
    triggers: z.array(z.string()),
  })
  .meta({ id: 'SkillResponse' });

export const HookEventResponseSchema = z
  .object({
    event_type: z.string(),
    matchers: z.array(
      z.object({
        matcher: z.string(),
        hooks: z.array(z.object({ type: z.string(), command: z.string(), timeout: z.number(), async: z.boolean() })),
      }),
    ),
  })
  .meta({ id: 'HookEventResponse' });
