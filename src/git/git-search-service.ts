/**
 * The git searches of a user: on the provider they name (or, for the routes that name none, the first
 * served provider they stored a token for), with the token they stored, within one deadline per request.
 * A provider without a host here, or without the user's token, is refused with what to do instead.
 */
import { BadRequest, Conflict, InvalidInput } from '../errors';
import { GIT_PROVIDERS, type GitProvider } from '../schemas/app-conversations';
import type {
  GitBranch,
  GitOrganizations,
  GitPagePosition,
  GitRepository,
  GitSuggestedTask,
  UserGitInfo,
} from '../schemas/git-searches';
import type { UserSecretsStore } from '../store/user-secrets-store';
import type { GitHost, GitHostSession, HostListingPlan, RepositorySearch } from './git-host';
import { STORE_TOKEN_ROUTE } from './git-host-http';
import { collectPage, FILTERED_PAGE_SIZE, searchScope } from './git-paging';

export interface PageRequest {
  /** Where the page starts (the decoded page_id); the first page without it. */
  cursor?: GitPagePosition;
  limit: number;
}

export interface GitPage<T> {
  items: T[];
  next: GitPagePosition | null;
}

export class GitSearchService {
  private readonly hosts: Map<GitProvider, GitHost>;

  constructor(
    private readonly deps: {
      userSecrets: Pick<UserSecretsStore, 'providerTokens'>;
      hosts: readonly GitHost[];
      /** The bound of all of one request's calls to the host. */
      timeoutMs: number;
    },
  ) {
    this.hosts = new Map(deps.hosts.map((h) => [h.provider, h]));
  }

  /** The providers searched here, in SPEC order. */
  get served(): GitProvider[] {
    return GIT_PROVIDERS.filter((p) => this.hosts.has(p));
  }

  private async session(
    userId: string,
    named?: GitProvider,
  ): Promise<{ provider: GitProvider; session: GitHostSession }> {
    const served = this.served;
    if (named !== undefined && !this.hosts.has(named))
      throw new BadRequest(`Provider ${named} cannot be searched by this service; it searches ${served.join(', ')}`);
    const tokens = await this.deps.userSecrets.providerTokens(userId);
    const provider = named ?? served.find((p) => tokens[p]);
    const token = provider && tokens[provider]?.token;
    if (!provider || !token) {
      const wanted = provider ?? served.join(' or ');
      throw new Conflict(
        `No ${wanted} token is stored for you: store one with ${STORE_TOKEN_ROUTE}, body {"provider_tokens": {"${provider ?? served[0]}": {"token": "..."}}}`,
      );
    }
    return {
      provider,
      session: this.hosts
        .get(provider)!
        .session(token, { signal: AbortSignal.timeout(this.deps.timeoutMs), ms: this.deps.timeoutMs }),
    };
  }

  /** One page of `plan`; a page_id is valid only with the parameters of the search it came from. */
  private async page<T>(plan: HostListingPlan<T>, scope: string, req: PageRequest): Promise<GitPage<T>> {
    if (req.cursor && req.cursor.scope !== scope) {
      throw new InvalidInput([
        {
          loc: ['query', 'page_id'],
          msg: 'This page_id belongs to a search with other parameters: send the same ones with it',
          type: 'value_error',
        },
      ]);
    }
    const start = req.cursor ?? { part: 0, page: 1, perPage: plan.keep ? FILTERED_PAGE_SIZE : req.limit, skip: 0 };
    const got = await collectPage(plan, start, req.limit);
    return { items: got.items, next: got.next && { ...got.next, scope } };
  }

  async repositories(
    userId: string,
    provider: GitProvider,
    search: RepositorySearch,
    req: PageRequest,
  ): Promise<GitPage<GitRepository>> {
    const { session } = await this.session(userId, provider);
    const s: RepositorySearch = { ...search, query: search.query?.trim() || undefined };
    return this.page(
      session.repositories(s),
      searchScope('repositories', provider, s.query, s.installationId, s.sortOrder),
      req,
    );
  }

  async branches(
    userId: string,
    provider: GitProvider,
    repository: string,
    query: string,
    req: PageRequest,
  ): Promise<GitPage<GitBranch>> {
    const { session } = await this.session(userId, provider);
    return this.page(
      session.branches(repository, query.trim()),
      searchScope('branches', provider, repository, query.trim()),
      req,
    );
  }

  async installations(userId: string, provider: GitProvider, req: PageRequest): Promise<GitPage<string>> {
    const { session } = await this.session(userId, provider);
    return this.page(session.installations(), searchScope('installations', provider), req);
  }

  async suggestedTasks(userId: string, req: PageRequest): Promise<GitPage<GitSuggestedTask>> {
    const { provider, session } = await this.session(userId);
    return this.page(session.suggestedTasks(), searchScope('suggested-tasks', provider), req);
  }

  async gitInfo(userId: string): Promise<UserGitInfo> {
    return (await this.session(userId)).session.user();
  }

  async organizations(userId: string): Promise<GitOrganizations> {
    const { provider, session } = await this.session(userId);
    return { provider, organizations: await session.organizations() };
  }
}
