/**
 * Saved LLM profiles (the published /api/v1/settings/profiles), through a client generated from the
 * published document, against the real api, worker, sandboxes (process provider) and scripted LLM
 * endpoints: save, list, read, rename, activate and delete; a start that names a profile
 * (agent_profile_id, launched_agent_profile); and switch_profile of a running conversation.
 */
import { randomUUID } from 'node:crypto';
import { ScriptedLlm } from '../src/llm/scripted-llm';
import { MAX_PROFILES_PER_USER } from '../src/schemas/llm-profiles';
import { SECRET_MASK } from '../src/schemas/secret-mask';
import { logWhenExecution } from './helpers/agent';
import { type TestApi } from './helpers/api';
import { eventually } from './helpers/eventually';
import { publishedClient } from './helpers/published-client';
import { componentValidator, publishedDocument } from './helpers/published-schemas';
import { waitForStartTask } from './helpers/start-tasks';
import { startServiceUnderTest, type ServiceUnderTest } from './helpers/service';

const ORG_KEY = 'sk-org-key-0123456789';
const PROFILE_KEY = 'sk-profile-key-9876543210';
const SWITCH_KEY = 'sk-switch-key-5555555555';
const USER_KEY = 'sk-user-own-key-4444444444';

const ROUTER = 'openhands__app_server__settings__settings_router__';

/** Errors of `value` against a published component schema (none: it decodes as published). */
const publishedErrors = componentValidator(publishedDocument());

