/**
 * The user-facing settings surface through the real api (issue 19): secrets, git provider tokens,
 * settings over the organization's and their JSON Schemas, the published organization PATCH body,
 * models, users/me and the web client's config. Every call goes through the client generated from the
 * published document, and every answer is checked against that document's schema (SPEC's renamed values
 * put in: git providers are git_host_a..f, the web client's product-named fields neutral).
 */
import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { startTestApi, type TestApi } from './helpers/api';
import { testConfig } from './helpers/env';
import { publishedClient } from './helpers/published-client';
import { componentValidator, publishedDocument, withSpecProviderNames } from './helpers/published-schemas';

const MASK = '**********';

/** The published document with SPEC.md's renamed values, as a validator of its component schemas. */
function publishedValidator() {
  const doc = withSpecProviderNames(publishedDocument());
  const schemas = doc.components.schemas;
  const renames: Record<string, string> = {
    github_app_slug: 'git_host_a_app_slug',
    posthog_client_key: 'analytics_client_key',
  };
  schemas.WebClientConfig.required = schemas.WebClientConfig.required.map((k: string) => renames[k] ?? k);
  for (const [from, to] of Object.entries(renames)) {
    schemas.WebClientConfig.properties[to] = schemas.WebClientConfig.properties[from];
    delete schemas.WebClientConfig.properties[from];
  }
  // The published agent_settings variants are the reference service's own (agent_kind openhands, ...);
  // ours are SPEC 2.6's, checked by their own JSON Schema below.
  schemas.OrgResponse.properties.agent_settings = { type: 'object' };
  return componentValidator(doc);
}

