/**
 * The parts of git host A's REST answers (GitHub-shaped) the searches read, and how each becomes the
 * published shape. Fields not named here are ignored; a missing or mistyped one is the host's failure.
 */
import { z } from 'zod';
import type { GitBranch, GitRepository, GitSuggestedTask, UserGitInfo } from '../schemas/git-searches';

const PROVIDER = 'git_host_a';
const id = z.union([z.number().int(), z.string()]);

const RepoShape = z.object({
  id,
  full_name: z.string(),
  private: z.boolean(),
  stargazers_count: z.number().int().nullish(),
  pushed_at: z.string().nullish(),
  default_branch: z.string().nullish(),
  owner: z.object({ type: z.string().nullish() }).nullish(),
});

export const shapes = {
  user: z.object({
    id,
    login: z.string(),
    avatar_url: z.string(),
    company: z.string().nullish(),
    name: z.string().nullish(),
    email: z.string().nullish(),
  }),
  repos: z.array(RepoShape),
  repoSearch: z.object({ items: z.array(RepoShape) }),
  installationRepos: z.object({ repositories: z.array(RepoShape) }),
  branches: z.array(
    z.object({ name: z.string(), commit: z.object({ sha: z.string() }), protected: z.boolean().optional() }),
  ),
  installations: z.object({ installations: z.array(z.object({ id })) }),
  orgs: z.array(z.object({ login: z.string() })),
  issueSearch: z.object({
    items: z.array(
      z.object({
        number: z.number().int(),
        title: z.string(),
        repository_url: z.string().regex(/\/repos\/[^/]+\/[^/]+$/),
        pull_request: z.unknown().optional(),
      }),
    ),
  }),
};

type Shape<K extends keyof typeof shapes> = z.output<(typeof shapes)[K]>;

export const toUser = (u: Shape<'user'>): UserGitInfo => ({
  id: String(u.id),
  login: u.login,
  avatar_url: u.avatar_url,
  company: u.company ?? null,
  name: u.name ?? null,
  email: u.email ?? null,
});

export const toRepository = (r: z.output<typeof RepoShape>): GitRepository => ({
  id: String(r.id),
  full_name: r.full_name,
  git_provider: PROVIDER,
  is_public: !r.private,
  stargazers_count: r.stargazers_count ?? null,
  link_header: null,
  pushed_at: r.pushed_at ?? null,
  owner_type: r.owner?.type == null ? null : r.owner.type === 'Organization' ? 'organization' : 'user',
  main_branch: r.default_branch ?? null,
});

export const toBranch = (b: Shape<'branches'>[number]): GitBranch => ({
  name: b.name,
  commit_sha: b.commit.sha,
  protected: b.protected ?? false,
  last_push_date: null,
});

export const toSuggestedTask = (i: Shape<'issueSearch'>['items'][number]): GitSuggestedTask => ({
  git_provider: PROVIDER,
  task_type: i.pull_request == null ? 'OPEN_ISSUE' : 'OPEN_PR',
  repo: /\/repos\/([^/]+\/[^/]+)$/.exec(i.repository_url)![1]!,
  issue_number: i.number,
  title: i.title,
});
