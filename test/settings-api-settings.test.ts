/**
 * The settings surface through the real api (issue 19), the settings: the user's settings over the
 * organization's (validated whole, the LLM key sealed) and their JSON Schemas, and the published
 * organization PATCH body beside today's. Every call goes through the client generated from the published
 * document, every answer is checked against that document's schema and grepped for the stored values.
 * The rest of the surface: settings-api.test.ts.
 */
import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { publishedClient } from './helpers/published-client';
import {
  answers,
  decodes,
  llmKey,
  MASK,
  recorded,
  SETTINGS_SECRETS,
  t,
  useSettingsSurface,
} from './helpers/settings-surface';

describe('the settings surface', () => {
  useSettingsSurface();

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

  it('no stored secret value appears in any answer of this file', () => {
    recorded.expectNoSecret(SETTINGS_SECRETS, { answers: 3 });
  });
});