describe('the settings surface', () => {
  let t: TestApi;
  let dir: string;
  const conforms = publishedValidator();
  const answers: string[] = [];
  /** An answer decodes as the published schema says (no errors), and is kept for the final grep. */
  const decodes = (schema: string, value: unknown) => {
    answers.push(JSON.stringify(value));
    expect({ schema, errors: conforms(schema, value) }).toEqual({ schema, errors: [] });
  };
  const secretValue = 'sv-never-shown-0123456789';
  const tokenValue = 'gt-never-shown-0123456789';
  const llmKey = 'sk-never-shown-0123456789';

  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'settings-api-'));
    const models = path.join(dir, 'models.json');
    fs.writeFileSync(
      models,
      JSON.stringify([
        'openai/gpt-a',
        'openai/gpt-b',
        'anthropic/claude-c',
        { provider: 'local', name: 'llama-d', verified: false },
      ]),
    );
    t = await startTestApi(testConfig({ DATA_DIR: dir, LLM_MODELS_FILE: models }));
  });

  afterAll(async () => {
    await t?.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

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
    expect(none.status).toBe(422);
    expect(none.body.detail).toEqual([
      expect.objectContaining({ loc: ['body', 'provider_tokens', 'git_host_c', 'token'] }),
    ]);
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

  it("settings round trip over the organization's, validated whole; the schemas describe what is accepted", async () => {
    const u = await t.newUser();
    const api = publishedClient(t.url, u.key);
    const before = await api.GET('/api/v1/settings');
    decodes('GETSettingsModel', before.data);
    expect(before.data).toMatchObject({
      llm_api_key_set: false,
      user_version: 0,
      email: expect.stringContaining('@'),
      agent_settings: { agent_kind: 'platform' },
    });

    const stored = await api.POST('/api/v1/settings', {
      body: {
        agent_settings_diff: {
          llm: { model: 'openai/gpt-b', temperature: 0.3, extra_headers: { 'X-Team': 'a' } },
          enable_sub_agents: true,
        },
        conversation_settings_diff: { max_iterations: 42, confirmation_mode: true },
        llm_api_key: llmKey,
        language: 'fr',
        git_user_name: 'Ada',
      },
    });
    expect(stored.response.status).toBe(200);
    answers.push(JSON.stringify(stored.data));
    const after = await api.GET('/api/v1/settings');
    decodes('GETSettingsModel', after.data);
    expect(after.data).toMatchObject({
      language: 'fr',
      git_user_name: 'Ada',
      user_version: 1,
      llm_api_key_set: true,
      agent_settings: {
        agent_kind: 'platform',
        enable_sub_agents: true,
        llm: { model: 'openai/gpt-b', temperature: 0.3, api_key: MASK, extra_headers: { 'X-Team': 'a' } },
      },
      conversation_settings: { max_iterations: 42, confirmation_mode: true },
    });
    // Sealed at rest, opened for a start.
    expect(JSON.stringify(await t.database.db.collection('user_settings').find({}).toArray())).not.toContain(llmKey);
    const start = await t.services.startSettings.resolve(u.userId, {});
    expect(start.agent_settings).toMatchObject({ llm: { model: 'openai/gpt-b', api_key: llmKey } });
    expect(start.conversation_settings.max_iterations).toBe(42);
    // The organization itself is unchanged.
    const me = (await t.request('GET', '/api/v1/users/me', { key: u.key })).body;
    const org = (await t.request('GET', `/api/organizations/${me.org_id}`, { key: u.key })).body;
    expect(org.agent_settings.llm).toEqual({});

    // The mask keeps the key, a merge keeps the rest; "" removes the user's own key.
    await api.POST('/api/v1/settings', { body: { agent_settings_diff: { llm: { api_key: MASK, top_p: 0.5 } } } });
    expect((await t.services.startSettings.resolve(u.userId, {})).agent_settings).toMatchObject({
      llm: { api_key: llmKey, top_p: 0.5, temperature: 0.3 },
    });
    await api.POST('/api/v1/settings', { body: { llm_api_key: '' } });
    const cleared = (await api.GET('/api/v1/settings')).data!;
    expect(cleared.llm_api_key_set).toBe(false);
    expect((cleared.agent_settings as any).llm.model).toBe('openai/gpt-b');

    // Bad values and unknown or legacy keys: 422, located in the body, nothing stored.
    const bad = await t.request('POST', '/api/v1/settings', {
      key: u.key,
      body: { agent_settings_diff: { llm: { temperature: 5 } }, conversation_settings_diff: { max_iterations: 0 } },
    });
    expect(bad.status).toBe(422);
    decodes('HTTPValidationError', bad.body);
    expect(bad.body.detail.map((d: any) => d.loc)).toEqual([
      ['body', 'agent_settings_diff', 'llm', 'temperature'],
      ['body', 'conversation_settings_diff', 'max_iterations'],
    ]);
    const unknownKey = await t.request('POST', '/api/v1/settings', {
      key: u.key,
      body: { agent_settings_diff: { llm: { colour: 'red' } } },
    });
    expect(unknownKey.body.detail).toEqual([
      expect.objectContaining({ loc: ['body', 'agent_settings_diff', 'llm', 'colour'], type: 'extra_forbidden' }),
    ]);
    const legacy = await t.request('POST', '/api/v1/settings', { key: u.key, body: { agent_settings: { llm: {} } } });
    expect(legacy.status).toBe(422);
    expect(legacy.body.detail[0].msg).toMatch(/Legacy nested settings keys are not accepted/);
    expect((await t.request('POST', '/api/v1/settings', { key: u.key, body: { search_api_key: 'x' } })).status).toBe(
      422,
    );
    const huge = await t.request('POST', '/api/v1/settings', {
      key: u.key,
      body: { agent_settings_diff: { mcp_config: { blob: 'x'.repeat(300 * 1024) } } },
    });
    expect(huge.status).toBe(422);
    expect(huge.body.detail).toEqual([
      expect.objectContaining({ loc: ['body', 'agent_settings_diff'], type: 'too_long' }),
    ]);
    expect((await api.GET('/api/v1/settings')).data!.user_version).toBe(3);

    // Another agent kind is a variant of its own.
    await api.POST('/api/v1/settings', {
      body: { agent_settings_diff: { agent_kind: 'llm', llm: { model: 'anthropic/claude-c', api_mode: 'chat' } } },
    });
    expect((await api.GET('/api/v1/settings')).data!.agent_settings).toMatchObject({
      agent_kind: 'llm',
      llm: { model: 'anthropic/claude-c', api_mode: 'chat' },
    });

    // The schemas: JSON Schema documents that accept the settings answered and refuse what the api refuses.
    const agentSchema = await api.GET('/api/v1/settings/agent-schema');
    const conversationSchema = await api.GET('/api/v1/settings/conversation-schema');
    expect(agentSchema.response.status).toBe(200);
    expect(conversationSchema.response.status).toBe(200);
    const ajv = new Ajv2020({ strict: false, allErrors: true });
    addFormats(ajv);
    const agent = ajv.compile(agentSchema.data as object);
    const conversation = ajv.compile(conversationSchema.data as object);
    const now = (await api.GET('/api/v1/settings')).data!;
    expect(agent(now.agent_settings)).toBe(true);
    expect(conversation(now.conversation_settings)).toBe(true);
    expect(agent({ agent_kind: 'platform', llm: { temperature: 5 } })).toBe(false);
    expect(agent({ agent_kind: 'llm', llm: { colour: 'red' } })).toBe(false);
    expect(conversation({ max_iterations: 0 })).toBe(false);
  });

  it("the organization PATCH takes the published body beside today's", async () => {
    const u = await t.newUser();
    const api = publishedClient(t.url, u.key);
    const me = (await t.request('GET', '/api/v1/users/me', { key: u.key })).body;
    const patched = await api.PATCH('/api/organizations/{org_id}', {
      params: { path: { org_id: me.org_id } },
      body: {
        name: 'Renamed',
        agent_settings_diff: { llm: { model: 'openai/gpt-a', base_url: 'http://127.0.0.1:9/v1' } },
        conversation_settings_diff: { max_iterations: 9 },
        llm_api_key: llmKey,
        contact_name: null,
      },
    });
    expect(patched.response.status).toBe(200);
    decodes('OrgResponse', patched.data);
    expect(patched.data).toMatchObject({
      name: 'Renamed',
      org_version: 2,
      agent_settings: { llm: { model: 'openai/gpt-a', api_key: MASK } },
      conversation_settings: { max_iterations: 9 },
    });
    expect(
      JSON.stringify(await t.database.db.collection('organizations').find({ _id: me.org_id }).toArray()),
    ).not.toContain(llmKey);
    // Today's body still works, and the mask keeps the key.
    const today = await t.request('PATCH', `/api/organizations/${me.org_id}`, {
      key: u.key,
      body: { agent_settings: { llm: { api_key: MASK, top_p: 0.9 } } },
    });
    expect(today.status).toBe(200);
    expect((await t.services.startSettings.resolve(u.userId, {})).agent_settings).toMatchObject({
      llm: { api_key: llmKey, top_p: 0.9 },
    });
    const both = await t.request('PATCH', `/api/organizations/${me.org_id}`, {
      key: u.key,
      body: { agent_settings: {}, agent_settings_diff: {} },
    });
    expect(both.status).toBe(422);
    expect(both.body.detail[0].loc).toEqual(['body', 'agent_settings_diff']);
    const badDiff = await t.request('PATCH', `/api/organizations/${me.org_id}`, {
      key: u.key,
      body: { conversation_settings_diff: { max_iterations: -1 } },
    });
    expect(badDiff.status).toBe(422);
    expect(
      (await t.request('PATCH', `/api/organizations/${me.org_id}`, { key: u.key, body: { billing_margin: 0.5 } }))
        .status,
    ).toBe(422);
    const other = await t.newUser();
    expect(
      (await t.request('PATCH', `/api/organizations/${me.org_id}`, { key: other.key, body: { llm_api_key: 'x' } }))
        .status,
    ).toBe(403);
  });

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
    expect(answers.length).toBeGreaterThan(10);
    const text = answers.join('\n');
    for (const s of [secretValue, tokenValue, llmKey]) expect(text).not.toContain(s);
  });
});

