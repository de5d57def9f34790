/**
 * The runtime's git views (behind the session key), at the reference agent server's paths:
 * `GET /api/git/changes/{path}` and `GET /api/git/diff/{path}`, `{path}` URL-encoded (one path segment,
 * absolute or relative to the working directory), with an optional `ref` (default HEAD).
 * A path outside the working directory, not in a repository, or a bad ref answers 400; a path that
 * does not exist 404; a file over the limit 413; a slow or busy git 503.
 */
import { z } from 'zod';
import { HttpError } from '../web/errors';
import type { ApiRouter } from '../web/route';
import { ErrorResponseSchema } from '../schemas/errors';
import { GitViewError, type GitViewFailure } from './git-view-errors';
import { GIT_REF_PATTERN, GitChangeSchema, GitDiffSchema, type GitViews } from './git-views';

const error = (description: string) => ({ description, schema: ErrorResponseSchema });

const GitPathSchema = z.object({
  path: z
    .string()
    .min(1)
    .max(4096)
    .refine((v) => !v.includes('\0'), { error: 'a path may not contain the NUL character (U+0000)' })
    .meta({ description: 'URL-encoded; absolute, or relative to the working directory.' }),
});

const GitRefQuerySchema = z.object({
  ref: z
    .string()
    .min(1)
    .max(200)
    .regex(
      GIT_REF_PATTERN,
      'a ref is a branch, tag or commit name (letters, digits and . _ / ~ ^ @ { } -), and does not start with -',
    )
    .optional()
    .meta({ description: 'The ref to compare with. Default: HEAD.' }),
});

const STATUS: Record<GitViewFailure, number> = {
  outside: 400,
  not_found: 404,
  not_a_repository: 400,
  not_a_file: 400,
  unknown_ref: 400,
  too_large: 413,
  timeout: 503,
  busy: 503,
  unavailable: 503,
};

async function viewed<T>(f: () => Promise<T>): Promise<T> {
  try {
    return await f();
  } catch (e) {
    if (e instanceof GitViewError) throw new HttpError(STATUS[e.reason], e.message);
    throw e;
  }
}

export function gitRoutes(router: ApiRouter, views: GitViews): ApiRouter {
  const failures = {
    400: error('Outside the working directory, not in a git repository, or an unknown ref'),
    404: error('No such path (diff: neither at the ref nor in the working tree)'),
    413: error('The file (or the list of changes) is larger than the limit'),
    503: error('git is missing, busy or too slow'),
  };
  return router
    .route(
      {
        method: 'get',
        path: '/api/git/changes/:path',
        operationId: 'gitChanges',
        summary:
          "The files a repository's working tree changed against the ref (untracked ones are ADDED), relative to its root",
        security: 'SessionAPIKeyHeader',
        params: GitPathSchema,
        query: GitRefQuerySchema,
        responses: { 200: { description: 'The changes, by path', schema: z.array(GitChangeSchema) }, ...failures },
      },
      async (ctx, { params, query }) => {
        ctx.body = await viewed(() => views.changes(params.path, query.ref));
      },
    )
    .route(
      {
        method: 'get',
        path: '/api/git/diff/:path',
        operationId: 'gitDiff',
        summary: 'One file at the ref (original, null when absent there) and now (modified, null when deleted)',
        security: 'SessionAPIKeyHeader',
        params: GitPathSchema,
        query: GitRefQuerySchema,
        responses: { 200: { description: 'Both contents', schema: GitDiffSchema }, ...failures },
      },
      async (ctx, { params, query }) => {
        ctx.body = await viewed(() => views.diff(params.path, query.ref));
      },
    );
}
