/**
 * The user-facing settings surface through the real api (issue 19), its secrets: every route of the
 * surface is 401 without a key; custom secrets and git provider tokens are stored, listed without their
 * values, renamed and deleted. The settings and the organization PATCH: settings-api-settings.test.ts;
 * models, providers, users/me, the web client's config and the OpenAPI document:
 * settings-api-config.test.ts; models from the LLM endpoint: settings-api-llm-models.test.ts. Every call
 * goes through the client generated from the published document, and every answer is checked against that
 * document's schema (SPEC's renamed values put in: git providers are git_host_a..f) and grepped for the
 * stored values.
 */
import { publishedClient } from './helpers/published-client';
import {
  decodes,
  MASK,
  recorded,
  secretValue,
  SETTINGS_SECRETS,
  t,
  tokenValue,
  useSettingsSurface,
} from './helpers/settings-surface';

describe('the settings surface', () => {
  useSettingsSurface();

  it('every new route is 401 without a key', async () => {
    const routes: [string, string, object?][] = [
      ['GET', '/api/v1/secrets/search'],
      ['POST', '/api/v1/secrets', { name: 'A', value: 'v' }],
      ['PUT', '/api/v1/secrets/A', { name: 'B' }],
      ['DELETE', '/api/v1/secrets/A'],
      ['POST', '/api/v1/secrets/git-providers', { provider_tokens: {} }],
      ['DELETE', '/api/v1/secrets/git-providers'],
      ['GET', '/api/v1/settings'],
      ['POST', '/api/v1/settings', {}],
      ['GET', '/api/v1/settings/agent-schema'],
      ['GET', '/api/v1/settings/conversation-schema'],
      ['GET', '/api/v1/config/models/search'],
      ['GET', '/api/v1/config/providers/search'],
      ['GET', '/api/v1/users/me'],
      ['GET', '/api/v1/web-client/config'],
    ];
    for (const [method, p, body] of routes) {
      const r = await t.request(method, p, { body });
      expect({ route: `${method} ${p}`, status: r.status }).toEqual({ route: `${method} ${p}`, status: 401 });
    }
  });

  it('secrets: stored, listed without values, paged, renamed, deleted; bad input is 422; another user gets 404', async () => {
    const a = await t.newUser();
    const api = publishedClient(t.url, a.key);
    for (const name of ['DEPLOY_KEY', 'NPM_TOKEN', 'PYPI_TOKEN']) {
      const r = await api.POST('/api/v1/secrets', {
        body: { name, value: `${secretValue}-${name}`, description: `for ${name}` },
      });
      expect(r.response.status).toBe(201);
      decodes('EditResponse', r.data);
    }
    const all = await api.GET('/api/v1/secrets/search');
    decodes('CustomSecretPage', all.data);
    expect(all.data!.items.map((s) => s.name)).toEqual(['DEPLOY_KEY', 'NPM_TOKEN', 'PYPI_TOKEN']);
    expect(all.data!.items[0]).toEqual({
      name: 'DEPLOY_KEY',
      description: 'for DEPLOY_KEY',
      created_at: expect.any(String),
      updated_at: expect.any(String),
    });

    // Paged by name, and filtered.
    const first = await api.GET('/api/v1/secrets/search', { params: { query: { limit: 2 } } });
    expect(first.data!.items.map((s) => s.name)).toEqual(['DEPLOY_KEY', 'NPM_TOKEN']);
    const second = await api.GET('/api/v1/secrets/search', {
      params: { query: { limit: 2, page_id: first.data!.next_page_id! } },
    });
    expect(second.data).toEqual({ items: [expect.objectContaining({ name: 'PYPI_TOKEN' })], next_page_id: null });
    const filtered = await api.GET('/api/v1/secrets/search', { params: { query: { name__contains: 'token' } } });
    expect(filtered.data!.items.map((s) => s.name)).toEqual(['NPM_TOKEN', 'PYPI_TOKEN']);

    // Overwritten by name; renamed and described (its value stays); a taken name is a conflict.
    expect(
      (await api.POST('/api/v1/secrets', { body: { name: 'DEPLOY_KEY', value: `${secretValue}-2` } })).response.status,
    ).toBe(201);
    const renamed = await api.PUT('/api/v1/secrets/{secret_id}', {
      params: { path: { secret_id: 'DEPLOY_KEY' } },
      body: { name: 'SHIP_KEY', description: 'ships' },
    });
    expect(renamed.response.status).toBe(200);
    decodes('EditResponse', renamed.data);
    expect(await t.stores.userSecrets.all(a.userId)).toMatchObject({ SHIP_KEY: `${secretValue}-2` });
    expect(
      (await t.request('PUT', '/api/v1/secrets/SHIP_KEY', { key: a.key, body: { name: 'NPM_TOKEN' } })).status,
    ).toBe(409);
    expect((await t.request('PUT', '/api/v1/secrets/NOPE', { key: a.key, body: { name: 'NOPE2' } })).status).toBe(404);

    // Another user sees none of them and touches none of them.
    const b = await t.newUser();
    expect((await t.request('GET', '/api/v1/secrets/search', { key: b.key })).body).toEqual({
      items: [],
      next_page_id: null,
    });
    expect((await t.request('DELETE', '/api/v1/secrets/SHIP_KEY', { key: b.key })).status).toBe(404);
    expect((await t.request('PUT', '/api/v1/secrets/SHIP_KEY', { key: b.key, body: { name: 'MINE' } })).status).toBe(
      404,
    );
    // A provider token's document is not a custom secret, whatever the id says.
    expect((await t.request('DELETE', '/api/v1/secrets/provider:git_host_a', { key: a.key })).status).toBe(404);
    expect(Object.keys(await t.stores.userSecrets.all(a.userId)).sort()).toEqual([
      'NPM_TOKEN',
      'PYPI_TOKEN',
      'SHIP_KEY',
    ]);

    // Bad input: every problem at once, in the HTTPValidationError body.
    const badName = await t.request('POST', '/api/v1/secrets', {
      key: a.key,
      body: { name: 'not an env var', value: 'v' },
    });
    expect(badName.status).toBe(422);
    decodes('HTTPValidationError', badName.body);
    expect(badName.body.detail[0]).toMatchObject({
      loc: ['body', 'name'],
      msg: expect.stringMatching(/environment variable name/),
    });
    const tooBig = await t.request('POST', '/api/v1/secrets', {
      key: a.key,
      body: { name: 'BIG', value: 'x'.repeat(64 * 1024 + 1) },
    });
    expect(tooBig.status).toBe(422);
    expect(tooBig.body.detail[0].loc).toEqual(['body', 'value']);
    const unknown = await t.request('POST', '/api/v1/secrets', {
      key: a.key,
      body: { name: 'X', value: 'v', colour: 'red' },
    });
    expect(unknown.status).toBe(422);
    expect(unknown.body.detail).toEqual([
      expect.objectContaining({ loc: ['body', 'colour'], type: 'extra_forbidden' }),
    ]);
    expect((await t.request('POST', '/api/v1/secrets', { key: a.key, body: { name: 'X' } })).body.detail).toEqual([
      expect.objectContaining({ loc: ['body', 'value'], type: 'missing' }),
    ]);
    expect((await t.request('GET', '/api/v1/secrets/search?page_id=forged', { key: a.key })).status).toBe(422);

    // Deleted.
    const deleted = await api.DELETE('/api/v1/secrets/{secret_id}', { params: { path: { secret_id: 'SHIP_KEY' } } });
    expect(deleted.response.status).toBe(200);
    decodes('EditResponse', deleted.data);
    expect((await t.request('DELETE', '/api/v1/secrets/SHIP_KEY', { key: a.key })).status).toBe(404);
  });

  it('a user keeps at most 200 secrets; overwriting one at the limit is still allowed', async () => {
    const u = await t.newUser();
    for (let i = 0; i < 200; i++) await t.stores.userSecrets.set(u.userId, `S_${String(i).padStart(3, '0')}`, 'v');
    const over = await t.request('POST', '/api/v1/secrets', { key: u.key, body: { name: 'ONE_MORE', value: 'v' } });
    expect(over.status).toBe(409);
    expect(over.body.detail).toMatch(/200 secrets/);
    expect(
      (await t.request('POST', '/api/v1/secrets', { key: u.key, body: { name: 'S_000', value: 'w' } })).status,
    ).toBe(201);
    // Paging through all of them reads each once.
    const names: string[] = [];
    let page: string | null = null;
    do {
      const r: { body: { items: { name: string }[]; next_page_id: string | null } } = await t.request(
        'GET',
        `/api/v1/secrets/search?limit=100${page ? `&page_id=${page}` : ''}`,
        { key: u.key },
      );
      names.push(...r.body.items.map((x) => x.name));
      page = r.body.next_page_id;
    } while (page);
    expect(names).toHaveLength(200);
    expect(new Set(names).size).toBe(200);
  }, 60_000);

  it('git provider tokens: stored sealed, listed as set, the mask keeps one, unknown providers are 422, unset', async () => {
    const u = await t.newUser();
    const api = publishedClient(t.url, u.key);
    const stored = await api.POST('/api/v1/secrets/git-providers', {
      body: {
        provider_tokens: {
          git_host_a: { token: tokenValue },
          git_host_b: { token: `${tokenValue}-b`, host: 'git.example.com:8443' },
        },
      } as any,
    });
    expect(stored.response.status).toBe(200);
    decodes('EditResponse', stored.data);
    expect(await t.stores.userSecrets.providerTokens(u.userId)).toEqual({
      git_host_a: { token: tokenValue, host: null },
      git_host_b: { token: `${tokenValue}-b`, host: 'git.example.com:8443' },
    });
    const raw = JSON.stringify(await t.database.db.collection('user_secrets').find({ user_id: u.userId }).toArray());
    expect(raw).not.toContain(tokenValue);

    // The mask (or null) keeps the token and may change the host; a provider without a token needs one.
    expect(
      (
        await t.request('POST', '/api/v1/secrets/git-providers', {
          key: u.key,
          body: { provider_tokens: { git_host_a: { token: MASK, host: 'example.org' } } },
        })
      ).status,
    ).toBe(200);
    expect((await t.stores.userSecrets.providerTokens(u.userId)).git_host_a).toEqual({
      token: tokenValue,
      host: 'example.org',
    });
    const none = await t.request('POST', '/api/v1/secrets/git-providers', {
      key: u.key,
      body: { provider_tokens: { git_host_c: { token: null } } },
    });
    // Nothing stored to keep: the body is well formed, what is stored makes it a conflict.
    expect(none.status).toBe(409);
    expect(none.body.detail).toMatch(/No token is stored for git_host_c to keep: send one/);
    const github = await t.request('POST', '/api/v1/secrets/git-providers', {
      key: u.key,
      body: { provider_tokens: { github: { token: 'x' } } },
    });
    expect(github.status).toBe(422); // SPEC's names only
    expect(
      (
        await t.request('POST', '/api/v1/secrets/git-providers', {
          key: u.key,
          body: { provider_tokens: { git_host_a: { token: 't', host: 'bad host/' } } },
        })
      ).status,
    ).toBe(422);

    // Settings show which are set, never the tokens; custom secrets do not list them.
    const settings = await api.GET('/api/v1/settings');
    decodes('GETSettingsModel', settings.data);
    expect(settings.data!.provider_tokens_set).toEqual({
      git_host_a: 'example.org',
      git_host_b: 'git.example.com:8443',
    });
    expect((await t.request('GET', '/api/v1/secrets/search', { key: u.key })).body.items).toEqual([]);

    const unset = await api.DELETE('/api/v1/secrets/git-providers');
    expect(unset.response.status).toBe(200);
    decodes('EditResponse', unset.data);
    expect(await t.stores.userSecrets.providerTokens(u.userId)).toEqual({});
    expect((await api.GET('/api/v1/settings')).data!.provider_tokens_set).toEqual({});
  });

  it('no stored secret value appears in any answer of this file', () => {
    recorded.expectNoSecret(SETTINGS_SECRETS, { answers: 8 });
  });
});
