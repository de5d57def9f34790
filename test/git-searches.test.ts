/**
 * The published git searches (repositories, branches, installations, suggested tasks, users/git-info,
 * users/git-organizations) through the real api, against a loopback stand-in of git host A's REST API
 * (GitHub's shapes and paging). Every answer goes through the client generated from the published
 * document and is checked against its schema (SPEC's provider names put in); every listing is walked
 * to its end; a caller without a token, another provider, and a host that refuses, fails, hangs or
 * answers too much get a clear 4xx or 502/503; the token never shows in an answer or a log line.
 */
import pino from 'pino';
import { collectPage, MAX_HOST_PAGES_PER_ANSWER } from '../src/git/git-paging';
import type { HostListing } from '../src/git/git-host';
import { startTestApi, type TestApi } from './helpers/api';
import { testConfig } from './helpers/env';
import { GitHostApiStandIn, standInRepo } from './helpers/git-host-api-stand-in';
import { publishedClient } from './helpers/published-client';
import { componentValidator, publishedDocument, withSpecProviderNames } from './helpers/published-schemas';

const PUBLISHED = publishedDocument();
const TIMEOUT_MS = 1500;
const STORE_ROUTE = 'POST /api/v1/secrets/git-providers';
const TOKEN = 'gho_never-shown-0123456789abcdef';
const UNKNOWN_TOKEN = 'gho_never-shown-revoked-9876543210';

/** The published component schemas with SPEC.md's provider names, as a validator. */
const publishedValidator = () => componentValidator(withSpecProviderNames(publishedDocument()));

describe('collectPage (pages over host pages)', () => {
  const listing =
    (all: number[]): HostListing<number> =>
    async (page, perPage) => ({
      items: all.slice((page - 1) * perPage, page * perPage),
      hasNext: page * perPage < all.length,
    });
  const range = (n: number, from = 0) => Array.from({ length: n }, (_, i) => from + i);

  it('follows the host pages one for one when the host filters', async () => {
    const plan = { parts: [listing(range(5))] };
    expect(await collectPage(plan, { part: 0, page: 1, perPage: 2, skip: 0 }, 2)).toEqual({
      items: [0, 1],
      next: { part: 0, page: 2, perPage: 2, skip: 0 },
    });
    expect(await collectPage(plan, { part: 0, page: 3, perPage: 2, skip: 0 }, 2)).toEqual({ items: [4], next: null });
  });

  it('starts a page mid host page where a filtered one stopped, and walks the parts in turn', async () => {
    const even = { parts: [listing(range(10))], keep: (n: number) => n % 2 === 0 };
    expect(await collectPage(even, { part: 0, page: 1, perPage: 4, skip: 0 }, 3)).toEqual({
      items: [0, 2, 4],
      next: { part: 0, page: 2, perPage: 4, skip: 2 },
    });
    expect(await collectPage(even, { part: 0, page: 2, perPage: 4, skip: 2 }, 3)).toEqual({
      items: [6, 8],
      next: null,
    });
    const two = { parts: [listing([1, 2, 3]), listing([10, 11])] };
    expect(await collectPage(two, { part: 0, page: 1, perPage: 2, skip: 0 }, 4)).toEqual({
      items: [1, 2, 3, 10],
      next: { part: 1, page: 1, perPage: 2, skip: 1 },
    });
    expect(await collectPage(two, { part: 1, page: 1, perPage: 2, skip: 1 }, 4)).toEqual({ items: [11], next: null });
  });

  it('reads a bounded number of host pages for one answer', async () => {
    let reads = 0;
    const counted: HostListing<number> = async (page, perPage) => {
      reads++;
      return listing(range(10_000))(page, perPage);
    };
    const got = await collectPage(
      { parts: [counted], keep: () => false },
      { part: 0, page: 1, perPage: 100, skip: 0 },
      10,
    );
    expect(got).toEqual({ items: [], next: { part: 0, page: MAX_HOST_PAGES_PER_ANSWER + 1, perPage: 100, skip: 0 } });
    expect(reads).toBe(MAX_HOST_PAGES_PER_ANSWER);
  });
});

