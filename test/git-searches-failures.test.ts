/**
 * The published git searches through the real api when they cannot answer, against a loopback stand-in of
 * git host A's REST API (test/helpers/git-searches-service.ts): a caller without a token, another
 * provider, and a host that refuses the token, fails, hangs or answers too much get a clear 4xx or
 * 502/503; the tokens never show in an answer or a log line. The searches that answer:
 * git-searches.test.ts.
 */
import type { TestApi } from './helpers/api';
import type { GitHostApiStandIn } from './helpers/git-host-api-stand-in';
import {
  GIT_SEARCH_TOKENS,
  routes,
  TIMEOUT_MS,
  UNKNOWN_TOKEN,
  useGitSearchesService,
} from './helpers/git-searches-service';

const STORE_ROUTE = 'POST /api/v1/secrets/git-providers';

describe('git searches', () => {
  const service = useGitSearchesService();
  const { recorded, call } = service;
  let host: GitHostApiStandIn;
  let t: TestApi;
  beforeAll(() => {
    ({ host, t } = service.started());
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

  it('a provider this service does not search is a 422 naming the searched ones, as the document lists them', async () => {
    for (const p of [
      '/api/v1/git/repositories/search?provider=git_host_b',
      '/api/v1/git/installations/search?provider=enterprise_sso',
      '/api/v1/git/branches/search?provider=git_host_c&repository=a/b&query=x',
    ]) {
      const r = await call(p);
      expect({ p, status: r.status }).toEqual({ p, status: 422 });
      expect(r.body.detail[0]).toMatchObject({
        loc: ['query', 'provider'],
        msg: expect.stringContaining('git_host_a'),
      });
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
    recorded.expectNoSecret(GIT_SEARCH_TOKENS, { answers: 20, logs: 10 });
  });
});
