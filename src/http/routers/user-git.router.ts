import { callerId } from '../state';
import type { GitSearchService } from '../../git/git-search-service';
import { GitOrganizationsSchema, UserGitInfoSchema } from '../../schemas/git-searches';
import { errorResponse, type ApiRouter } from '../../web/route';

const refusals = {
  409: errorResponse('The caller stored no token for a served provider (the detail names the route that stores one)'),
  502: errorResponse('The git host refused the stored token or failed'),
  503: errorResponse('The git host did not answer in time, or its rate limit is reached (Retry-After)'),
};

/** /api/v1/users/git-*: who the caller is on their git host, read with their stored provider token. */
export function userGitRoutes(router: ApiRouter, git: GitSearchService): ApiRouter {
  return router
    .route(
      {
        method: 'get',
        path: '/git-info',
        operationId: 'getCurrentUserGitInfo',
        summary: "The caller's account on their git host",
        description: 'On the first served provider the caller stored a token for.',
        security: 'APIKeyHeader',
        responses: { 200: { description: 'The account', schema: UserGitInfoSchema }, ...refusals },
      },
      async (ctx) => {
        ctx.body = await git.gitInfo(callerId(ctx));
      },
    )
    .route(
      {
        method: 'get',
        path: '/git-organizations',
        operationId: 'getCurrentUserGitOrganizations',
        summary: 'The organizations the caller belongs to on their git host',
        description: 'On the first served provider the caller stored a token for (at most 1000).',
        security: 'APIKeyHeader',
        responses: {
          200: { description: 'The provider and its organizations', schema: GitOrganizationsSchema },
          ...refusals,
        },
      },
      async (ctx) => {
        ctx.body = await git.organizations(callerId(ctx));
      },
    );
}
