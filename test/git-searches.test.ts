/**
 * The published git searches (repositories, branches, installations, suggested tasks, users/git-info,
 * users/git-organizations) through the real api, against a loopback stand-in of git host A's REST API
 * (GitHub's shapes and paging; test/helpers/git-searches-service.ts): every answer goes through the client
 * generated from the published document and is checked against its schema (SPEC's provider names put in);
 * every listing is walked to its end; the token never shows in an answer or a log line. A caller without a
 * token, another provider, and a host that refuses, fails, hangs or answers too much:
 * git-searches-failures.test.ts. collectPage (the paging over host pages) without servers:
 * git-searches-paging.test.ts.
 */
import type { TestApi } from './helpers/api';
import type { GitHostApiStandIn } from './helpers/git-host-api-stand-in';
import { GIT_SEARCH_TOKENS, routes, TOKEN, useGitSearchesService } from './helpers/git-searches-service';
import { publishedClient } from './helpers/published-client';
import { publishedDocument } from './helpers/published-schemas';

const PUBLISHED = publishedDocument();

describe('git searches', () => {
  const service = useGitSearchesService();
  const { recorded, call } = service;
  const { decodes } = recorded;
  let host: GitHostApiStandIn;
  let t: TestApi;
  let user: { userId: string; key: string };
  beforeAll(() => {
    ({ host, t, user } = service.started());
  });

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
    // Not a number: refused by the parameter's pattern, as the document says, before any host is asked.
    const notNumber = await call('/api/v1/git/repositories/search?provider=git_host_a&installation_id=abc');
    expect(notNumber.status).toBe(422);
    expect(notNumber.body.detail[0]).toMatchObject({ loc: ['query', 'installation_id'], input: 'abc' });
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

  it('the tokens never appear in an answer or a log line', () => {
    recorded.expectNoSecret(GIT_SEARCH_TOKENS, { answers: 30, logs: 10 });
  });
});
