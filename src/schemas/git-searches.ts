/**
 * The git searches of the published OpenHands Cloud API 0.0.1 (`/api/v1/git/.../search`,
 * `/api/v1/users/git-info`, `/api/v1/users/git-organizations`): what a caller finds on a code host with
 * their stored provider token. Shapes as published, with SPEC.md's provider names (git_host_a, ...).
 */
import { z } from 'zod';
import { GitProviderSchema, SuggestedTaskTypeSchema } from './app-conversations';
import { queryInt } from './common';
import { encodeCursor, pageIdParam } from './page-cursor';

/**
 * The providers whose hosts this service searches (src/composition/services.ts builds one host for each):
 * a search names one of them, and the document lists no other, so a client (or a fuzzer) is told before it
 * asks. Every other SPEC provider is still a provider of stored tokens and of starts.
 */
export const SEARCHED_GIT_PROVIDERS = ['git_host_a'] as const;
const SearchedGitProviderSchema = z.enum(SEARCHED_GIT_PROVIDERS).meta({
  description: 'A provider whose host this service searches.',
});

/** Published SortOrder: a repository search's sort field and direction. */
export const REPOSITORY_SORT_ORDERS = [
  'stars-desc',
  'stars-asc',
  'forks-desc',
  'forks-asc',
  'updated-desc',
  'updated-asc',
] as const;
export const RepositorySortOrderSchema = z.enum(REPOSITORY_SORT_ORDERS).meta({ id: 'GitRepositorySortOrder' });
export type RepositorySortOrder = z.infer<typeof RepositorySortOrderSchema>;

export const OWNER_TYPES = ['user', 'organization'] as const;

export const GitRepositorySchema = z
  .object({
    id: z.string(),
    full_name: z.string(),
    git_provider: GitProviderSchema,
    is_public: z.boolean(),
    stargazers_count: z.number().int().nullable().optional(),
    link_header: z.string().nullable().optional(),
    pushed_at: z.string().nullable().optional(),
    owner_type: z.enum(OWNER_TYPES).nullable().optional(),
    main_branch: z.string().nullable().optional(),
  })
  .meta({ id: 'GitRepository' });
export type GitRepository = z.infer<typeof GitRepositorySchema>;

export const GitBranchSchema = z
  .object({
    name: z.string(),
    commit_sha: z.string(),
    protected: z.boolean(),
    last_push_date: z.string().nullable().optional(),
  })
  .meta({ id: 'GitBranch' });
export type GitBranch = z.infer<typeof GitBranchSchema>;

export const GitSuggestedTaskSchema = z
  .object({
    git_provider: GitProviderSchema,
    task_type: SuggestedTaskTypeSchema,
    repo: z.string(),
    issue_number: z.number().int(),
    title: z.string(),
  })
  .meta({
    id: 'GitSuggestedTask',
    description: 'An open pull request of the caller (OPEN_PR) or an open issue assigned to them (OPEN_ISSUE).',
  });
export type GitSuggestedTask = z.infer<typeof GitSuggestedTaskSchema>;

export const UserGitInfoSchema = z
  .object({
    id: z.string(),
    login: z.string(),
    avatar_url: z.string(),
    company: z.string().nullable(),
    name: z.string().nullable(),
    email: z.string().nullable(),
  })
  .meta({ id: 'UserGitInfo' });
export type UserGitInfo = z.infer<typeof UserGitInfoSchema>;

export const GitOrganizationsSchema = z
  .object({ provider: GitProviderSchema, organizations: z.array(z.string()) })
  .meta({ id: 'GitOrganizationsResponse' });
export type GitOrganizations = z.infer<typeof GitOrganizationsSchema>;

const pageOf = <T extends z.ZodType>(item: T, id: string) =>
  z
    .object({
      items: z.array(item),
      next_page_id: z.string().nullable().meta({ description: 'Pass as page_id for the next page; null at the end.' }),
    })
    .meta({ id });

export const GitRepositoryPageSchema = pageOf(GitRepositorySchema, 'GitRepositoryPage');
export const GitBranchPageSchema = pageOf(GitBranchSchema, 'GitBranchPage');
export const GitInstallationPageSchema = pageOf(z.string(), 'GitInstallationPage');
export const GitSuggestedTaskPageSchema = pageOf(GitSuggestedTaskSchema, 'GitSuggestedTaskPage');

