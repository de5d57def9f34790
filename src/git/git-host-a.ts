/**
 * Git host A's searches through its REST API (GitHub-shaped, at GIT_HOST_A_API_URL): pages by `page` and
 * `per_page`, a next page when the Link header names one (its URL is not followed: we ask for page+1).
 * Branches are filtered here (the REST API lists them all); suggested tasks are the user's open pull
 * requests, then the open issues assigned to them, from the issue search.
 */
import type { z } from 'zod';
import { BadRequest, UpstreamFailed } from '../errors';
import { INSTALLATION_ID, type RepositorySortOrder } from '../schemas/git-searches';
import type { Deadline, GitHost, GitHostSession, HostListing, HostListingPlan, RepositorySearch } from './git-host';
import { shapes, toBranch, toRepository, toSuggestedTask, toUser } from './git-host-a-shapes';
import { getHostJson, hasNextLink, type HostCall } from './git-host-http';

const PROVIDER = 'git_host_a';
/** Pages of the user's organizations read at most (100 each). */
const MAX_ORG_PAGES = 10;

type Params = Record<string, string | number | undefined>;

const contains = (needle: string) => (name: string) => name.toLowerCase().includes(needle.toLowerCase());

/** A search sorts by stars, forks or update time, in either direction; the host's best match without one. */
const searchSort = (order: RepositorySortOrder | undefined): Params =>
  order ? { sort: order.split('-')[0], order: order.split('-')[1] } : {};

/** The user's own repositories sort only by time: updated-* as asked, else the last pushed first. */
const listingSort = (order: RepositorySortOrder | undefined): Params =>
  order?.startsWith('updated-')
    ? { sort: 'updated', direction: order.split('-')[1] }
    : { sort: 'pushed', direction: 'desc' };

export class GitHostA implements GitHost {
  readonly provider = PROVIDER;

  /** `apiUrl`: GIT_HOST_A_API_URL (https://api.github.com, or an enterprise server's /api/v3). */
  constructor(private readonly apiUrl: string) {}

  session(token: string, deadline: Deadline): GitHostSession {
    const headers = {
      Accept: 'application/vnd.github+json',
      'X-GitHub-Api-Version': '2022-11-28',
      'User-Agent': 'agent-control',
    };
    return new GitHostASession(this.apiUrl.replace(/\/+$/, ''), {
      provider: PROVIDER,
      token,
      signal: deadline.signal,
      timeoutMs: deadline.ms,
      headers,
    });
  }
}

class GitHostASession implements GitHostSession {
  constructor(
    private readonly base: string,
    private readonly call: HostCall,
  ) {}

  /** GET of `path`, its body read as `shape`. */
  private async get<S extends z.ZodType>(
    path: string,
    params: Params,
    shape: S,
    notFound?: string,
  ): Promise<{ body: z.output<S>; hasNext: boolean }> {
    const url = new URL(this.base + path);
    for (const [k, v] of Object.entries(params)) if (v !== undefined) url.searchParams.set(k, String(v));
    const answer = await getHostJson(url, { ...this.call, notFound });
    const parsed = shape.safeParse(answer.body);
    if (!parsed.success)
      throw new UpstreamFailed(
        `${PROVIDER} answered GET ${path} with a shape it does not have: ${parsed.error.issues[0]?.path.join('.') ?? ''} ${parsed.error.issues[0]?.message ?? ''}`.trim(),
      );
    return { body: parsed.data, hasNext: hasNextLink(answer.link) };
  }

  /** A listing of `path`, its items picked from each answer. */
  private listing<S extends z.ZodType, T>(
    path: string,
    params: Params,
    shape: S,
    items: (body: z.output<S>) => T[],
    notFound?: string,
  ): HostListing<T> {
    return async (page, perPage) => {
      const got = await this.get(path, { ...params, per_page: perPage, page }, shape, notFound);
      return { items: items(got.body), hasNext: got.hasNext };
    };
  }

  async user() {
    return toUser((await this.get('/user', {}, shapes.user)).body);
  }

  async organizations() {
    const names: string[] = [];
    for (let page = 1; page <= MAX_ORG_PAGES; page++) {
      const got = await this.get('/user/orgs', { per_page: 100, page }, shapes.orgs);
      names.push(...got.body.map((o) => o.login));
      if (!got.hasNext) break;
    }
    return names;
  }

  repositories({
    query,
    installationId,
    sortOrder,
  }: RepositorySearch): HostListingPlan<ReturnType<typeof toRepository>> {
    if (query !== undefined && installationId === undefined) {
      return {
        parts: [
          this.listing('/search/repositories', { q: query, ...searchSort(sortOrder) }, shapes.repoSearch, (b) =>
            b.items.map(toRepository),
          ),
        ],
      };
    }
    if (installationId !== undefined) {
      if (!INSTALLATION_ID.test(installationId))
        throw new BadRequest(
          `${PROVIDER} installation ids are numbers; got ${JSON.stringify(installationId.slice(0, 40))}`,
        );
      const notFound = `No installation ${installationId} that the stored ${PROVIDER} token can reach`;
      const part = this.listing(
        `/user/installations/${installationId}/repositories`,
        {},
        shapes.installationRepos,
        (b) => b.repositories.map(toRepository),
        notFound,
      );
      // The host cannot search one installation's repositories: they are filtered here by name.
      return query === undefined ? { parts: [part] } : { parts: [part], keep: (r) => contains(query)(r.full_name) };
    }
    return { parts: [this.listing('/user/repos', listingSort(sortOrder), shapes.repos, (b) => b.map(toRepository))] };
  }

  branches(repository: string, query: string) {
    const segments = repository.split('/');
    if (segments.length !== 2)
      throw new BadRequest(`${PROVIDER} repositories are named owner/repo; got ${JSON.stringify(repository)}`);
    const path = `/repos/${segments.map(encodeURIComponent).join('/')}/branches`;
    const notFound = `No repository ${repository} that the stored ${PROVIDER} token can see`;
    return {
      parts: [this.listing(path, {}, shapes.branches, (b) => b.map(toBranch), notFound)],
      keep: (b: { name: string }) => contains(query)(b.name),
    };
  }

  installations() {
    return {
      parts: [
        this.listing('/user/installations', {}, shapes.installations, (b) => b.installations.map((i) => String(i.id))),
      ],
    };
  }

  suggestedTasks() {
    const search = (q: string) =>
      this.listing('/search/issues', { q, sort: 'updated', order: 'desc' }, shapes.issueSearch, (b) =>
        b.items.map(toSuggestedTask),
      );
    return {
      parts: [
        search('is:pr is:open author:@me archived:false'),
        search('is:issue is:open assignee:@me archived:false'),
      ],
    };
  }
}
