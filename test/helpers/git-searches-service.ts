/**
 * The api of the git searches' suites (test/git-searches.test.ts, test/git-searches-failures.test.ts),
 * against a loopback stand-in of git host A's REST API (GitHub's shapes and paging) holding one account
 * (octo-a: its repositories, organizations, installations, a repository of 250 branches, pull requests
 * and issues), with a user whose stored token is that account's; every answer is kept, and every log line
 * of the api, for each file's final grep for the tokens.
 */
import { startTestApi, type TestApi } from './api';
import { testConfig } from './env';
import { GitHostApiStandIn, standInRepo } from './git-host-api-stand-in';
import { publishedClient } from './published-client';
import { componentValidator, publishedDocument, withSpecProviderNames } from './published-schemas';
import { recordAnswers } from './recorded-answers';

export const TIMEOUT_MS = 1500;
export const TOKEN = 'gho_never-shown-0123456789abcdef';
export const UNKNOWN_TOKEN = 'gho_never-shown-revoked-9876543210';
/** What no answer or log line of the git searches' suites may hold. */
export const GIT_SEARCH_TOKENS = [TOKEN, UNKNOWN_TOKEN];

/** The published component schemas with SPEC.md's provider names, as a validator. */
const publishedValidator = () => componentValidator(withSpecProviderNames(publishedDocument()));

/** One route of each search, as a caller with a token of git_host_a could call it. */
export const routes = [
  '/api/v1/git/repositories/search?provider=git_host_a',
  '/api/v1/git/branches/search?provider=git_host_a&repository=octo-a/big&query=x',
  '/api/v1/git/installations/search?provider=git_host_a',
  '/api/v1/git/suggested-tasks/search',
  '/api/v1/users/git-info',
  '/api/v1/users/git-organizations',
];

/**
 * Starts the stand-in and the api (its host calls bound by TIMEOUT_MS, its log kept) in a beforeAll of the
 * describe it is called in, stores TOKEN for a new user, and closes both in its afterAll; before each
 * test the stand-in neither fails, hangs nor answers too much. `started()` is what it started, to read in
 * a beforeAll of the suite's own; `call` GETs a path as that user (or `key`'s), keeping body and headers.
 */
export function useGitSearchesService() {
  let host: GitHostApiStandIn;
  let t: TestApi;
  let user: { userId: string; key: string };
  const recorded = recordAnswers(publishedValidator());

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
    t = await startTestApi(
      testConfig({ GIT_HOST_A_API_URL: host.url, GIT_HOST_API_TIMEOUT_MS: String(TIMEOUT_MS) }),
      recorded.logger(),
    );
    user = await t.newUser();
    const stored = await publishedClient(t.url, user.key).POST('/api/v1/secrets/git-providers', {
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

  const call = async (p: string, key = user.key) => {
    const r = await t.request('GET', p, { key });
    recorded.keep(JSON.stringify(r.body), JSON.stringify([...r.headers]));
    return r;
  };

  return { started: () => ({ host, t, user }), recorded, call };
}