// ---- paging ----

/** The listings a page_id belongs to: a cursor of one is refused by the others. */
export const GIT_LISTINGS = {
  repositories: 'git-repositories',
  branches: 'git-branches',
  installations: 'git-installations',
  suggestedTasks: 'git-suggested-tasks',
} as const;
export type GitListing = (typeof GIT_LISTINGS)[keyof typeof GIT_LISTINGS];

/**
 * Where the next page starts on the host: the part of the walk (suggested tasks read pull requests, then
 * issues), the host's page number and page size, the items of that host page already answered, and a
 * digest of the search's parameters (a page_id sent with other parameters is refused).
 */
export interface GitPagePosition {
  part: number;
  page: number;
  perPage: number;
  skip: number;
  scope: string;
}

const int = (min: number, max: number) => z.number().int().gte(min).lte(max);

export const gitPageIdParam = (listing: GitListing) =>
  pageIdParam(
    listing,
    z.tuple([int(0, 9), int(1, 100_000), int(1, 100), int(0, 99), z.string().regex(/^[0-9a-f]{16}$/)]),
  )
    .transform((key): GitPagePosition | undefined => {
      if (!key) return undefined;
      const [part, page, perPage, skip, scope] = key;
      return { part, page, perPage, skip, scope };
    })
    .optional()
    .meta({
      type: 'string',
      description: 'The next_page_id of the previous page, sent with the same other parameters.',
    });

export const encodeGitPageId = (listing: GitListing, p: GitPagePosition): string =>
  encodeCursor(listing, [p.part, p.page, p.perPage, p.skip, p.scope]);

/** Published limits: 1..100, default 100 for repositories and installations, 30 for branches and suggested tasks. */
export const gitPageLimit = (byDefault: 30 | 100) =>
  queryInt().pipe(z.number().int().gt(0).lte(100)).optional().default(byDefault).meta({
    description: 'Maximum number of results in the page (1..100).',
    type: 'integer',
    minimum: 1,
    maximum: 100,
    default: byDefault,
  });

// ---- queries ----

const text = (max: number, description: string) => z.string().max(max).meta({ description });

/** owner/repo (more segments for hosts with nested groups); no `.` or `..` segment. */
const repositoryName = z
  .string()
  .max(300)
  .regex(/^[\w.-]+(\/[\w.-]+)+$/, { error: 'A repository name as owner/repo' })
  .refine((v) => v.split('/').every((s) => s !== '.' && s !== '..'), { error: 'A repository name as owner/repo' })
  .meta({ description: 'Repository name in format owner/repo.' });

/** Installations of the searched hosts (git host A's apps) are numbered. */
export const INSTALLATION_ID = /^\d{1,20}$/;

export const RepositorySearchQuerySchema = z.object({
  provider: SearchedGitProviderSchema,
  query: text(
    256,
    "Search the host for repositories matching this; without it, the caller's own repositories.",
  ).optional(),
  installation_id: z
    .string()
    .regex(INSTALLATION_ID, { error: 'an installation id: 1 to 20 digits' })
    .optional()
    .meta({ description: 'Only the repositories of this installation (app): its number, 1 to 20 digits.' }),
  page_id: gitPageIdParam(GIT_LISTINGS.repositories),
  limit: gitPageLimit(100),
  sort_order: RepositorySortOrderSchema.optional().meta({
    description: "Sort order of a search (stars, forks, updated); the caller's own listing takes only updated-*.",
  }),
});
export type RepositorySearchQuery = z.output<typeof RepositorySearchQuerySchema>;

export const BranchSearchQuerySchema = z.object({
  provider: SearchedGitProviderSchema,
  repository: repositoryName,
  query: text(256, 'Branch names containing this (case-insensitive).'),
  page_id: gitPageIdParam(GIT_LISTINGS.branches),
  limit: gitPageLimit(30),
});

export const InstallationSearchQuerySchema = z.object({
  provider: SearchedGitProviderSchema,
  page_id: gitPageIdParam(GIT_LISTINGS.installations),
  limit: gitPageLimit(100),
});

export const SuggestedTaskSearchQuerySchema = z.object({
  page_id: gitPageIdParam(GIT_LISTINGS.suggestedTasks),
  limit: gitPageLimit(30),
});
