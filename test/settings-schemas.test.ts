/** Pure pieces of the settings surface: the llm variant, the user's diffs over the organization's, the JSON Schemas, models, the published PATCH body. */
import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ConfigError } from '../src/config';
import { loadModelFile, modelOf } from '../src/orgs/model-catalog';
import { newOrganization } from '../src/orgs/organizations-service';
import { fromPublishedPatch } from '../src/orgs/published-org-patch';
import { agentSettingsJsonSchema, conversationSettingsJsonSchema } from '../src/orgs/settings-json-schemas';
import { applyAgentDiff, applyConversationDiff } from '../src/orgs/user-settings-diffs';
import { permissionsOf } from '../src/orgs/user-settings-views';
import { AgentSettingsSchema } from '../src/schemas/organizations';
import { CustomSecretCreateSchema, SettingsUpdateSchema } from '../src/schemas/settings';

describe('the llm variant (SPEC 2.6 fields, published bounds)', () => {
  it('carries the standard fields and refuses unknown ones and bad values', () => {
    const ok = AgentSettingsSchema.safeParse({
      agent_kind: 'llm',
      enable_sub_agents: true,
      tool_concurrency_limit: 4,
      condenser: { enabled: true, max_size: 80 },
      llm: {
        is_subscription: true,
        auth_type: 'subscription',
        api_mode: 'responses',
        reasoning_effort: 'xhigh',
        reasoning_summary: 'concise',
        temperature: 0.2,
      },
    });
    expect(ok.success).toBe(true);
    expect(ok.data).toMatchObject({ agent_kind: 'llm', agent: 'CodeActAgent', enable_sub_agents: true, tools: [] });
    for (const bad of [
      { agent_kind: 'llm', surprise: 1 },
      { agent_kind: 'llm', llm: { api_mode: 'sideways' } },
      { agent_kind: 'llm', llm: { auth_type: 'password' } },
      { agent_kind: 'llm', llm: { reasoning_effort: 'extreme' } },
      { agent_kind: 'llm', llm: { top_p: 1.5 } },
      { agent_kind: 'llm', tool_concurrency_limit: 0 },
    ]) {
      expect(AgentSettingsSchema.safeParse(bad).success).toBe(false);
    }
  });
});

describe("a user's diffs over the organization's settings", () => {
  const org = newOrganization('acme', false);

  it('merges a diff of the same kind and starts afresh for another kind', () => {
    const same = applyAgentDiff(org.agent_settings, { llm: { model: 'm1' }, enable_sub_agents: true });
    expect(same.success && same.data).toMatchObject({
      agent_kind: 'platform',
      llm: { model: 'm1' },
      enable_sub_agents: true,
      agent: 'CodeActAgent',
    });
    const other = applyAgentDiff({ ...org.agent_settings, agent: 'Custom' } as never, {
      agent_kind: 'llm',
      llm: { model: 'm2' },
    });
    expect(other.success && other.data).toMatchObject({
      agent_kind: 'llm',
      agent: 'CodeActAgent',
      llm: { model: 'm2' },
    });
    expect(applyAgentDiff(org.agent_settings, { llm: { temperature: 9 } }).success).toBe(false);
    expect(applyConversationDiff(org.conversation_settings, { max_iterations: 7 }).success).toBe(true);
    expect(applyConversationDiff(org.conversation_settings, { max_iterations: 0 }).success).toBe(false);
  });

  it('members may not edit the organization; owners and admins may', () => {
    expect(permissionsOf('member')).not.toContain('edit_organization_settings');
    expect(permissionsOf('admin')).toContain('edit_organization_settings');
    expect(permissionsOf(null)).toEqual([]);
  });
});

describe('JSON Schemas of the settings, made from the zod schemas', () => {
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats(ajv);

  it('accept what the zod schemas accept and refuse what they refuse', () => {
    const agent = ajv.compile(agentSettingsJsonSchema());
    const conversation = ajv.compile(conversationSettingsJsonSchema());
    const samples: unknown[] = [
      { agent_kind: 'platform', llm: { model: 'x', temperature: 1 } },
      { agent_kind: 'llm', llm: { api_mode: 'chat' } },
      { agent_kind: 'acp', acp_command: ['agent'] },
      { agent_kind: 'platform', llm: { temperature: 3 } },
      { agent_kind: 'platform', extra: true },
      { agent_kind: 'nope' },
      { agent_kind: 'llm', llm: { reasoning_effort: 'max' } },
    ];
    for (const s of samples)
      expect({ s, valid: agent(s) }).toEqual({ s, valid: AgentSettingsSchema.safeParse(s).success });
    expect(conversation({ max_iterations: 10, confirmation_mode: true })).toBe(true);
    expect(conversation({ max_iterations: 0 })).toBe(false);
    expect(conversation({ unknown: 1 })).toBe(false);
  });
});

describe('request bodies', () => {
  it('a secret name must be an environment variable name; values are bounded', () => {
    expect(CustomSecretCreateSchema.safeParse({ name: 'DEPLOY_TOKEN', value: 'v' }).success).toBe(true);
    const bad = CustomSecretCreateSchema.safeParse({ name: '1-bad name', value: 'v' });
    expect(bad.success).toBe(false);
    expect(bad.error!.issues[0]!.message).toMatch(/environment variable name/);
    expect(CustomSecretCreateSchema.safeParse({ name: 'A', value: 'x'.repeat(64 * 1024 + 1) }).success).toBe(false);
    expect(CustomSecretCreateSchema.safeParse({ name: 'A', value: '' }).success).toBe(false);
  });

  it('POST /api/v1/settings refuses the legacy nested keys with a clear message', () => {
    const r = SettingsUpdateSchema.safeParse({ agent_settings: { llm: {} } });
    expect(r.success).toBe(false);
    expect(r.error!.issues[0]!.message).toMatch(/send agent_settings_diff/);
    expect(SettingsUpdateSchema.safeParse({ agent_settings_diff: { llm: {} }, language: 'en' }).success).toBe(true);
  });

  it("the published organization PATCH body becomes today's", () => {
    expect(
      fromPublishedPatch({
        name: null,
        agent_settings_diff: { llm: { model: 'm' } },
        llm_api_key: 'sk',
        conversation_settings_diff: { max_iterations: 5 },
      }),
    ).toEqual({
      agent_settings: { llm: { model: 'm', api_key: 'sk' } },
      conversation_settings: { max_iterations: 5 },
    });
    expect(() => fromPublishedPatch({ agent_settings: {}, agent_settings_diff: {} })).toThrow(/not both/);
  });
});

describe('the model file', () => {
  it('reads strings and objects, and names what is wrong in a bad file', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'models-'));
    const file = path.join(dir, 'models.json');
    fs.writeFileSync(
      file,
      JSON.stringify(['openai/gpt-x', { provider: 'local', name: 'llama', verified: false }, 'bare']),
    );
    expect(loadModelFile(file)).toEqual([
      { provider: 'openai', name: 'gpt-x', verified: true, hidden: false, canonical: null },
      { provider: 'local', name: 'llama', verified: false, hidden: false, canonical: null },
      { provider: null, name: 'bare', verified: true, hidden: false, canonical: null },
    ]);
    fs.writeFileSync(file, JSON.stringify([{ name: 'x', color: 'red' }]));
    expect(() => loadModelFile(file)).toThrow(ConfigError);
    expect(modelOf('a/b/c')).toMatchObject({ provider: 'a', name: 'b/c' });
    fs.rmSync(dir, { recursive: true, force: true });
  });
});
