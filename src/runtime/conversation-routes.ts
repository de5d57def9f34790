/**
 * The runtime's conversation API (behind the session key): create a conversation, read it, delete it, send
 * a message, ask the agent a question, run, pause, interrupt, ask for a condensation and answer a confirmation. A call the conversation's state does not
 * allow answers 409 with the reason; an unknown conversation 404.
 */
import { z } from 'zod';
import { deadline } from '../deadline';
import { HttpError } from '../web/errors';
import type { ApiRouter } from '../web/route';
import { ErrorResponseSchema } from '../schemas/errors';
import { ConversationConflict, type Conversation } from './agent/conversation';
import type { ConversationRegistry } from './agent/conversation-registry';
import { LlmError } from './agent/llm-protocol';
import {
  AskAgentRequestSchema,
  AskAgentResponseSchema,
  ConfirmationResponseSchema,
  ConversationInfoSchema,
  ConversationPathSchema,
  CreateConversationSchema,
  SwitchLlmRequestSchema,
  UserMessageSchema,
} from './agent/conversation-schemas';

const error = (description: string) => ({ description, schema: ErrorResponseSchema });
const info = { description: 'The conversation', schema: ConversationInfoSchema };
/** The longest an ask_agent call runs its LLM call (the control plane gives up after as long). */
const ASK_AGENT_TIMEOUT_MS = 120_000;
const SuccessSchema = z.object({ success: z.boolean() }).meta({ id: 'RuntimeSuccess' });

async function conflictsAs409<T>(f: () => T | Promise<T>): Promise<T> {
  try {
    return await f();
  } catch (e) {
    if (e instanceof ConversationConflict) throw new HttpError(409, e.message);
    throw e;
  }
}

