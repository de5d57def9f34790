/**
 * A loopback stand-in for git host A's REST API as the git searches read it, in GitHub's shapes: `GET
 * /user`, `/user/repos`, `/user/orgs`, `/user/installations`, `/user/installations/{id}/repositories`,
 * `/repos/{owner}/{repo}/branches`, `/search/repositories?q=` and `/search/issues?q=` (`is:pr`,
 * `is:issue`, `author:@me`, `assignee:@me`). Every listing pages by `page` and `per_page` (default 30,
 * at most 100) and says there is more with a `Link` header (`rel="next"`, as GitHub does).
 *
 * A request without `Authorization: Bearer <token>` of a known token is 401, and that answer's message
 * echoes the token it was given (to show it never reaches the api's answers). `fail` answers every
 * request with a status, `hang` answers none, `huge` answers 5 MiB.
 */
import http from 'node:http';
import { LoopbackServer } from './loopback-server';

export interface StandInRepo {
  id: number;
  full_name: string;
  private: boolean;
  owner: { login: string; type: 'User' | 'Organization' };
  stargazers_count: number;
  forks_count: number;
  pushed_at: string;
  updated_at: string;
  default_branch: string;
}

export interface StandInIssue {
  repo: string;
  number: number;
  title: string;
  pull: boolean;
  author: string;
  assignee: string | null;
  open: boolean;
}

export interface SeenRequest {
  path: string;
  query: URLSearchParams;
  authorization: string | undefined;
}

const answerJson = (
  res: http.ServerResponse,
  status: number,
  json: unknown,
  headers: Record<string, string> = {},
): void => {
  res.writeHead(status, { 'Content-Type': 'application/json; charset=utf-8', ...headers }).end(JSON.stringify(json));
};

export const standInRepo = (id: number, fullName: string, o: Partial<StandInRepo> = {}): StandInRepo => ({
  id,
  full_name: fullName,
  private: false,
  owner: { login: fullName.split('/')[0]!, type: 'User' },
  stargazers_count: 0,
  forks_count: 0,
  pushed_at: '2024-01-01T00:00:00Z',
  updated_at: '2024-01-01T00:00:00Z',
  default_branch: 'main',
  ...o,
});

export class GitHostApiStandIn extends LoopbackServer {
  /** token -> login */
  readonly tokens = new Map<string, string>();
  readonly users = new Map<
    string,
    { id: number; avatar_url: string; name: string | null; company: string | null; email: string | null }
  >();
  /** login -> the repositories listed as theirs */
  readonly ownRepos = new Map<string, StandInRepo[]>();
  /** Every repository the search finds. */
  readonly publicRepos: StandInRepo[] = [];
  readonly orgs = new Map<string, string[]>();
  /** login -> installations, each with its repositories */
  readonly installations = new Map<string, { id: number; repos: StandInRepo[] }[]>();
  /** full_name -> branches */
  readonly branches = new Map<string, { name: string; sha: string; protected: boolean }[]>();
  readonly issues: StandInIssue[] = [];
  readonly seen: SeenRequest[] = [];
  fail: number | null = null;
  hang = false;
  huge = false;
  private readonly hung = new Set<http.ServerResponse>();

  override async close(): Promise<void> {
    for (const res of this.hung) res.destroy();
    this.hung.clear();
    await super.close();
  }

