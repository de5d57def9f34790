import { callerId } from '../state';
import { z } from 'zod';
import { pageLimit } from '../../schemas/common';
import {
  ApiKeyIdParamsSchema,
  ApiKeyPageSchema,
  CreateApiKeyRequestSchema,
  CreatedApiKeySchema,
  type ApiKeySchema,
} from '../../schemas/users';
import type { ApiKeyInfo, ApiKeysStore } from '../../store/api-keys-store';
import { TooMany } from '../../errors';
import { notFound } from '../../web/errors';
import { encodeCursor, pageIdParam } from '../../schemas/page-cursor';
import { type ApiRouter, errorResponse } from '../../web/route';

const LISTING = 'api-keys';

const SearchQuerySchema = z.object({
  page_id: pageIdParam(LISTING, z.tuple([z.number().int().nonnegative(), z.string()]))
    .optional()
    .meta({ description: 'The next_page_id of the previous page.', type: 'string' }),
  limit: pageLimit(),
});

const view = (k: ApiKeyInfo): z.infer<typeof ApiKeySchema> => ({
  id: k.id,
  name: k.name,
  prefix: k.prefix,
  created_at: k.created_at.toISOString(),
  revoked_at: k.revoked_at?.toISOString() ?? null,
});

/** /api/v1/api-keys: the caller's own API keys. */
export function apiKeysRoutes(router: ApiRouter, apiKeys: ApiKeysStore, maxKeys: number | null = null): ApiRouter {
  return router
    .route(
      {
        method: 'get',
        path: '/search',
        operationId: 'searchApiKeys',
        summary: "List the caller's API keys, oldest first",
        security: 'APIKeyHeader',
        query: SearchQuerySchema,
        responses: { 200: { description: 'A page of keys', schema: ApiKeyPageSchema } },
      },
      async (ctx, { query }) => {
        const page = await apiKeys.pageForUser(callerId(ctx), query.limit, query.page_id);
        ctx.body = { items: page.items.map(view), next_page_id: page.last && encodeCursor(LISTING, page.last) };
      },
    )
    .route(
      {
        method: 'post',
        path: '',
        operationId: 'createApiKey',
        summary: 'Create an API key for the caller; the key is in this answer only',
        security: 'APIKeyHeader',
        body: CreateApiKeyRequestSchema,
        responses: {
          201: { description: 'The new key', schema: CreatedApiKeySchema },
          429: errorResponse('The caller has as many keys as one user may (USER_MAX_API_KEYS): revoke one first'),
        },
      },
      async (ctx, { body }) => {
        const active = maxKeys ? await apiKeys.countActive(callerId(ctx)) : 0;
        if (maxKeys && active >= maxKeys)
          throw new TooMany(
            `You have ${active} API keys, as many as one user may (USER_MAX_API_KEYS=${maxKeys}): revoke one first`,
          );
        const { key, raw } = await apiKeys.create(callerId(ctx), body.name);
        ctx.status = 201;
        ctx.body = { ...view(key), key: raw };
      },
    )
    .route(
      {
        method: 'delete',
        path: '/:key_id',
        operationId: 'revokeApiKey',
        summary: "Revoke one of the caller's API keys",
        security: 'APIKeyHeader',
        params: ApiKeyIdParamsSchema,
        responses: {
          204: { description: 'Revoked' },
          404: errorResponse('No such live key of the caller'),
        },
      },
      async (ctx, { params }) => {
        if (!(await apiKeys.revokeForUser(callerId(ctx), params.key_id))) throw notFound('API key not found');
        ctx.status = 204;
      },
    );
}