export function conversationRoutes(router: ApiRouter, registry: ConversationRegistry): ApiRouter {
  const action = (name: 'run' | 'pause' | 'interrupt' | 'condense', summary: string, act: (c: Conversation) => void) =>
    router.route(
      {
        method: 'post',
        path: `/api/conversations/:conversation_id/${name}`,
        operationId: `${name}Conversation`,
        summary,
        security: 'SessionAPIKeyHeader',
        params: ConversationPathSchema,
        responses: { 200: info, 404: error('No such conversation'), 409: error('Not allowed in the current state') },
      },
      async (ctx, { params }) => {
        const c = registry.get(params.conversation_id);
        await conflictsAs409(() => act(c));
        ctx.body = c.info();
      },
    );

  router
    .route(
      {
        method: 'post',
        path: '/api/conversations',
        operationId: 'startConversation',
        summary: 'Create a conversation (and run it when the initial message says so)',
        security: 'SessionAPIKeyHeader',
        body: CreateConversationSchema,
        responses: {
          201: info,
          400: error('Workspace outside the working directory'),
          409: error('A conversation with this id exists, or the initial message was blocked'),
          503: error('The runtime cannot report events'),
        },
      },
      async (ctx, { body }) => {
        const c = await conflictsAs409(() => registry.create(body));
        ctx.status = 201;
        ctx.body = c.info();
      },
    )
    .route(
      {
        method: 'get',
        path: '/api/conversations/:conversation_id',
        operationId: 'getConversation',
        summary: 'A conversation and its execution status',
        security: 'SessionAPIKeyHeader',
        params: ConversationPathSchema,
        responses: { 200: info, 404: error('No such conversation') },
      },
      (ctx, { params }) => {
        ctx.body = registry.get(params.conversation_id).info();
      },
    )
    .route(
      {
        method: 'delete',
        path: '/api/conversations/:conversation_id',
        operationId: 'deleteConversation',
        summary:
          'Delete a conversation: its agent loop stops (as by an interrupt), its state and unsent events are removed',
        security: 'SessionAPIKeyHeader',
        params: ConversationPathSchema,
        responses: { 200: { description: 'Deleted', schema: SuccessSchema }, 404: error('No such conversation') },
      },
      async (ctx, { params }) => {
        await registry.delete(params.conversation_id);
        ctx.body = { success: true };
      },
    )
    .route(
      {
        method: 'post',
        path: '/api/conversations/:conversation_id/events',
        operationId: 'sendMessage',
        summary: 'Send a message (any role, text and images); with run (the default) the agent takes it up',
        description:
          'While the agent runs, the message is taken up at its next step. A message with an id the conversation already holds is not added again (200 with the conversation): a repeated delivery is harmless.',
        security: 'SessionAPIKeyHeader',
        params: ConversationPathSchema,
        body: UserMessageSchema,
        responses: {
          200: info,
          404: error('No such conversation'),
          409: error('Waiting for a confirmation, blocked by a hook, or the id is that of another kind of event'),
        },
      },
      async (ctx, { params, body }) => {
        const c = registry.get(params.conversation_id);
        await conflictsAs409(() => c.sendMessage(body));
        ctx.body = c.info();
      },
    )
    .route(
      {
        method: 'post',
        path: '/api/conversations/:conversation_id/events/respond_to_confirmation',
        operationId: 'respondToConfirmation',
        summary: 'Accept the pending actions (they run, and the agent goes on) or reject them with a reason',
        security: 'SessionAPIKeyHeader',
        params: ConversationPathSchema,
        body: ConfirmationResponseSchema,
        responses: { 200: info, 404: error('No such conversation'), 409: error('No action waits for a confirmation') },
      },
      async (ctx, { params, body }) => {
        const c = registry.get(params.conversation_id);
        await conflictsAs409(() => c.respondToConfirmation(body.accept, body.reason));
        ctx.body = c.info();
      },
    );
  router.route(
    {
      method: 'post',
      path: '/api/conversations/:conversation_id/ask_agent',
      operationId: 'askAgent',
      summary: 'Ask the agent a question about the conversation without adding to it; answers its reply',
      description:
        'One LLM call on the conversation so far and the question, no tools; the conversation and its log are unchanged. 502 when the LLM endpoint fails.',
      security: 'SessionAPIKeyHeader',
      params: ConversationPathSchema,
      body: AskAgentRequestSchema,
      responses: {
        200: { description: 'The agent answered', schema: AskAgentResponseSchema },
        404: error('No such conversation'),
        502: error('The LLM endpoint failed'),
      },
    },
    async (ctx, { params, body }) => {
      const c = registry.get(params.conversation_id);
      // The LLM call ends with the request: a caller that gave up (or ASK_AGENT_TIMEOUT_MS) stops it.
      const gone = new AbortController();
      ctx.res.once('close', () => gone.abort());
      const bound = deadline(ASK_AGENT_TIMEOUT_MS, gone.signal);
      try {
        ctx.body = { response: await c.ask(body.question, bound.signal) };
      } catch (e) {
        if (e instanceof LlmError || (e as Error).name === 'TimeoutError')
          throw new HttpError(502, `The LLM endpoint failed: ${(e as Error).message}`);
        throw e;
      } finally {
        bound.clear();
      }
    },
  );
  router.route(
    {
      method: 'post',
      path: '/api/conversations/:conversation_id/switch_llm',
      operationId: 'switchConversationLlm',
      summary: "Swap the conversation's LLM for the next LLM calls (the agent server's switch_llm); its history stays",
      security: 'SessionAPIKeyHeader',
      params: ConversationPathSchema,
      body: SwitchLlmRequestSchema,
      responses: { 200: { description: 'Switched', schema: SuccessSchema }, 404: error('No such conversation') },
    },
    (ctx, { params, body }) => {
      registry.switchLlm(params.conversation_id, body.llm);
      ctx.body = { success: true };
    },
  );
  action('run', 'Run the agent until it finishes, is paused or needs a confirmation', (c) => c.run());
  action('pause', 'Pause after the current step (PauseEvent now, PAUSED when the step ends)', (c) => c.pause());
  action('interrupt', 'Cancel the current step at once (InterruptEvent, then PAUSED)', (c) => c.interrupt());
  action('condense', 'Ask for a condensation of the history (CondensationRequest); it happens at the next step', (c) =>
    c.requestCondensation(),
  );
  return router;
}
