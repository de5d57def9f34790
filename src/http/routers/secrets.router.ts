import { callerId } from '../state';
import { z } from 'zod';
import type { UserSettingsService } from '../../orgs/user-settings-service';
import { pageLimit } from '../../schemas/common';
import { encodeCursor, pageIdParam } from '../../schemas/page-cursor';
import {
  CustomSecretCreateSchema,
  CustomSecretPageSchema,
  CustomSecretUpdateSchema,
  EditResponseSchema,
  ProviderTokensRequestSchema,
  SecretIdParamsSchema,
  SecretSearchQuerySchema,
} from '../../schemas/settings';
import { errorResponse, type ApiRouter } from '../../web/route';

const LISTING = 'secrets';

/**
 * /api/v1/secrets: the caller's own secrets and git provider tokens (published API paths and bodies).
 * Values go in, never out: listings show names, descriptions and dates.
 */
export function secretsRoutes(router: ApiRouter, settings: UserSettingsService): ApiRouter {
  return router
    .route(
      {
        method: 'get',
        path: '/search',
        operationId: 'searchCustomSecrets',
        summary: "The caller's secrets by name (never their values)",
        security: 'APIKeyHeader',
        query: SecretSearchQuerySchema.extend({
          page_id: pageIdParam(LISTING, z.tuple([z.string()]))
            .optional()
            .meta({ type: 'string', description: 'The next_page_id of the previous page.' }),
          limit: pageLimit(),
        }),
        responses: { 200: { description: 'A page of secrets', schema: CustomSecretPageSchema } },
      },
      async (ctx, { query }) => {
        const page = await settings.searchSecrets(callerId(ctx), query.limit, query.page_id?.[0], query.name__contains);
        ctx.body = {
          items: page.items.map((s) => ({
            name: s.name,
            description: s.description,
            created_at: s.created_at.toISOString(),
            updated_at: s.updated_at.toISOString(),
          })),
          next_page_id: page.last && encodeCursor(LISTING, [page.last]),
        };
      },
    )
    .route(
      {
        method: 'post',
        path: '',
        operationId: 'createCustomSecret',
        summary: 'Create a secret, or overwrite the one of the same name',
        security: 'APIKeyHeader',
        body: CustomSecretCreateSchema,
        responses: {
          201: { description: 'Stored', schema: EditResponseSchema },
          409: errorResponse('The caller has as many secrets as a user may keep'),
        },
      },
      async (ctx, { body }) => {
        await settings.createSecret(callerId(ctx), body);
        ctx.status = 201;
        ctx.body = { message: 'Secret stored' };
      },
    )
    .route(
      {
        method: 'post',
        path: '/git-providers',
        operationId: 'storeProviderTokens',
        summary: 'Store git provider tokens (used by starts to clone private repositories)',
        description: 'A token that is null, "" or the mask keeps the stored one; providers not named keep theirs.',
        security: 'APIKeyHeader',
        body: ProviderTokensRequestSchema,
        responses: {
          200: { description: 'Stored', schema: EditResponseSchema },
          409: errorResponse('A provider named with no token to keep (null, "" or the mask) has none stored'),
        },
      },
      async (ctx, { body }) => {
        await settings.storeProviderTokens(callerId(ctx), body.provider_tokens);
        ctx.body = { message: 'Git providers stored' };
      },
    )
    .route(
      {
        method: 'delete',
        path: '/git-providers',
        operationId: 'unsetProviderTokens',
        summary: 'Remove every git provider token of the caller',
        security: 'APIKeyHeader',
        responses: { 200: { description: 'Removed', schema: EditResponseSchema } },
      },
      async (ctx) => {
        const n = await settings.unsetProviderTokens(callerId(ctx));
        ctx.body = { message: n === 0 ? 'No git provider tokens were stored' : 'Unset Git provider tokens' };
      },
    )
    .route(
      {
        method: 'put',
        path: '/:secret_id',
        operationId: 'updateCustomSecret',
        summary: "Rename or describe one of the caller's secrets; its value stays",
        security: 'APIKeyHeader',
        params: SecretIdParamsSchema,
        body: CustomSecretUpdateSchema,
        responses: {
          200: { description: 'Updated', schema: EditResponseSchema },
          404: errorResponse('The caller has no secret of that name'),
          409: errorResponse('The new name is taken'),
        },
      },
      async (ctx, { params, body }) => {
        await settings.updateSecret(callerId(ctx), params.secret_id, body);
        ctx.body = { message: 'Secret updated' };
      },
    )
    .route(
      {
        method: 'delete',
        path: '/:secret_id',
        operationId: 'deleteCustomSecret',
        summary: "Delete one of the caller's secrets",
        security: 'APIKeyHeader',
        params: SecretIdParamsSchema,
        responses: {
          200: { description: 'Deleted', schema: EditResponseSchema },
          404: errorResponse('The caller has no secret of that name'),
        },
      },
      async (ctx, { params }) => {
        await settings.deleteSecret(callerId(ctx), params.secret_id);
        ctx.body = { message: 'Secret deleted' };
      },
    );
}
