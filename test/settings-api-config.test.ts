/**
 * The settings surface through the real api (issue 19), what it tells a client: models and providers from
 * the operator's file, users/me, the web client's config (the product-named fields neutral) and the
 * OpenAPI document's published paths. Every call goes through the client generated from the published
 * document, every answer is checked against that document's schema and grepped for the stored values.
 * The rest of the surface: settings-api.test.ts.
 */
import { publishedClient } from './helpers/published-client';
import { publishedDocument } from './helpers/published-schemas';
import { decodes, recorded, SETTINGS_SECRETS, t, useSettingsSurface } from './helpers/settings-surface';

describe('the settings surface', () => {
  useSettingsSurface();

  it("models and providers from the operator's file, with the caller's own model, paged and filtered", async () => {
    const u = await t.newUser();
    const api = publishedClient(t.url, u.key);
    await api.POST('/api/v1/settings', { body: { agent_settings_diff: { llm: { model: 'custom/my-model' } } } });
    const all = await api.GET('/api/v1/config/models/search');
    decodes('LLMModelPage', all.data);
    expect(all.data!.items.map((m) => `${m.provider}/${m.name}`)).toEqual([
      'anthropic/claude-c',
      'custom/my-model',
      'local/llama-d',
      'openai/gpt-a',
      'openai/gpt-b',
    ]);
    const p1 = await api.GET('/api/v1/config/models/search', { params: { query: { limit: 2 } } });
    const p2 = await api.GET('/api/v1/config/models/search', {
      params: { query: { limit: 2, page_id: p1.data!.next_page_id! } },
    });
    const p3 = await api.GET('/api/v1/config/models/search', {
      params: { query: { limit: 2, page_id: p2.data!.next_page_id! } },
    });
    expect([...p1.data!.items, ...p2.data!.items, ...p3.data!.items].map((m) => m.name)).toEqual(
      all.data!.items.map((m) => m.name),
    );
    expect(p3.data!.next_page_id).toBeNull();
    expect(
      (await api.GET('/api/v1/config/models/search', { params: { query: { query: 'GPT' } } })).data!.items.map(
        (m) => m.name,
      ),
    ).toEqual(['gpt-a', 'gpt-b']);
    expect(
      (await api.GET('/api/v1/config/models/search', { params: { query: { provider__eq: 'local' } } })).data!.items.map(
        (m) => m.name,
      ),
    ).toEqual(['llama-d']);
    expect(
      (await api.GET('/api/v1/config/models/search', { params: { query: { verified__eq: false } } })).data!.items.map(
        (m) => m.name,
      ),
    ).toEqual(['my-model', 'llama-d']);
    const providers = await api.GET('/api/v1/config/providers/search');
    decodes('ProviderPage', providers.data);
    expect(providers.data!.items).toEqual([
      { name: 'anthropic', verified: true },
      { name: 'custom', verified: false },
      { name: 'local', verified: false },
      { name: 'openai', verified: true },
    ]);
    expect(
      (await api.GET('/api/v1/config/providers/search', { params: { query: { verified__eq: true, limit: 1 } } })).data,
    ).toEqual({ items: [{ name: 'anthropic', verified: true }], next_page_id: expect.any(String) });
    for (const q of ['limit=0', 'limit=101', 'verified__eq=maybe', 'page_id=zzz']) {
      const r = await t.request('GET', `/api/v1/config/models/search?${q}`, { key: u.key });
      expect({ q, status: r.status }).toEqual({ q, status: 422 });
      decodes('HTTPValidationError', r.body);
    }
    // A page_id of one listing is refused by the other.
    expect(
      (await t.request('GET', `/api/v1/config/providers/search?page_id=${p1.data!.next_page_id}`, { key: u.key }))
        .status,
    ).toBe(422);
  });

  it('users/me says who, where, with which role and permissions; the web client config says how to boot', async () => {
    const u = await t.newUser();
    const api = publishedClient(t.url, u.key);
    const me = await api.GET('/api/v1/users/me');
    expect(me.response.status).toBe(200);
    decodes('SaasUserInfo', me.data);
    const body = me.data as any;
    expect(body).toMatchObject({
      id: u.userId,
      org_id: body.current_org_id,
      org_name: expect.any(String),
      role: 'owner',
      email: expect.stringContaining('@'),
      agent_settings: { agent_kind: 'platform' },
    });
    expect(body.permissions).toContain('edit_organization_settings');
    // A member of another organization, switched to it, is a member there.
    const org = await t.orgs.createOrganization('team', u.userId);
    const member = await t.newUser();
    await t.stores.memberships.put(org.id, member.userId, 'member');
    expect((await t.request('POST', `/api/organizations/${org.id}/switch`, { key: member.key })).status).toBe(200);
    const asMember = (await t.request('GET', '/api/v1/users/me', { key: member.key })).body;
    expect(asMember).toMatchObject({ org_id: org.id, org_name: 'team', role: 'member' });
    expect(asMember.permissions).not.toContain('edit_organization_settings');

    const config = await api.GET('/api/v1/web-client/config');
    expect(config.response.status).toBe(200);
    decodes('WebClientConfig', config.data);
    expect(config.data).toMatchObject({
      kind: 'WebClientConfig',
      auth_mode: 'api_key',
      providers_configured: ['git_host_a'],
      limits: { secret_value_bytes: 65536 },
    });
  });

  it('the OpenAPI document describes each published path with its method', async () => {
    const doc = (await t.request('GET', '/openapi.json')).body;
    const served: [string, string][] = [
      ['get', '/api/v1/secrets/search'],
      ['post', '/api/v1/secrets'],
      ['put', '/api/v1/secrets/{secret_id}'],
      ['delete', '/api/v1/secrets/{secret_id}'],
      ['post', '/api/v1/secrets/git-providers'],
      ['delete', '/api/v1/secrets/git-providers'],
      ['get', '/api/v1/settings'],
      ['post', '/api/v1/settings'],
      ['get', '/api/v1/settings/agent-schema'],
      ['get', '/api/v1/settings/conversation-schema'],
      ['patch', '/api/organizations/{org_id}'],
      ['get', '/api/v1/config/models/search'],
      ['get', '/api/v1/config/providers/search'],
      ['get', '/api/v1/users/me'],
      ['get', '/api/v1/web-client/config'],
    ];
    const published = publishedDocument();
    for (const [method, p] of served) {
      expect({
        p,
        method,
        published: Boolean(published.paths[p]?.[method]),
        ours: Boolean(doc.paths[p]?.[method]),
      }).toEqual({ p, method, published: true, ours: true });
    }
    expect(doc.paths['/api/organizations/{org_id}'].patch.requestBody.content['application/json'].schema).toBeDefined();
  });

  it('no stored secret value appears in any answer of this file', () => {
    recorded.expectNoSecret(SETTINGS_SECRETS, { answers: 6 });
  });
});
