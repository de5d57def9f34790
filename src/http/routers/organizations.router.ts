import { callerId } from '../state';
import { z } from 'zod';
import type { OrganizationsService } from '../../orgs/organizations-service';
import { pageLimit, uuidString } from '../../schemas/common';
import {
  AgentSettingsDiffSchema,
  ConversationSettingsDiffSchema,
  OrganizationEditableSchema,
  OrganizationSchema,
  PUBLISHED_ORG_PATCH_FIELDS,
} from '../../schemas/organizations';
import { fromPublishedPatch, PUBLISHED_DIFF_PAIRS } from '../../orgs/published-org-patch';
import { encodeCursor, pageIdParam } from '../../schemas/page-cursor';
import { errorResponse, type ApiRouter } from '../../web/route';

const LISTING = 'organizations';
const OrgPathSchema = z.object({ org_id: uuidString() });

/**
 * Patch body: every editable field optional (null: unchanged, as in the published OrgUpdate); objects are
 * merged, the result is validated whole. The published body's agent_settings_diff,
 * conversation_settings_diff and llm_api_key are taken beside today's fields.
 */
const OrganizationPatchSchema = z
  .strictObject({
    ...(Object.fromEntries(
      Object.entries(OrganizationEditableSchema.shape).map(([k, v]) => [
        k,
        // Not .nullable() on the diffs: the generator writes that as their bare $ref, which null does not satisfy.
        (k === 'agent_settings'
          ? z.union([AgentSettingsDiffSchema, z.null()])
          : k === 'conversation_settings'
            ? z.union([ConversationSettingsDiffSchema, z.null()])
            : (v as z.ZodType).nullable()
        ).optional(),
      ]),
    ) as Record<string, z.ZodOptional<z.ZodType>>),
    ...PUBLISHED_ORG_PATCH_FIELDS,
  })
  .meta({
    id: 'OrganizationPatch',
    description:
      'Fields to change; nested settings objects (and the published *_diff fields) are merged into the stored ones. ' +
      'A published diff and the field it changes are not sent together (one of them null is not sent).',
    // What fromPublishedPatch refuses, said in the document: both of a pair, neither null.
    allOf: PUBLISHED_DIFF_PAIRS.map(([diff, field]) => ({
      not: {
        required: [diff, field],
        properties: { [diff]: { not: { type: 'null' } }, [field]: { not: { type: 'null' } } },
      },
    })),
  });

/** /api/organizations (SPEC 4.3 and around it). */
export function organizationsRoutes(router: ApiRouter, service: OrganizationsService): ApiRouter {
  return router
    .route(
      {
        method: 'get',
        path: '',
        operationId: 'listOrganizations',
        summary: "The caller's organizations",
        security: 'APIKeyHeader',
        query: z.object({
          page_id: pageIdParam(LISTING, z.tuple([z.string()]))
            .optional()
            .meta({ type: 'string', description: 'next_page_id of the previous page' }),
          limit: pageLimit(),
        }),
        responses: {
          200: {
            description: 'A page',
            schema: z.object({ items: z.array(OrganizationSchema), next_page_id: z.string().nullable() }),
          },
        },
      },
      async (ctx, { query }) => {
        const page = await service.list(callerId(ctx), query.limit, query.page_id?.[0]);
        ctx.body = { items: page.items, next_page_id: page.last && encodeCursor(LISTING, [page.last]) };
      },
    )
    .route(
      {
        method: 'get',
        path: '/:org_id',
        operationId: 'getOrganization',
        summary: 'One organization of the caller',
        security: 'APIKeyHeader',
        params: OrgPathSchema,
        responses: {
          200: { description: 'The organization', schema: OrganizationSchema },
          403: errorResponse('Not a member'),
          404: errorResponse('No such organization'),
        },
      },
      async (ctx, { params }) => {
        ctx.body = await service.get(params.org_id, callerId(ctx));
      },
    )
    .route(
      {
        method: 'patch',
        path: '/:org_id',
        operationId: 'updateOrganization',
        summary: 'Change an organization (owners and admins); org_version goes up by one',
        security: 'APIKeyHeader',
        params: OrgPathSchema,
        body: OrganizationPatchSchema,
        responses: {
          200: { description: 'The organization after the change', schema: OrganizationSchema },
          403: errorResponse('Not an owner or admin'),
          404: errorResponse('No such organization'),
          409: errorResponse(
            "Changed meanwhile by someone else; or the change does not fit the stored settings (another variant's fields without its agent_kind)",
          ),
        },
      },
      async (ctx, { params, body }) => {
        ctx.body = await service.update(
          params.org_id,
          callerId(ctx),
          fromPublishedPatch(body as Record<string, unknown>),
        );
      },
    )
    .route(
      {
        method: 'post',
        path: '/:org_id/switch',
        operationId: 'switchOrganization',
        summary: 'Make one of your organizations the active one',
        description: 'The user is the one behind the credential, never one named in the request.',
        security: 'APIKeyHeader',
        params: OrgPathSchema,
        responses: {
          200: { description: 'The organization now active', schema: OrganizationSchema },
          403: errorResponse('The user is not a member'),
          404: errorResponse('The organization does not exist'),
          500: errorResponse('The switch failed'),
        },
      },
      async (ctx, { params }) => {
        ctx.body = await service.switch(params.org_id, callerId(ctx));
      },
    );
}
