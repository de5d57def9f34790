import { callerId } from '../state';
import type { GitPage, GitSearchService } from '../../git/git-search-service';
import {
  BranchSearchQuerySchema,
  encodeGitPageId,
  GIT_LISTINGS,
  GitBranchPageSchema,
  GitInstallationPageSchema,
  GitRepositoryPageSchema,
  GitSuggestedTaskPageSchema,
  InstallationSearchQuerySchema,
  RepositorySearchQuerySchema,
  SuggestedTaskSearchQuerySchema,
  type GitListing,
} from '../../schemas/git-searches';
import { errorResponse, type ApiRouter } from '../../web/route';

/** What every git search may answer besides its page. */
const refusals = {
  400: errorResponse('A provider this service does not search (the detail names those it does)'),
  409: errorResponse('The caller stored no token for the provider (the detail names the route that stores one)'),
  502: errorResponse('The git host refused the stored token or failed'),
  503: errorResponse('The git host did not answer in time, or its rate limit is reached (Retry-After)'),
};

const answer = <T>(listing: GitListing, page: GitPage<T>) => ({
  items: page.items,
  next_page_id: page.next && encodeGitPageId(listing, page.next),
});

/**
 * /api/v1/git: the caller's repositories, branches, app installations and suggested tasks on a code host,
 * read with the provider token they stored (published paths and shapes; SPEC.md's provider names).
 */
export function gitRoutes(router: ApiRouter, git: GitSearchService): ApiRouter {
  return router
    .route(
      {
        method: 'get',
        path: '/repositories/search',
        operationId: 'searchGitRepositories',
        summary: "Search repositories on a git host, or list the caller's own",
        description:
          "With query: the host's repository search (with installation_id: that installation's repositories whose name contains it). Without: the installation's repositories, or the caller's own.",
        security: 'APIKeyHeader',
        query: RepositorySearchQuerySchema,
        responses: {
          200: { description: 'A page of repositories', schema: GitRepositoryPageSchema },
          404: errorResponse('No such installation for the stored token'),
          ...refusals,
        },
      },
      async (ctx, { query }) => {
        const search = { query: query.query, installationId: query.installation_id, sortOrder: query.sort_order };
        const page = await git.repositories(callerId(ctx), query.provider, search, {
          cursor: query.page_id,
          limit: query.limit,
        });
        ctx.body = answer(GIT_LISTINGS.repositories, page);
      },
    )
    .route(
      {
        method: 'get',
        path: '/branches/search',
        operationId: 'searchGitBranches',
        summary: 'Branches of a repository whose name contains the query',
        security: 'APIKeyHeader',
        query: BranchSearchQuerySchema,
        responses: {
          200: { description: 'A page of branches', schema: GitBranchPageSchema },
          404: errorResponse('No such repository for the stored token'),
          ...refusals,
        },
      },
      async (ctx, { query }) => {
        const page = await git.branches(callerId(ctx), query.provider, query.repository, query.query, {
          cursor: query.page_id,
          limit: query.limit,
        });
        ctx.body = answer(GIT_LISTINGS.branches, page);
      },
    )
    .route(
      {
        method: 'get',
        path: '/installations/search',
        operationId: 'searchGitInstallations',
        summary: 'Ids of the app installations the caller can reach',
        security: 'APIKeyHeader',
        query: InstallationSearchQuerySchema,
        responses: {
          200: { description: 'A page of installation ids', schema: GitInstallationPageSchema },
          ...refusals,
        },
      },
      async (ctx, { query }) => {
        const page = await git.installations(callerId(ctx), query.provider, {
          cursor: query.page_id,
          limit: query.limit,
        });
        ctx.body = answer(GIT_LISTINGS.installations, page);
      },
    )
    .route(
      {
        method: 'get',
        path: '/suggested-tasks/search',
        operationId: 'searchGitSuggestedTasks',
        summary: "The caller's open pull requests, then the open issues assigned to them",
        description: 'On the first served provider the caller stored a token for.',
        security: 'APIKeyHeader',
        query: SuggestedTaskSearchQuerySchema,
        responses: {
          200: { description: 'A page of suggested tasks', schema: GitSuggestedTaskPageSchema },
          ...refusals,
        },
      },
      async (ctx, { query }) => {
        const page = await git.suggestedTasks(callerId(ctx), { cursor: query.page_id, limit: query.limit });
        ctx.body = answer(GIT_LISTINGS.suggestedTasks, page);
      },
    );
}
