import { callerId } from '../state';
import { z } from 'zod';
import { modelKey, type ModelCatalog } from '../../orgs/model-catalog';
import type { UserSettingsService } from '../../orgs/user-settings-service';
import { queryInt } from '../../schemas/common';
import { encodeCursor, pageIdParam } from '../../schemas/page-cursor';
import { LLMModelPageSchema, LLMProviderPageSchema, queryBool, type LLMModel } from '../../schemas/settings';
import type { ApiRouter } from '../../web/route';

/** The published default page size of these two listings is 50 (1..100). */
const limit = () =>
  queryInt().pipe(z.number().int().gt(0).lte(100)).optional().default(50).meta({
    description: 'Maximum number of results in the page (1..100).',
    type: 'integer',
    minimum: 1,
    maximum: 100,
    default: 50,
  });

const MODELS = 'models';
const PROVIDERS = 'providers';
const text = (description: string) => z.string().max(300).optional().meta({ description });

/** One page of a sorted listing after the cursor's key. */
function page<T>(
  items: T[],
  key: (t: T) => string,
  after: string | undefined,
  n: number,
): { items: T[]; last: string | null } {
  const rest = after === undefined ? items : items.filter((t) => key(t) > after);
  const out = rest.slice(0, n);
  return { items: out, last: rest.length > n ? key(out[out.length - 1]!) : null };
}

/** /api/v1/config: what a user may pick from (the LLM models and their providers), as published. */
export function configRoutes(
  router: ApiRouter,
  deps: { settings: UserSettingsService; catalog: ModelCatalog },
): ApiRouter {
  const modelsOf = async (userId: string): Promise<LLMModel[]> =>
    deps.catalog.models(await deps.settings.effectiveLlm(userId));
  return router
    .route(
      {
        method: 'get',
        path: '/models/search',
        operationId: 'searchModels',
        summary: 'The LLM models the operator offers, and the one the caller uses',
        security: 'APIKeyHeader',
        query: z.object({
          page_id: pageIdParam(MODELS, z.tuple([z.string()]))
            .optional()
            .meta({ type: 'string', description: 'The next_page_id of the previous page.' }),
          limit: limit(),
          query: text('Filter models by name (case-insensitive substring match).'),
          verified__eq: queryBool().meta({ description: 'Filter by verified status.' }),
          provider__eq: text('Filter by provider name (exact match).'),
        }),
        responses: { 200: { description: 'A page of models', schema: LLMModelPageSchema } },
      },
      async (ctx, { query }) => {
        const needle = query.query?.toLowerCase();
        const models = (await modelsOf(callerId(ctx))).filter(
          (m) =>
            (needle === undefined || m.name.toLowerCase().includes(needle)) &&
            (query.verified__eq === undefined || m.verified === query.verified__eq) &&
            (query.provider__eq === undefined || m.provider === query.provider__eq),
        );
        const p = page(models, modelKey, query.page_id?.[0], query.limit);
        ctx.body = { items: p.items, next_page_id: p.last && encodeCursor(MODELS, [p.last]) };
      },
    )
    .route(
      {
        method: 'get',
        path: '/providers/search',
        operationId: 'searchProviders',
        summary: 'The providers of those models',
        security: 'APIKeyHeader',
        query: z.object({
          page_id: pageIdParam(PROVIDERS, z.tuple([z.string()]))
            .optional()
            .meta({ type: 'string', description: 'The next_page_id of the previous page.' }),
          limit: limit(),
          query: text('Filter providers by name (case-insensitive substring match).'),
          verified__eq: queryBool().meta({
            description: 'Filter by verified status (a provider is verified when one of its models is).',
          }),
        }),
        responses: { 200: { description: 'A page of providers', schema: LLMProviderPageSchema } },
      },
      async (ctx, { query }) => {
        const byName = new Map<string, boolean>();
        for (const m of await modelsOf(callerId(ctx)))
          if (m.provider) byName.set(m.provider, (byName.get(m.provider) ?? false) || m.verified);
        const needle = query.query?.toLowerCase();
        const providers = [...byName]
          .map(([name, verified]) => ({ name, verified }))
          .filter(
            (p) =>
              (needle === undefined || p.name.toLowerCase().includes(needle)) &&
              (query.verified__eq === undefined || p.verified === query.verified__eq),
          )
          .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
        const p = page(providers, (x) => x.name, query.page_id?.[0], query.limit);
        ctx.body = { items: p.items, next_page_id: p.last && encodeCursor(PROVIDERS, [p.last]) };
      },
    );
}
