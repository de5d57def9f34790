/**
 * Saved LLM profiles (the published /api/v1/settings/profiles), through a client generated from the
 * published document, against the real api (test/helpers/llm-profiles-service.ts): save, list, read, rename,
 * activate and delete, each user only their own; bad names, unknown LLM fields and more than the cap
 * refused. A start that names a profile, and switch_profile: llm-profiles-starts.test.ts.
 */
import { MAX_PROFILES_PER_USER } from '../src/schemas/llm-profiles';
import { SECRET_MASK } from '../src/schemas/secret-mask';
import {
  api,
  LLM_PROFILE_KEYS,
  ORG_KEY,
  orgLlm,
  other,
  PROFILE_KEY,
  profileLlm,
  publishedErrors,
  recorded,
  req,
  t,
  user,
  USER_KEY,
  useLlmProfilesService,
} from './helpers/llm-profiles-service';

const ROUTER = 'openhands__app_server__settings__settings_router__';

describe('LLM profiles', () => {
  useLlmProfilesService();

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

  it('no answer of this file held a key in the clear', () => {
    recorded.expectNoSecret(LLM_PROFILE_KEYS, { answers: 40 });
  });
});
