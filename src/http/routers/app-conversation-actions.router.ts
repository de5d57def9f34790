/**
 * /api/v1/app-conversations/{conversation_id}: acting on a started conversation through the control
 * plane (the reference's send-message, PATCH and DELETE, and run control of its agent). Only the
 * caller's conversations: anyone else's id is 404.
 */
import type { ConversationService, RunControl } from '../../app-conversations/conversation-service';
import type { ConversationViews } from '../../app-conversations/conversation-views';
import { AppConversationSchema } from '../../schemas/app-conversations';
import {
  AppConversationUpdateRequestSchema,
  AppSendMessageRequestSchema,
  AppSendMessageResponseSchema,
  ConversationPathSchema,
  SuccessSchema,
} from '../../schemas/app-conversation-actions';
import { SwitchProfileRequestSchema } from '../../schemas/llm-profiles';
import { errorResponse, type ApiRouter } from '../../web/route';
import { callerId } from '../state';

const notFound = errorResponse('No such conversation of the caller');
const unreachable = errorResponse(
  'The sandbox is in ERROR, or its agent server did not answer in time (the detail says which); try again',
);

export function appConversationActionsRoutes(
  router: ApiRouter,
  deps: { conversationService: ConversationService; conversationViews: ConversationViews },
): ApiRouter {
  const { conversationService: service, conversationViews: views } = deps;
  const control = (action: RunControl, summary: string, description: string) =>
    router.route(
      {
        method: 'post',
        path: `/:conversation_id/${action}`,
        operationId: `${action}AppConversation`,
        summary,
        description,
        security: 'APIKeyHeader',
        params: ConversationPathSchema,
        responses: {
          200: {
            description: "The conversation, with its agent's execution status after the call",
            schema: AppConversationSchema,
          },
          404: notFound,
          409: errorResponse(
            'Not possible now: the reason (its sandbox is paused or gone, the agent is waiting for a confirmation, ...)',
          ),
          503: unreachable,
        },
      },
      async (ctx, { params }) => {
        const userId = callerId(ctx);
        const { conversation, execution_status } = await service.control(userId, params.conversation_id, action);
        ctx.body = await views.one(userId, conversation, { execution_status });
      },
    );

  router.route(
    {
      method: 'post',
      path: '/:conversation_id/switch_profile',
      operationId: 'switchConversationProfile',
      summary: "Switch the running conversation's LLM to a saved profile",
      description:
        "The profile's LLM (over your organization's, as activating it would) is handed to the agent server's switch_llm: the agent's next LLM calls use it. " +
        "What stays: the history, your settings and active profile, launched_agent_profile. The conversation's llm_model becomes the profile's model. Its sandbox must be running (a paused one is not resumed for this).",
      security: 'APIKeyHeader',
      params: ConversationPathSchema,
      body: SwitchProfileRequestSchema,
      responses: {
        200: { description: 'Switched', schema: SuccessSchema },
        404: errorResponse('No such conversation of the caller, or no profile of that name'),
        409: errorResponse(
          "Not possible now: its sandbox is paused or gone, the profile names no model and endpoint, your agent takes no LLM, or the agent server refused the profile's LLM",
        ),
        502: errorResponse('The agent server failed'),
        503: unreachable,
      },
    },
    async (ctx, { params, body }) => {
      await service.switchProfile(callerId(ctx), params.conversation_id, body.profile_name);
      ctx.body = { success: true };
    },
  );

  router
    .route(
      {
        method: 'post',
        path: '/:conversation_id/send-message',
        operationId: 'sendMessageToConversation',
        summary: 'Send a follow-up message to the conversation',
        description:
          'Delivered to the agent; while it runs, the message is taken up at its next step. A paused sandbox is resumed first ' +
          '(the answer says so); a sandbox that is starting is waited for, up to a minute. A conversation whose sandbox is gone: 409.',
        security: 'APIKeyHeader',
        params: ConversationPathSchema,
        body: AppSendMessageRequestSchema,
        responses: {
          200: { description: 'Delivered', schema: AppSendMessageResponseSchema },
          404: notFound,
          409: errorResponse(
            'The sandbox is gone, or the agent refused the message now (waiting for a confirmation, blocked by a hook)',
          ),
          503: unreachable,
        },
      },
      async (ctx, { params, body }) => {
        ctx.body = await service.sendMessage(callerId(ctx), params.conversation_id, body);
      },
    )
    .route(
      {
        method: 'patch',
        path: '/:conversation_id',
        operationId: 'updateAppConversation',
        summary: "Change the conversation's title, visibility or repository fields",
        security: 'APIKeyHeader',
        params: ConversationPathSchema,
        body: AppConversationUpdateRequestSchema,
        responses: {
          200: { description: 'The conversation as it now is', schema: AppConversationSchema },
          404: notFound,
        },
      },
      async (ctx, { params, body }) => {
        const userId = callerId(ctx);
        ctx.body = await views.one(userId, await service.update(userId, params.conversation_id, body));
      },
    )
    .route(
      {
        method: 'delete',
        path: '/:conversation_id',
        operationId: 'deleteAppConversation',
        summary: 'Delete the conversation and its event log; its sandbox too when no other conversation uses it',
        security: 'APIKeyHeader',
        params: ConversationPathSchema,
        responses: {
          200: { description: 'Deleted', schema: SuccessSchema },
          404: notFound,
          503: errorResponse(
            'The sandbox could not be deleted now (its workflow did not answer); nothing was deleted, try again',
          ),
        },
      },
      async (ctx, { params }) => {
        await service.delete(callerId(ctx), params.conversation_id);
        ctx.body = { success: true };
      },
    );
  control(
    'pause',
    "Pause the conversation's agent after its current step",
    'The agent finishes the step in flight, then is paused (execution_status paused).',
  );
  control(
    'run',
    "Run the conversation's agent",
    'Runs the agent until it finishes, is paused or needs a confirmation; a paused sandbox is resumed first.',
  );
  control(
    'interrupt',
    "Interrupt the conversation's agent at once",
    'Cancels the step in flight (an LLM call, a command), then paused.',
  );
  return router;
}