describe('models from the LLM endpoint', () => {
  let t: TestApi;
  let endpoint: http.Server;
  let url = '';
  const seen: (string | undefined)[] = [];

  beforeAll(async () => {
    endpoint = http.createServer((req, res) => {
      seen.push(req.headers.authorization);
      if (req.url !== '/v1/models') return void res.writeHead(404).end();
      res
        .writeHead(200, { 'Content-Type': 'application/json' })
        .end(JSON.stringify({ object: 'list', data: [{ id: 'vendor/served-1' }, { id: 'served-2' }, { nope: 1 }] }));
    });
    await new Promise<void>((r) => endpoint.listen(0, '127.0.0.1', () => r()));
    url = `http://127.0.0.1:${(endpoint.address() as AddressInfo).port}/v1`;
    t = await startTestApi(testConfig({ LLM_MODELS_FROM_ENDPOINT: 'true' }));
  });

  afterAll(async () => {
    await t?.close();
    await new Promise((r) => endpoint.close(r));
  });

  it("lists what the caller's LLM endpoint serves, asked with the caller's key", async () => {
    const u = await t.newUser();
    const api = publishedClient(t.url, u.key);
    await api.POST('/api/v1/settings', {
      body: { agent_settings_diff: { llm: { model: 'vendor/served-1', base_url: url } }, llm_api_key: 'sk-endpoint' },
    });
    const models = await api.GET('/api/v1/config/models/search');
    expect(models.data!.items.map((m) => `${m.provider ?? ''}/${m.name}`)).toEqual(['/served-2', 'vendor/served-1']);
    expect(seen).toEqual(['Bearer sk-endpoint']);
    // An endpoint that does not answer leaves the caller's own model.
    await api.POST('/api/v1/settings', {
      body: { agent_settings_diff: { llm: { model: 'x/only', base_url: 'http://127.0.0.1:9/v1' } } },
    });
    expect((await api.GET('/api/v1/config/models/search')).data!.items.map((m) => m.name)).toEqual(['only']);
  });
});