  protected async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', this.url);
    this.seen.push({ path: url.pathname, query: url.searchParams, authorization: req.headers.authorization });
    if (this.hang) {
      this.hung.add(res);
      return;
    }
    if (this.huge) {
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify([{ login: 'x'.repeat(5 * 1024 * 1024) }]));
      return;
    }
    if (this.fail) return answerJson(res, this.fail, { message: 'Server Error' });
    const given = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1];
    const login = given === undefined ? undefined : this.tokens.get(given);
    if (!login)
      return answerJson(res, 401, {
        message: `Bad credentials: ${given ?? 'none'}`,
        documentation_url: 'https://docs.example/rest',
      });
    this.route(url, login, res);
  }

  private route(url: URL, login: string, res: http.ServerResponse): void {
    const p = url.pathname;
    const q = url.searchParams;
    const notFound = () =>
      answerJson(res, 404, { message: 'Not Found', documentation_url: 'https://docs.example/rest' });
    if (p === '/user') return answerJson(res, 200, { login, ...this.users.get(login)!, type: 'User' });
    if (p === '/user/repos') return this.page(url, res, this.sortedOwn(login, q), (items) => items);
    if (p === '/user/orgs')
      return this.page(
        url,
        res,
        (this.orgs.get(login) ?? []).map((o, i) => ({ login: o, id: 1000 + i })),
        (items) => items,
      );
    if (p === '/user/installations') {
      const all = (this.installations.get(login) ?? []).map((i) => ({ id: i.id, account: { login } }));
      return this.page(url, res, all, (items) => ({ total_count: all.length, installations: items }));
    }
    const inst = /^\/user\/installations\/(\d+)\/repositories$/.exec(p);
    if (inst) {
      const found = (this.installations.get(login) ?? []).find((i) => i.id === Number(inst[1]));
      if (!found) return notFound();
      return this.page(url, res, found.repos, (items) => ({ total_count: found.repos.length, repositories: items }));
    }
    const br = /^\/repos\/([^/]+)\/([^/]+)\/branches$/.exec(p);
    if (br) {
      const list = this.branches.get(`${decodeURIComponent(br[1]!)}/${decodeURIComponent(br[2]!)}`);
      if (!list) return notFound();
      return this.page(
        url,
        res,
        list.map((b) => ({ name: b.name, commit: { sha: b.sha, url: 'x' }, protected: b.protected })),
        (items) => items,
      );
    }
    if (p === '/search/repositories') {
      const needle = (q.get('q') ?? '').toLowerCase();
      const found = this.publicRepos.filter((r) => r.full_name.toLowerCase().includes(needle));
      const key = { stars: 'stargazers_count', forks: 'forks_count', updated: 'updated_at' }[q.get('sort') ?? ''] as
        keyof StandInRepo | undefined;
      if (key)
        found.sort((a, b) => (a[key] < b[key] ? -1 : a[key] > b[key] ? 1 : 0) * (q.get('order') === 'asc' ? 1 : -1));
      return this.page(url, res, found, (items) => ({ total_count: found.length, incomplete_results: false, items }));
    }
    if (p === '/search/issues') {
      const terms = (q.get('q') ?? '').split(/\s+/);
      const found = this.issues.filter(
        (i) =>
          (!terms.includes('is:pr') || i.pull) &&
          (!terms.includes('is:issue') || !i.pull) &&
          (!terms.includes('is:open') || i.open) &&
          (!terms.includes('author:@me') || i.author === login) &&
          (!terms.includes('assignee:@me') || i.assignee === login),
      );
      const items = found.map((i) => ({
        number: i.number,
        title: i.title,
        repository_url: `${this.url}/repos/${i.repo}`,
        state: i.open ? 'open' : 'closed',
        ...(i.pull ? { pull_request: { url: `${this.url}/repos/${i.repo}/pulls/${i.number}` } } : {}),
      }));
      return this.page(url, res, items, (page) => ({
        total_count: items.length,
        incomplete_results: false,
        items: page,
      }));
    }
    notFound();
  }

  private sortedOwn(login: string, q: URLSearchParams): StandInRepo[] {
    const key = q.get('sort') === 'updated' ? 'updated_at' : q.get('sort') === 'pushed' ? 'pushed_at' : 'full_name';
    const dir = q.get('direction') === 'asc' ? 1 : -1;
    return [...(this.ownRepos.get(login) ?? [])].sort((a, b) => (a[key] < b[key] ? -1 : a[key] > b[key] ? 1 : 0) * dir);
  }

  /** One page of `all` as GitHub pages it, with its Link header. */
  private page<T>(url: URL, res: http.ServerResponse, all: T[], wrap: (items: T[]) => unknown): void {
    const perPage = Math.min(100, Math.max(1, Number(url.searchParams.get('per_page') ?? 30)));
    const page = Math.max(1, Number(url.searchParams.get('page') ?? 1));
    const last = Math.max(1, Math.ceil(all.length / perPage));
    const link = (n: number, rel: string) => {
      const u = new URL(url);
      u.searchParams.set('page', String(n));
      u.searchParams.set('per_page', String(perPage));
      return `<${u}>; rel="${rel}"`;
    };
    const links = [
      ...(page > 1 ? [link(page - 1, 'prev'), link(1, 'first')] : []),
      ...(page < last ? [link(page + 1, 'next'), link(last, 'last')] : []),
    ];
    answerJson(
      res,
      200,
      wrap(all.slice((page - 1) * perPage, page * perPage)),
      links.length ? { Link: links.join(', ') } : {},
    );
  }
}