describe('git searches', () => {
  let host: GitHostApiStandIn;
  let t: TestApi;
  let user: { userId: string; key: string };
  const logs: string[] = [];
  const answers: string[] = [];
  const conforms = publishedValidator();
  /** An answer decodes as the published schema says, and is kept for the final grep. */
  const decodes = (schema: string, value: unknown) => {
    answers.push(JSON.stringify(value));
    expect({ schema, errors: conforms(schema, value) }).toEqual({ schema, errors: [] });
  };
  const call = async (p: string, key = user.key) => {
    const r = await t.request('GET', p, { key });
    answers.push(JSON.stringify(r.body), JSON.stringify([...r.headers]));
    return r;
  };
  const api = () => publishedClient(t.url, user.key);
  const A = 'git_host_a' as any; // the published client knows the product name; SPEC.md's wins
  /** Every page of a listing, walked by next_page_id; the host's per_page of each call is recorded. */
  async function walk<T>(
    schema: string,
    get: (pageId: string | undefined) => Promise<{ data?: { items: T[]; next_page_id?: string | null } }>,
  ) {
    const pages: T[][] = [];
    let pageId: string | undefined;
    do {
      const r = await get(pageId);
      decodes(schema, r.data);
      pages.push(r.data!.items);
      pageId = r.data!.next_page_id ?? undefined;
    } while (pageId && pages.length < 50);
    return pages;
  }

  beforeAll(async () => {
    host = await new GitHostApiStandIn().start();
    host.tokens.set(TOKEN, 'octo-a');
    host.users.set('octo-a', {
      id: 4242,
      avatar_url: 'https://avatars.example/u/4242',
      name: 'Octo A',
      company: null,
      email: 'octo@example.com',
    });
    host.ownRepos.set('octo-a', [
      standInRepo(1, 'octo-a/one', { pushed_at: '2024-01-05T00:00:00Z' }),
      standInRepo(2, 'octo-a/two', { pushed_at: '2024-01-04T00:00:00Z', private: true }),
      standInRepo(3, 'acme/three', {
        pushed_at: '2024-01-03T00:00:00Z',
        owner: { login: 'acme', type: 'Organization' },
        default_branch: 'trunk',
      }),
      standInRepo(4, 'octo-a/four', { pushed_at: '2024-01-02T00:00:00Z' }),
      standInRepo(5, 'octo-a/five', { pushed_at: '2024-01-01T00:00:00Z' }),
    ]);
    host.publicRepos.push(
      ...[3, 70, 12, 5, 40, 1, 9].map((stars, i) =>
        standInRepo(100 + i, `world/lib-${i}`, { stargazers_count: stars }),
      ),
      standInRepo(200, 'world/other'),
    );
    host.orgs.set('octo-a', ['acme', 'widgets']);
    const acme = ['acme/api', 'acme/web', 'acme/api-docs', 'acme/ops'].map((n, i) =>
      standInRepo(300 + i, n, { owner: { login: 'acme', type: 'Organization' } }),
    );
    host.installations.set('octo-a', [
      { id: 11, repos: acme },
      { id: 12, repos: [] },
      { id: 13, repos: [] },
    ]);
    host.branches.set(
      'octo-a/big',
      Array.from({ length: 250 }, (_, i) => ({
        name: i % 2 === 0 ? `feature/${i}` : `fix/${i}`,
        sha: `sha${i}`,
        protected: i === 0,
      })),
    );
    host.issues.push(
      { repo: 'octo-a/one', number: 1, title: 'PR one', pull: true, author: 'octo-a', assignee: null, open: true },
      { repo: 'octo-a/one', number: 2, title: 'PR two', pull: true, author: 'octo-a', assignee: null, open: true },
      { repo: 'acme/api', number: 7, title: 'PR three', pull: true, author: 'octo-a', assignee: null, open: true },
      { repo: 'acme/api', number: 8, title: 'closed PR', pull: true, author: 'octo-a', assignee: null, open: false },
      {
        repo: 'acme/web',
        number: 9,
        title: "someone else's PR",
        pull: true,
        author: 'other',
        assignee: 'octo-a',
        open: true,
      },
      {
        repo: 'acme/web',
        number: 20,
        title: 'Issue one',
        pull: false,
        author: 'other',
        assignee: 'octo-a',
        open: true,
      },
      {
        repo: 'acme/ops',
        number: 21,
        title: 'Issue two',
        pull: false,
        author: 'other',
        assignee: 'octo-a',
        open: true,
      },
      {
        repo: 'acme/ops',
        number: 22,
        title: "someone else's issue",
        pull: false,
        author: 'octo-a',
        assignee: 'other',
        open: true,
      },
    );
    const logger = pino({ level: 'debug' }, { write: (line: string) => void logs.push(line) });
    t = await startTestApi(
      testConfig({ GIT_HOST_A_API_URL: host.url, GIT_HOST_API_TIMEOUT_MS: String(TIMEOUT_MS) }),
      logger,
    );
    user = await t.newUser();
    const stored = await api().POST('/api/v1/secrets/git-providers', {
      body: { provider_tokens: { git_host_a: { token: TOKEN } } } as any,
    });
    expect(stored.response.status).toBe(200);
  });

  afterAll(async () => {
    await t?.close();
    await host?.close();
  });

  beforeEach(() => {
    host.fail = null;
    host.hang = false;
    host.huge = false;
  });

  const routes = [
    '/api/v1/git/repositories/search?provider=git_host_a',
    '/api/v1/git/branches/search?provider=git_host_a&repository=octo-a/big&query=x',
    '/api/v1/git/installations/search?provider=git_host_a',
    '/api/v1/git/suggested-tasks/search',
    '/api/v1/users/git-info',
    '/api/v1/users/git-organizations',
  ];

  it('the OpenAPI document describes each published path, and each is 401 without a key', async () => {
    const doc = (await t.request('GET', '/openapi.json')).body;
    for (const p of [
      '/api/v1/git/repositories/search',
      '/api/v1/git/branches/search',
      '/api/v1/git/installations/search',
      '/api/v1/git/suggested-tasks/search',
      '/api/v1/users/git-info',
      '/api/v1/users/git-organizations',
    ]) {
      expect({ p, published: Boolean(PUBLISHED.paths[p]?.get), ours: Boolean(doc.paths[p]?.get) }).toEqual({
        p,
        published: true,
        ours: true,
      });
    }
    for (const p of routes) expect({ p, status: (await t.request('GET', p)).status }).toEqual({ p, status: 401 });
  });

  it('users/git-info and users/git-organizations: the account behind the stored token', async () => {
    const info = await api().GET('/api/v1/users/git-info');
    decodes('UserGitInfo', info.data);
    expect(info.data).toEqual({
      id: '4242',
      login: 'octo-a',
      avatar_url: 'https://avatars.example/u/4242',
      company: null,
      name: 'Octo A',
      email: 'octo@example.com',
    });
    const orgs = await api().GET('/api/v1/users/git-organizations');
    decodes('GitOrganizationsResponse', orgs.data);
    expect(orgs.data).toEqual({ provider: 'git_host_a', organizations: ['acme', 'widgets'] });
    expect(host.seen.find((s) => s.path === '/user')?.authorization).toBe(`Bearer ${TOKEN}`);
  });

  it("repositories: the caller's own, last pushed first, paged by the host's pages to the end", async () => {
    const pages = await walk('RepositoryPage', (page_id) =>
      api().GET('/api/v1/git/repositories/search', { params: { query: { provider: A, limit: 2, page_id } } }),
    );
    expect(pages.map((p) => p.map((r) => r.full_name))).toEqual([
      ['octo-a/one', 'octo-a/two'],
      ['acme/three', 'octo-a/four'],
      ['octo-a/five'],
    ]);
    expect(pages[0]![1]).toMatchObject({
      id: '2',
      git_provider: 'git_host_a',
      is_public: false,
      owner_type: 'user',
      main_branch: 'main',
    });
    expect(pages[1]![0]).toMatchObject({ id: '3', is_public: true, owner_type: 'organization', main_branch: 'trunk' });
    const asked = host.seen
      .filter((s) => s.path === '/user/repos')
      .map((s) => [s.query.get('page'), s.query.get('per_page'), s.query.get('sort')]);
    expect(asked).toEqual([
      ['1', '2', 'pushed'],
      ['2', '2', 'pushed'],
      ['3', '2', 'pushed'],
    ]);
  });

  it('repositories: a search, in the asked order, walked to the end; its page_id is refused with another query', async () => {
    const search = (page_id?: string, query = 'lib') =>
      api().GET('/api/v1/git/repositories/search', {
        params: { query: { provider: A, query, sort_order: 'stars-desc', limit: 3, page_id } },
      });
    const pages = await walk('RepositoryPage', (page_id) => search(page_id));
    expect(pages.map((p) => p.map((r) => r.stargazers_count))).toEqual([[70, 40, 12], [9, 5, 3], [1]]);
    const first = await search();
    const other = await call(
      `/api/v1/git/repositories/search?provider=git_host_a&query=other&limit=3&sort_order=stars-desc&page_id=${first.data!.next_page_id}`,
    );
    expect(other.status).toBe(422);
    expect(other.body.detail[0]).toMatchObject({ loc: ['query', 'page_id'] });
    for (const bad of ['forged', Buffer.from('["git-branches",0,1,30,0,"0123456789abcdef"]').toString('base64url')]) {
      expect((await call(`/api/v1/git/repositories/search?provider=git_host_a&page_id=${bad}`)).status).toBe(422);
    }
  });

  it('repositories of an installation, all or filtered by name; an unknown installation is 404', async () => {
    const all = await api().GET('/api/v1/git/repositories/search', {
      params: { query: { provider: A, installation_id: '11' } },
    });
    decodes('RepositoryPage', all.data);
    expect(all.data).toEqual({
      items: ['acme/api', 'acme/web', 'acme/api-docs', 'acme/ops'].map((n) =>
        expect.objectContaining({ full_name: n }),
      ),
      next_page_id: null,
    });
    const pages = await walk('RepositoryPage', (page_id) =>
      api().GET('/api/v1/git/repositories/search', {
        params: { query: { provider: A, installation_id: '11', query: 'API', limit: 1, page_id } },
      }),
    );
    expect(pages.map((p) => p.map((r) => r.full_name))).toEqual([['acme/api'], ['acme/api-docs']]);
    const unknown = await call('/api/v1/git/repositories/search?provider=git_host_a&installation_id=99');
    expect(unknown.status).toBe(404);
    expect(unknown.body.detail).toMatch(/installation 99/);
    expect((await call('/api/v1/git/repositories/search?provider=git_host_a&installation_id=abc')).status).toBe(400);
  });

  it('branches whose name contains the query, read 100 a host page and paged mid host page to the end', async () => {
    const pages = await walk('BranchPage', (page_id) =>
      api().GET('/api/v1/git/branches/search', {
        params: { query: { provider: A, repository: 'octo-a/big', query: 'FEAT', page_id } },
      }),
    );
    expect(pages.map((p) => p.length)).toEqual([30, 30, 30, 30, 5]);
    expect(pages.flat().map((b) => b.name)).toEqual(Array.from({ length: 125 }, (_, i) => `feature/${i * 2}`));
    expect(pages[0]![0]).toEqual({ name: 'feature/0', commit_sha: 'sha0', protected: true, last_push_date: null });
    expect(
      new Set(host.seen.filter((s) => s.path === '/repos/octo-a/big/branches').map((s) => s.query.get('per_page'))),
    ).toEqual(new Set(['100']));
    const missing = await call('/api/v1/git/branches/search?provider=git_host_a&repository=octo-a/nope&query=x');
    expect(missing.status).toBe(404);
    expect(missing.body.detail).toMatch(/octo-a\/nope/);
    expect((await call('/api/v1/git/branches/search?provider=git_host_a&repository=../x&query=x')).status).toBe(422);
    expect((await call('/api/v1/git/branches/search?provider=git_host_a&repository=octo-a/big')).status).toBe(422); // query is required
  });

  it('installations: their ids, paged to the end', async () => {
    const pages = await walk('InstallationPage', (page_id) =>
      api().GET('/api/v1/git/installations/search', { params: { query: { provider: A, limit: 2, page_id } } }),
    );
    expect(pages).toEqual([['11', '12'], ['13']]);
  });

  it('suggested tasks: open pull requests of the caller, then open issues assigned to them, paged to the end', async () => {
    const pages = await walk('SuggestedTaskPage', (page_id) =>
      api().GET('/api/v1/git/suggested-tasks/search', { params: { query: { limit: 2, page_id } } }),
    );
    expect(pages.map((p) => p.map((x) => `${x.task_type} ${x.repo}#${x.issue_number}`))).toEqual([
      ['OPEN_PR octo-a/one#1', 'OPEN_PR octo-a/one#2'],
      ['OPEN_PR acme/api#7', 'OPEN_ISSUE acme/web#20'],
      ['OPEN_ISSUE acme/ops#21'],
    ]);
    expect(pages[0]![0]).toEqual({
      git_provider: 'git_host_a',
      task_type: 'OPEN_PR',
      repo: 'octo-a/one',
      issue_number: 1,
      title: 'PR one',
    });
  });

  it('a caller without a token is told what to store, on every route', async () => {
    const b = await t.newUser();
    for (const p of routes) {
      const r = await call(p, b.key);
      expect({ p, status: r.status }).toEqual({ p, status: 409 });
      expect(r.body.detail).toContain(STORE_ROUTE);
      expect(r.body.detail).toContain('git_host_a');
    }
  });

  it('a provider this service cannot search is 400 naming the served ones; a name outside SPEC is 422', async () => {
    for (const p of [
      '/api/v1/git/repositories/search?provider=git_host_b',
      '/api/v1/git/installations/search?provider=enterprise_sso',
      '/api/v1/git/branches/search?provider=git_host_c&repository=a/b&query=x',
    ]) {
      const r = await call(p);
      expect({ p, status: r.status }).toEqual({ p, status: 400 });
      expect(r.body.detail).toMatch(/cannot be searched.*git_host_a/);
    }
    const github = await call('/api/v1/git/repositories/search?provider=github');
    expect(github.status).toBe(422);
    expect(github.body.detail[0]).toMatchObject({ loc: ['query', 'provider'] });
  });

  it('a token the host refuses is 502 saying to store a valid one, without the token the host echoed', async () => {
    const c = await t.newUser();
    expect(
      (
        await t.request('POST', '/api/v1/secrets/git-providers', {
          key: c.key,
          body: { provider_tokens: { git_host_a: { token: UNKNOWN_TOKEN } } },
        })
      ).status,
    ).toBe(200);
    const r = await call('/api/v1/users/git-info', c.key);
    expect(r.status).toBe(502);
    expect(r.body.detail).toMatch(
      /^git_host_a refused the stored token \(401: Bad credentials: \[token\]\): store a valid git_host_a token/,
    );
    expect(r.body.detail).toContain(STORE_ROUTE);
  });

  it('a failing host is 502, a rate limit 503 with Retry-After, an answer too large 502', async () => {
    host.fail = 500;
    const failed = await call('/api/v1/git/repositories/search?provider=git_host_a');
    expect(failed.status).toBe(502);
    expect(failed.body.detail).toMatch(/git_host_a failed to answer \(500/);
    host.fail = 429;
    const limited = await call('/api/v1/git/suggested-tasks/search');
    expect(limited.status).toBe(503);
    expect(limited.headers.get('retry-after')).toMatch(/^\d+$/);
    host.fail = null;
    host.huge = true;
    const huge = await call('/api/v1/users/git-organizations');
    expect(huge.status).toBe(502);
    expect(huge.body.detail).toMatch(/more than \d+ bytes/);
  });

  it('a host that never answers is 503 with Retry-After once the bound runs out', async () => {
    host.hang = true;
    const began = Date.now();
    const r = await call('/api/v1/git/branches/search?provider=git_host_a&repository=octo-a/big&query=feat');
    const took = Date.now() - began;
    expect(r.status).toBe(503);
    expect(r.body.detail).toBe(`git_host_a did not answer within ${TIMEOUT_MS} ms`);
    expect(r.headers.get('retry-after')).toBe('5');
    expect(took).toBeGreaterThanOrEqual(TIMEOUT_MS - 100);
    expect(took).toBeLessThan(TIMEOUT_MS + 3000);
  });

  it('the tokens never appear in an answer or a log line', () => {
    expect(answers.length).toBeGreaterThan(30);
    expect(logs.length).toBeGreaterThan(10);
    for (const token of [TOKEN, UNKNOWN_TOKEN]) {
      expect(answers.filter((a) => a.includes(token))).toEqual([]);
      expect(logs.filter((l) => l.includes(token))).toEqual([]);
    }
  });
});
