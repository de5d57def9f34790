/**
 * Acting on started conversations through the control plane, against the real api, worker, sandboxes
 * (process provider) and the scripted LLM: follow-up messages, the richer AppConversation, workspace
 * views (a file, git changes and diffs, skills, hooks), and the same routes through a client generated
 * from the published document. Run control and delete are in app-conversation-actions-control.test.ts,
 * messages queued during a start and refused calls in app-conversation-actions-queue.test.ts.
 */
import {
  llm,
  other,
  sendMessage,
  settled,
  startReady,
  t,
  useAppConversationActions,
  user,
  userTexts,
  view,
} from './helpers/app-conversation-actions';
import { eventually } from './helpers/eventually';
import { publishedClient } from './helpers/published-client';

describe('acting on started conversations', () => {
  useAppConversationActions();

  it('a follow-up message changes what the agent does next; the conversation shows its sandbox, state, metrics and address', async () => {
    const ready = await startReady({ title: 'Follow-ups', pr_number: [7] });
    expect(ready.status).toBe('READY');
    const id = ready.app_conversation_id;
    llm.load([
      { tool_calls: [{ name: 'terminal', arguments: { command: 'echo one > notes.txt' } }] },
      { tool_calls: [{ name: 'finish', arguments: { message: 'wrote notes' } }] },
    ]);
    const first = await sendMessage(id, 'Write notes.txt');
    expect(first).toMatchObject({ status: 200, body: { success: true, sandbox_status: 'RUNNING', message: null } });
    await settled(id);

    llm.load([
      { tool_calls: [{ name: 'terminal', arguments: { command: 'echo two > second.txt' } }] },
      { tool_calls: [{ name: 'finish', arguments: { message: 'wrote second' } }] },
    ]);
    const before = llm.requests.length;
    const second = await sendMessage(id, 'Now write second.txt');
    expect(second.status).toBe(200);
    const log = await eventually(
      async () => {
        const l = await settled(id);
        expect(userTexts(l)).toEqual(['Write notes.txt', 'Now write second.txt']);
        // The second run's end, not the first's 'finished' still last when the message was just stored.
        expect(JSON.stringify(l.filter((e) => e.kind === 'ObservationEvent').at(-1))).toContain('wrote second');
        return l;
      },
      { timeoutMs: 20_000, intervalMs: 200 },
    );
    expect(JSON.stringify(llm.requests[before]!.body.messages)).toContain('Now write second.txt');
    // Each run: its terminal command's observation, then finish's.
    expect(
      log.filter((e) => e.kind === 'ObservationEvent').map((e) => (e as { tool_name?: string }).tool_name),
    ).toEqual(['terminal', 'finish', 'terminal', 'finish']);

    const c = await view(id);
    expect(c).toMatchObject({
      id,
      title: 'Follow-ups',
      sandbox_status: 'RUNNING',
      execution_status: 'finished',
      llm_model: 'scripted-model',
      pr_number: [7],
      public: null,
      tags: {},
      sub_conversation_ids: [],
      parent_conversation_id: null,
      conversation_url: `${ready.agent_server_url}/api/conversations/${id}`,
    });
    expect(c.metrics).toMatchObject({
      model_name: 'scripted-model',
      accumulated_token_usage: { prompt_tokens: expect.any(Number), completion_tokens: expect.any(Number) },
    });
    expect(c.metrics.accumulated_token_usage.prompt_tokens).toBeGreaterThan(0);
    // The address and key reach the conversation on its agent server.
    const direct = await fetch(c.conversation_url, { headers: { 'X-Session-API-Key': c.session_api_key } });
    expect(direct.status).toBe(200);
    expect(await view(id, other.key)).toBeNull();

    // The workspace through the control plane: a file, the git changes and a diff, the skills.
    expect(
      (await t.request('GET', `/api/v1/app-conversations/${id}/file?file_path=second.txt`, { key: user.key })).body,
    ).toBe('two\n');
    expect(
      (await t.request('GET', `/api/v1/app-conversations/${id}/file?file_path=absent.txt`, { key: user.key })).body,
    ).toBe('');
    const escape = await t.request(
      'GET',
      `/api/v1/app-conversations/${id}/file?file_path=${encodeURIComponent('../../../../etc/passwd')}`,
      { key: user.key },
    );
    expect(escape.status).toBe(400);
    const changes = await t.request('GET', `/api/v1/app-conversations/${id}/git/changes?path=.`, { key: user.key });
    expect(changes.status).toBe(200);
    expect(changes.body).toEqual(
      expect.arrayContaining([
        { status: 'ADDED', path: 'notes.txt' },
        { status: 'ADDED', path: 'second.txt' },
      ]),
    );
    for (const outside of ['../..', '../../etc', '/etc']) {
      const r = await t.request(
        'GET',
        `/api/v1/app-conversations/${id}/git/changes?path=${encodeURIComponent(outside)}`,
        { key: user.key },
      );
      expect([outside, r.status]).toEqual([outside, 400]);
    }
    const missing = await t.request('GET', `/api/v1/app-conversations/${id}/git/diff?path=nowhere.txt`, {
      key: user.key,
    });
    expect(missing.status).toBe(400); // about the path, not the conversation
    const diff = await t.request('GET', `/api/v1/app-conversations/${id}/git/diff?path=README.md`, { key: user.key });
    expect(diff).toMatchObject({ status: 200, body: { original: '# demo\n', modified: '# demo\n' } });
    const skills = await t.request('GET', `/api/v1/app-conversations/${id}/skills`, { key: user.key });
    expect(skills.body.skills).toEqual([
      expect.objectContaining({ name: 'testing', type: 'knowledge', triggers: ['tests'] }),
    ]);
    expect((await t.request('GET', `/api/v1/app-conversations/${id}/hooks`, { key: user.key })).body).toEqual({
      hooks: [],
    });
  }, 120_000);

  it('a client generated from the published document calls each route and decodes each answer', async () => {
    const client = publishedClient(t.url, user.key);
    const ready = await startReady();
    const id = ready.app_conversation_id;
    llm.load([{ tool_calls: [{ name: 'terminal', arguments: { command: 'echo hi > hi.txt' } }] }, { content: 'done' }]);
    const sent = await client.POST('/api/v1/app-conversations/{conversation_id}/send-message', {
      params: { path: { conversation_id: id } },
      body: { content: [{ type: 'text', text: 'Say hi in hi.txt', cache_prompt: false }], role: 'user', run: true },
    });
    expect(sent.data).toMatchObject({ success: true, sandbox_status: 'RUNNING' });
    await settled(id);
    const file = await client.GET('/api/v1/app-conversations/{conversation_id}/file', {
      params: { path: { conversation_id: id }, query: { file_path: 'hi.txt' } },
    });
    expect(file.data).toBe('hi\n');
    const changes = await client.GET('/api/v1/app-conversations/{conversation_id}/git/changes', {
      params: { path: { conversation_id: id }, query: { path: '.' } },
    });
    expect(changes.data).toEqual(expect.arrayContaining([{ status: 'ADDED', path: 'hi.txt' }]));
    const diff = await client.GET('/api/v1/app-conversations/{conversation_id}/git/diff', {
      params: { path: { conversation_id: id }, query: { path: 'hi.txt', ref: null } },
    });
    expect(diff.data).toEqual({ original: null, modified: 'hi\n' });
    expect(
      (
        await client.GET('/api/v1/app-conversations/{conversation_id}/skills', {
          params: { path: { conversation_id: id } },
        })
      ).data,
    ).toMatchObject({ skills: expect.any(Array) });
    expect(
      (
        await client.GET('/api/v1/app-conversations/{conversation_id}/hooks', {
          params: { path: { conversation_id: id } },
        })
      ).data,
    ).toEqual({ hooks: [] });
    const patched = await client.PATCH('/api/v1/app-conversations/{conversation_id}', {
      params: { path: { conversation_id: id } },
      body: { title: 'Published', public: null, selected_branch: null },
    });
    expect(patched.data).toMatchObject({
      id,
      title: 'Published',
      sandbox_id: ready.sandbox_id,
      sandbox_status: 'RUNNING',
      execution_status: 'finished',
      pr_number: [],
      sub_conversation_ids: [],
    });
    const queued = await client.POST('/api/v1/conversations/{conversation_id}/pending-messages', {
      params: { path: { conversation_id: id } },
      body: { content: [{ type: 'text', text: 'after ready' }] } as never,
    });
    expect(queued.data).toMatchObject({ queued: false, position: 0 });
    const deleted = await client.DELETE('/api/v1/app-conversations/{conversation_id}', {
      params: { path: { conversation_id: id } },
    });
    expect(deleted.data).toEqual({ success: true });
    const again = await client.DELETE('/api/v1/app-conversations/{conversation_id}', {
      params: { path: { conversation_id: id } },
    });
    expect(again.response.status).toBe(404);
  }, 120_000);
});
