/**
 * Saved LLM profiles (the published /api/v1/settings/profiles) in conversations, through a client
 * generated from the published document, against the real api, worker, sandboxes (process provider) and
 * scripted LLM endpoints (test/helpers/llm-profiles-service.ts): a start that names a profile
 * (agent_profile_id, launched_agent_profile), and switch_profile of a running conversation. The profiles
 * themselves: llm-profiles.test.ts.
 */
import { randomUUID } from 'node:crypto';
import { logWhenExecution } from './helpers/agent';
import { eventually } from './helpers/eventually';
import {
  api,
  LLM_PROFILE_KEYS,
  orgLlm,
  other,
  PROFILE_KEY,
  profileLlm,
  publishedErrors,
  recorded,
  req,
  SWITCH_KEY,
  switchLlm,
  t,
  user,
  useLlmProfilesService,
} from './helpers/llm-profiles-service';
import { waitForStartTask } from './helpers/start-tasks';

describe('LLM profiles', () => {
  useLlmProfilesService();

  beforeAll(async () => {
    // As the profiles' own suite (llm-profiles.test.ts) leaves the user: their own LLM is that of a profile
    // activated and then deleted, the profile endpoint with another model than the profile started below.
    const statuses = [
      await req('POST', '/api/v1/settings/profiles/fast', {
        key: user.key,
        body: {
          llm: { model: 'fast-model-2', base_url: profileLlm.url, api_key: PROFILE_KEY },
          include_secrets: true,
          preserve_existing_api_key: false,
        },
      }),
      await req('POST', '/api/v1/settings/profiles/fast/activate', { key: user.key }),
      await req('DELETE', '/api/v1/settings/profiles/fast', { key: user.key }),
    ].map((r) => r.status);
    expect(statuses).toEqual([201, 200, 200]);
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
    recorded.expectNoSecret(LLM_PROFILE_KEYS, { answers: 10 });
  });
});
