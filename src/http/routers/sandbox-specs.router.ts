import { z } from 'zod';
import { pageLimit } from '../../schemas/common';
import { SandboxSpecPageSchema, SandboxSpecSchema, type SandboxSpecView } from '../../schemas/sandboxes';
import type { SandboxSpecsStore, StoredSandboxSpec } from '../../store/sandbox-specs-store';
import { encodeCursor, pageIdParam } from '../../schemas/page-cursor';
import type { ApiRouter } from '../../web/route';

const LISTING = 'sandbox-specs';

const view = (s: StoredSandboxSpec): SandboxSpecView => ({ ...s, created_at: s.created_at.toISOString() });

/** /api/v1/sandbox-specs (SPEC 4.5): the templates sandboxes start from. */
export function sandboxSpecsRoutes(router: ApiRouter, specs: SandboxSpecsStore): ApiRouter {
  return router
    .route(
      {
        method: 'get',
        path: '/search',
        operationId: 'searchSandboxSpecs',
        summary: 'List sandbox specs by id',
        security: 'APIKeyHeader',
        query: z.object({
          page_id: pageIdParam(LISTING, z.tuple([z.string()]))
            .optional()
            .meta({ type: 'string', description: 'The next_page_id of the previous page.' }),
          limit: pageLimit(),
        }),
        responses: { 200: { description: 'A page of specs', schema: SandboxSpecPageSchema } },
      },
      async (ctx, { query }) => {
        const page = await specs.page(query.limit, query.page_id?.[0]);
        ctx.body = { items: page.items.map(view), next_page_id: page.last && encodeCursor(LISTING, [page.last]) };
      },
    )
    .route(
      {
        method: 'get',
        path: '',
        operationId: 'getSandboxSpecs',
        summary: 'Get sandbox specs by id (null for an unknown id)',
        security: 'APIKeyHeader',
        query: z.object({
          id: z
            .array(z.string().min(1).max(100))
            .min(1)
            .max(100)
            .meta({ description: 'Spec ids (1..100); repeat the parameter.' }),
        }),
        responses: { 200: { description: 'The specs', schema: z.array(SandboxSpecSchema.nullable()) } },
      },
      async (ctx, { query }) => {
        const found = await specs.getMany(query.id);
        ctx.body = query.id.map((id) => {
          const s = found.get(id);
          return s ? view(s) : null;
        });
      },
    );
}
