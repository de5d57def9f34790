import { callerId } from '../state';
import { agentSettingsJsonSchema, conversationSettingsJsonSchema } from '../../orgs/settings-json-schemas';
import type { UserSettingsService } from '../../orgs/user-settings-service';
import { JsonSchemaDocumentSchema, SettingsUpdateSchema, SettingsViewSchema } from '../../schemas/settings';
import { type ApiRouter, errorResponse } from '../../web/route';

/** /api/v1/settings: the caller's own settings over their active organization's (published API paths). */
export function settingsRoutes(router: ApiRouter, settings: UserSettingsService): ApiRouter {
  const agentSchema = agentSettingsJsonSchema();
  const conversationSchema = conversationSettingsJsonSchema();
  return router
    .route(
      {
        method: 'get',
        path: '',
        operationId: 'loadSettings',
        summary: "The caller's settings: their own over the active organization's",
        security: 'APIKeyHeader',
        responses: {
          200: { description: 'The settings', schema: SettingsViewSchema },
          404: errorResponse('No active organization'),
        },
      },
      async (ctx) => {
        ctx.body = await settings.load(callerId(ctx));
      },
    )
    .route(
      {
        method: 'post',
        path: '',
        operationId: 'storeSettings',
        summary: "Change the caller's settings; the diffs are deep-merged into what is stored",
        description:
          "agent_settings_diff and conversation_settings_diff are merged into the caller's stored diffs, and the result over the organization's settings is validated whole (a change it does not fit is a 409). A secret equal to the mask keeps the stored one; \"\" removes the caller's own (the organization's applies).",
        security: 'APIKeyHeader',
        body: SettingsUpdateSchema,
        responses: {
          200: { description: 'The settings after the change', schema: SettingsViewSchema },
          409: errorResponse(
            "Changed meanwhile; or the change does not fit the stored settings (another variant's fields without its agent_kind)",
          ),
        },
      },
      async (ctx, { body }) => {
        ctx.body = await settings.store(callerId(ctx), body);
      },
    )
    .route(
      {
        method: 'get',
        path: '/agent-schema',
        operationId: 'loadAgentSettingsSchema',
        summary: 'JSON Schema of the agent settings (made from the schemas that validate them)',
        security: 'APIKeyHeader',
        responses: { 200: { description: 'A JSON Schema', schema: JsonSchemaDocumentSchema } },
      },
      (ctx) => {
        ctx.body = agentSchema;
      },
    )
    .route(
      {
        method: 'get',
        path: '/conversation-schema',
        operationId: 'loadConversationSettingsSchema',
        summary: 'JSON Schema of the conversation settings',
        security: 'APIKeyHeader',
        responses: { 200: { description: 'A JSON Schema', schema: JsonSchemaDocumentSchema } },
      },
      (ctx) => {
        ctx.body = conversationSchema;
      },
    );
}