describe('LLM profiles', () => {
  let t: TestApi;
  let service: ServiceUnderTest;
  let orgLlm: ScriptedLlm;
  let profileLlm: ScriptedLlm;
  let switchLlm: ScriptedLlm;
  let user: { userId: string; key: string };
  let other: { userId: string; key: string };
  /** Every answer of the api in this file, to look for the keys in. */
  const answers: string[] = [];

  const api = (key: string) => {
    const client = publishedClient(t.url, key);
    client.use({
      onResponse: async ({ response }) => {
        answers.push(await response.clone().text());
      },
    });
    return client;
  };

  beforeAll(async () => {
    service = await startServiceUnderTest('profiles-', { SANDBOX_IDLE_TIMEOUT_MS: '0' });
    t = service.t;
    [orgLlm, profileLlm, switchLlm] = await Promise.all([
      new ScriptedLlm([]).start(),
      new ScriptedLlm([]).start(),
      new ScriptedLlm([]).start(),
    ]);
    user = await t.newUser();
    other = await t.newUser();
    await t.setOrgLlm(user.key, { model: 'org-model', base_url: orgLlm.url, api_key: ORG_KEY });
  });

  afterAll(async () => {
    await service?.close();
    await Promise.all([orgLlm?.close(), profileLlm?.close(), switchLlm?.close()]);
  });

  /** t.request, its answer kept for the grep of the last test. */
  const req = async (...args: Parameters<TestApi['request']>) => {
    const r = await t.request(...args);
    answers.push(JSON.stringify(r.body));
    return r;
  };

  it('saves, lists, reads (never a key), renames, activates and deletes profiles, each user only their own', async () => {
    const me = api(user.key);
    const saved = await me.POST('/api/v1/settings/profiles/{name}', {
      params: { path: { name: 'fast' } },
      body: {
        llm: { model: 'fast-model', base_url: profileLlm.url, api_key: PROFILE_KEY, temperature: 0.2 } as any,
        include_secrets: true,
        preserve_existing_api_key: false,
      },
    });
    expect(saved.response.status).toBe(201);
    expect(saved.data).toEqual({ name: 'fast', message: expect.any(String) });
    expect(publishedErrors(`${ROUTER}ProfileMutationResponse`, saved.data)).toEqual([]);

    // Without llm: a copy of the current agent_settings.llm (the organization's here), never with the
    // organization's key; with the user's own key when they set one (and include_secrets is not false).
    expect(
      (
        await me.POST('/api/v1/settings/profiles/{name}', {
          params: { path: { name: 'org.copy' } },
          body: { include_secrets: false, preserve_existing_api_key: false },
        })
      ).response.status,
    ).toBe(201);
    expect(
      (await me.POST('/api/v1/settings/profiles/{name}', { params: { path: { name: 'org-snapshot' } } })).response
        .status,
    ).toBe(201);
    expect((await req('POST', '/api/v1/settings', { key: user.key, body: { llm_api_key: USER_KEY } })).status).toBe(
      200,
    );
    expect(
      (await me.POST('/api/v1/settings/profiles/{name}', { params: { path: { name: 'mine' } } })).response.status,
    ).toBe(201);

    const list = await me.GET('/api/v1/settings/profiles');
    expect(list.response.status).toBe(200);
    expect(list.data).toEqual({
      profiles: [
        {
          name: 'fast',
          model: 'fast-model',
          base_url: profileLlm.url,
          api_key_set: true,
          id: expect.any(String),
          revision: 0,
        },
        {
          name: 'mine',
          model: 'org-model',
          base_url: orgLlm.url,
          api_key_set: true,
          id: expect.any(String),
          revision: 0,
        },
        {
          name: 'org-snapshot',
          model: 'org-model',
          base_url: orgLlm.url,
          api_key_set: false,
          id: expect.any(String),
          revision: 0,
        },
        {
          name: 'org.copy',
          model: 'org-model',
          base_url: orgLlm.url,
          api_key_set: false,
          id: expect.any(String),
          revision: 0,
        },
      ],
      active_profile: null,
    });
    expect(publishedErrors(`${ROUTER}ProfileListResponse`, list.data)).toEqual([]);
    const fastId = (list.data!.profiles[0] as unknown as { id: string }).id;

    const detail = await me.GET('/api/v1/settings/profiles/{name}', { params: { path: { name: 'fast' } } });
    expect(detail.data).toMatchObject({
      name: 'fast',
      api_key_set: true,
      id: fastId,
      revision: 0,
      config: { model: 'fast-model', base_url: profileLlm.url, temperature: 0.2, api_key: null },
    });

    expect(publishedErrors(`${ROUTER}ProfileDetailResponse`, detail.data)).toEqual([]);
    // Stored sealed: the key is nowhere in the database's copy.
    const raw = await t.database.db.collection('llm_profiles').findOne({ _id: fastId as any });
    expect(JSON.stringify(raw)).not.toContain(PROFILE_KEY);
    expect(raw).toMatchObject({ name: 'fast', user_id: user.userId });
    const stored = JSON.stringify(
      await t.database.db.collection('llm_profiles').find({ user_id: user.userId }).toArray(),
    );
    for (const key of [PROFILE_KEY, USER_KEY, ORG_KEY]) expect(stored).not.toContain(key);
    // The copy of the organization's LLM holds no key at all (stored sealed, a copied key would not show as text).
    const snapshot = await t.database.db
      .collection('llm_profiles')
      .findOne({ user_id: user.userId, name: 'org-snapshot' });
    expect(snapshot!.llm).not.toHaveProperty('api_key');

    // Overwrite: same id, next revision; preserve_existing_api_key keeps the key the request leaves out.
    const again = await me.POST('/api/v1/settings/profiles/{name}', {
      params: { path: { name: 'fast' } },
      body: {
        llm: { model: 'fast-model-2', base_url: profileLlm.url } as any,
        include_secrets: true,
        preserve_existing_api_key: true,
      },
    });
    expect(again.response.status).toBe(201);
    expect(
      (await me.GET('/api/v1/settings/profiles/{name}', { params: { path: { name: 'fast' } } })).data,
    ).toMatchObject({ id: fastId, revision: 1, api_key_set: true, config: { model: 'fast-model-2' } });
    // Without preserve: a save without a key has none.
    await me.POST('/api/v1/settings/profiles/{name}', {
      params: { path: { name: 'nokey' } },
      body: {
        llm: { model: 'm', base_url: profileLlm.url } as any,
        include_secrets: true,
        preserve_existing_api_key: false,
      },
    });
    expect(
      (await me.GET('/api/v1/settings/profiles/{name}', { params: { path: { name: 'nokey' } } })).data,
    ).toMatchObject({ api_key_set: false });

    // Rename: the id and key stay; a name in use is a 409, an unknown one a 404.
    expect(
      (
        await me.POST('/api/v1/settings/profiles/{name}/rename', {
          params: { path: { name: 'fast' } },
          body: { new_name: 'org.copy' },
        })
      ).response.status,
    ).toBe(409);
    expect(
      (
        await me.POST('/api/v1/settings/profiles/{name}/rename', {
          params: { path: { name: 'absent' } },
          body: { new_name: 'x' },
        })
      ).response.status,
    ).toBe(404);
    const renamed = await me.POST('/api/v1/settings/profiles/{name}/rename', {
      params: { path: { name: 'fast' } },
      body: { new_name: 'quick' },
    });
    expect(renamed.data).toEqual({ name: 'quick', message: expect.any(String) });
    expect(
      (await me.GET('/api/v1/settings/profiles/{name}', { params: { path: { name: 'quick' } } })).data,
    ).toMatchObject({ id: fastId, api_key_set: true });
    expect(
      (await me.GET('/api/v1/settings/profiles/{name}', { params: { path: { name: 'fast' } } })).response.status,
    ).toBe(404);

    // Activate: the profile's LLM becomes agent_settings.llm (its key too), and the list says which.
    const activated = await me.POST('/api/v1/settings/profiles/{name}/activate', {
      params: { path: { name: 'quick' } },
    });
    expect(activated.response.status).toBe(200);
    expect(activated.data).toEqual({ name: 'quick', message: expect.any(String), model: 'fast-model-2' });
    expect(publishedErrors(`${ROUTER}ActivateProfileResponse`, activated.data)).toEqual([]);
    const settings = await me.GET('/api/v1/settings');
    expect(settings.data).toMatchObject({
      llm_api_key_set: true,
      agent_settings: { llm: { model: 'fast-model-2', base_url: profileLlm.url, api_key: SECRET_MASK } },
    });
    expect((await me.GET('/api/v1/settings/profiles')).data!.active_profile).toBe('quick');

    // Another user sees none of them, and cannot read, rename, activate or delete them.
    const theirs = api(other.key);
    expect((await theirs.GET('/api/v1/settings/profiles')).data).toEqual({ profiles: [], active_profile: null });
    expect(
      (await theirs.GET('/api/v1/settings/profiles/{name}', { params: { path: { name: 'quick' } } })).response.status,
    ).toBe(404);
    expect(
      (await theirs.POST('/api/v1/settings/profiles/{name}/activate', { params: { path: { name: 'quick' } } })).response
        .status,
    ).toBe(404);
    expect(
      (await theirs.DELETE('/api/v1/settings/profiles/{name}', { params: { path: { name: 'quick' } } })).response
        .status,
    ).toBe(200);
    expect(
      (await me.GET('/api/v1/settings/profiles/{name}', { params: { path: { name: 'quick' } } })).response.status,
    ).toBe(200);

    // Delete: idempotent; the active mark goes with the profile (agent_settings stay as activated).
    expect((await me.DELETE('/api/v1/settings/profiles/{name}', { params: { path: { name: 'quick' } } })).data).toEqual(
      { name: 'quick', message: expect.any(String) },
    );
    expect(
      (await me.DELETE('/api/v1/settings/profiles/{name}', { params: { path: { name: 'quick' } } })).response.status,
    ).toBe(200);
    expect((await me.GET('/api/v1/settings/profiles')).data).toMatchObject({ active_profile: null });
    expect((await me.GET('/api/v1/settings')).data).toMatchObject({
      agent_settings: { llm: { model: 'fast-model-2' } },
    });
    for (const name of ['org.copy', 'org-snapshot', 'mine', 'nokey'])
      await me.DELETE('/api/v1/settings/profiles/{name}', { params: { path: { name } } });
  });

  it('refuses bad names, unknown LLM fields and more than the cap, changing nothing', async () => {
    const u = await t.newUser();
    const bad = await req('POST', '/api/v1/settings/profiles/has%20space', { key: u.key, body: {} });
    expect(bad.status).toBe(422);
    expect(bad.body.detail[0].loc).toEqual(['path', 'name']);
    const long = await req('POST', `/api/v1/settings/profiles/${'a'.repeat(65)}`, { key: u.key, body: {} });
    expect(long.status).toBe(422);
    const typo = await req('POST', '/api/v1/settings/profiles/typo', {
      key: u.key,
      body: { llm: { model: 'm', custom_header: 'x' } },
    });
    expect(typo.status).toBe(422);
    expect(typo.body.detail[0].loc).toEqual(['body', 'llm', 'custom_header']);
    const rename = await req('POST', '/api/v1/settings/profiles/typo/rename', {
      key: u.key,
      body: { new_name: 'a/b' },
    });
    expect(rename.status).toBe(422);
    expect((await req('GET', '/api/v1/settings/profiles', { key: u.key })).body.profiles).toEqual([]);
    expect((await req('GET', '/api/v1/settings/profiles')).status).toBe(401);

    const saves = await Promise.all(
      Array.from({ length: MAX_PROFILES_PER_USER + 3 }, (_, i) =>
        req('POST', `/api/v1/settings/profiles/p${i}`, { key: u.key, body: { llm: { model: `m${i}` } } }),
      ),
    );
    const statuses = saves.map((s) => s.status);
    // At once or not: never more than the cap kept, each refusal a 409 with a detail.
    expect(statuses.filter((s) => s === 201).length).toBeLessThanOrEqual(MAX_PROFILES_PER_USER);
    expect(statuses.every((s) => s === 201 || s === 409)).toBe(true);
    const kept = (await req('GET', '/api/v1/settings/profiles', { key: u.key })).body.profiles;
    expect(kept.length).toBe(statuses.filter((s) => s === 201).length);
    expect(saves.find((s) => s.status === 409)?.body.detail).toMatch(/delete one first/);
    // Overwriting one at the cap is no new profile.
    const names = kept.map((p: { name: string }) => p.name);
    for (let i = 0; kept.length + i < MAX_PROFILES_PER_USER; i++)
      expect(
        (await req('POST', `/api/v1/settings/profiles/fill${i}`, { key: u.key, body: { llm: { model: 'f' } } })).status,
      ).toBe(201);
    expect(
      (await req('POST', '/api/v1/settings/profiles/one-more', { key: u.key, body: { llm: { model: 'x' } } })).status,
    ).toBe(409);
    expect(
      (await req('POST', `/api/v1/settings/profiles/${names[0]}`, { key: u.key, body: { llm: { model: 'again' } } }))
        .status,
    ).toBe(201);
  });

  it('a start that names a profile uses its LLM and records it; switch_profile moves the running agent to another', async () => {
    const me = api(user.key);
    await me.POST('/api/v1/settings/profiles/{name}', {
      params: { path: { name: 'launch' } },
      body: {
        llm: { model: 'profile-model', base_url: profileLlm.url, api_key: PROFILE_KEY } as any,
        include_secrets: true,
        preserve_existing_api_key: false,
      },
    });
    await me.POST('/api/v1/settings/profiles/{name}', {
      params: { path: { name: 'switched' } },
      body: {
        llm: { model: 'switch-model', base_url: switchLlm.url, api_key: SWITCH_KEY } as any,
        include_secrets: true,
        preserve_existing_api_key: false,
      },
    });
    const launch = (await me.GET('/api/v1/settings/profiles/{name}', { params: { path: { name: 'launch' } } }))
      .data as unknown as { id: string; revision: number };

    // An id that is none of the caller's profiles: 422, nothing started.
    for (const id of [randomUUID(), 'not-a-uuid']) {
      const refused = await req('POST', '/api/v1/app-conversations', { key: user.key, body: { agent_profile_id: id } });
      expect(refused.status).toBe(422);
      expect(refused.body.detail[0].loc).toEqual(['body', 'agent_profile_id']);
    }
    const theirs = await req('POST', '/api/v1/app-conversations', {
      key: other.key,
      body: { agent_profile_id: launch.id },
    });
    expect(theirs.status).toBe(422);

    profileLlm.load([{ tool_calls: [{ name: 'finish', arguments: { message: 'done with the profile' } }] }]);
    // The organization's endpoint is not called (the user's own LLM, the profile activated above, is
    // the profile endpoint with another model: told apart by the model below).
    const orgBefore = orgLlm.requests.length;
    const accepted = await me.POST('/api/v1/app-conversations', {
      body: {
        agent_profile_id: launch.id,
        initial_message: { content: [{ type: 'text', text: 'Use the profile.' }], run: true },
      } as any,
    });
    expect(accepted.response.status).toBe(200);
    const ready = await waitForStartTask(
      t,
      user.key,
      accepted.data!.id!,
      (s) => s.status === 'READY' || s.status === 'ERROR',
      60_000,
    );
    expect(ready).toMatchObject({ status: 'READY' });
    const id = ready.app_conversation_id;
    await logWhenExecution(t, user.key, id, 'finished');
    expect(profileLlm.requests.at(-1)).toMatchObject({
      authorization: `Bearer ${PROFILE_KEY}`,
      body: { model: 'profile-model' },
    });
    expect(orgLlm.requests.length).toBe(orgBefore);

    const view = async () =>
      (await me.GET('/api/v1/app-conversations', { params: { query: { ids: [id] } } })).data![0] as any;
    expect(await view()).toMatchObject({
      llm_model: 'profile-model',
      launched_agent_profile: { agent_profile_id: launch.id, revision: launch.revision },
    });

    // switch_profile: the next step calls the other profile's endpoint with its key; the launch record stays.
    const unknown = await me.POST('/api/v1/app-conversations/{conversation_id}/switch_profile', {
      params: { path: { conversation_id: id } },
      body: { profile_name: 'absent' },
    });
    expect(unknown.response.status).toBe(404);
    await api(other.key).POST('/api/v1/settings/profiles/{name}', {
      params: { path: { name: 'switched' } },
      body: {
        llm: { model: 'theirs', base_url: switchLlm.url } as any,
        include_secrets: true,
        preserve_existing_api_key: false,
      },
    });
    const notMine = await api(other.key).POST('/api/v1/app-conversations/{conversation_id}/switch_profile', {
      params: { path: { conversation_id: id } },
      body: { profile_name: 'switched' },
    });
    expect(notMine.response.status).toBe(404);
    const switched = await me.POST('/api/v1/app-conversations/{conversation_id}/switch_profile', {
      params: { path: { conversation_id: id } },
      body: { profile_name: 'switched' },
    });
    expect(switched.response.status).toBe(200);
    expect(switched.data).toEqual({ success: true });
    expect(publishedErrors('Success', switched.data)).toEqual([]);
    expect(publishedErrors('LaunchedAgentProfile', (await view()).launched_agent_profile)).toEqual([]);
    expect(await view()).toMatchObject({
      llm_model: 'switch-model',
      launched_agent_profile: { agent_profile_id: launch.id, revision: launch.revision },
    });

    switchLlm.load([{ tool_calls: [{ name: 'finish', arguments: { message: 'done after the switch' } }] }]);
    const profileCalls = profileLlm.requests.length;
    expect(
      (
        await req('POST', `/api/v1/app-conversations/${id}/send-message`, {
          key: user.key,
          body: { content: [{ text: 'Go on.' }] },
        })
      ).status,
    ).toBe(200);
    await eventually(
      async () => {
        expect(switchLlm.requests.length).toBeGreaterThan(0);
      },
      { timeoutMs: 20_000, intervalMs: 100 },
    );
    expect(switchLlm.requests[0]).toMatchObject({
      authorization: `Bearer ${SWITCH_KEY}`,
      body: { model: 'switch-model' },
    });
    // The history went along: the first turn is in what the new LLM was sent.
    expect(JSON.stringify(switchLlm.requests[0]!.body.messages)).toContain('Use the profile.');
    expect(profileLlm.requests.length).toBe(profileCalls);

    // A deleted profile is no longer one a start may name.
    await me.DELETE('/api/v1/settings/profiles/{name}', { params: { path: { name: 'launch' } } });
    const gone = await req('POST', '/api/v1/app-conversations', {
      key: user.key,
      body: { agent_profile_id: launch.id },
    });
    expect(gone.status).toBe(422);
  });

  it('no answer of this file held a key in the clear', () => {
    expect(answers.length).toBeGreaterThan(40);
    for (const a of answers)
      for (const key of [ORG_KEY, PROFILE_KEY, SWITCH_KEY, USER_KEY]) expect(a).not.toContain(key);
  });
});
