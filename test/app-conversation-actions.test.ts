/**
 * Acting on started conversations through the control plane, against the real api, worker, sandboxes
 * (process provider) and the scripted LLM: follow-up messages (also to a paused sandbox), run control,
 * rename, delete (sandbox kept when shared), workspace views, the richer AppConversation, and messages
 * queued during a start (delivered in order after READY, kept as UNDELIVERED when the start fails).
 */
import { randomUUID } from 'node:crypto';
import { ScriptedLlm } from '../src/llm/scripted-llm';
import { loggedEvents, logWhenExecution, newUserWithLlm } from './helpers/agent';
import { type TestApi } from './helpers/api';
import { eventually } from './helpers/eventually';
import { bareRepo } from './helpers/git-repo';
import { publishedClient } from './helpers/published-client';
import { waitForStatus } from './helpers/sandboxes';
import { startUntilEnded, waitForStartTask } from './helpers/start-tasks';
import { startServiceUnderTest, type ServiceUnderTest } from './helpers/service';

const userTexts = (log: any[]) =>
  log
    .filter((e) => e.kind === 'MessageEvent' && e.source === 'user')
    .map((e) => e.llm_message.content.map((c: any) => c.text).join(''));

describe('acting on started conversations', () => {
  let t: TestApi;
  let service: ServiceUnderTest;
  let dataDir: string;
  let llm: ScriptedLlm;
  let user: { userId: string; key: string };
  let other: { userId: string; key: string };
  let repo: string;

  beforeAll(async () => {
    service = await startServiceUnderTest('actions-', {
      SANDBOX_IDLE_TIMEOUT_MS: '0',
      START_SETUP_TIMEOUT_MS: '20000',
    });
    ({ t, dataDir } = service);
    llm = await new ScriptedLlm([]).start();
    user = await newUserWithLlm(t, llm);
    other = await newUserWithLlm(t, llm);
    repo = bareRepo(dataDir, 'demo', {
      'README.md': '# demo\n',
      '.agents/skills/testing.md': '---\nname: testing\ntriggers: [tests]\n---\nRun make test.\n',
    });
  });

  afterAll(async () => {
    await service?.close();
    await llm?.close();
  });

  /** Starts a conversation on the demo repository (no initial message); its task once it has ended. */
  const startReady = (body: object = {}) => startUntilEnded(t, user.key, { selected_repository: repo, ...body });
  const view = async (id: string, key = user.key) =>
    (await t.request('GET', `/api/v1/app-conversations?ids=${id}`, { key })).body[0];
  const settled = (id: string, status = 'finished') => logWhenExecution(t, user.key, id, status);
  /** A follow-up message with `text`, through the app conversation's send-message. */
  const sendMessage = (id: string, text: string) =>
    t.request('POST', `/api/v1/app-conversations/${id}/send-message`, { key: user.key, body: { content: [{ text }] } });
  /** A message for the conversation's queue (pending-messages); `messageId` makes sending it again idempotent. */
  const queueMessage = (id: string, text: string, opts: { messageId?: string; key?: string } = {}) =>
    t.request('POST', `/api/v1/conversations/${id}/pending-messages`, {
      key: opts.key ?? user.key,
      body: { ...(opts.messageId ? { id: opts.messageId } : {}), content: [{ text }] },
    });

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

  it('a message to a paused sandbox resumes it first; pause, run and interrupt control the agent; a sandbox that is gone is a 409', async () => {
    const ready = await startReady();
    const id = ready.app_conversation_id;
    expect(
      (await t.request('POST', `/api/v1/sandboxes/${ready.sandbox_id}/pause`, { key: user.key })).body.status,
    ).toBe('PAUSED');
    expect((await view(id)).sandbox_status).toBe('PAUSED');
    expect((await view(id)).session_api_key).toBeNull();
    // Reading the workspace does not resume it; a message does.
    expect(
      (await t.request('GET', `/api/v1/app-conversations/${id}/file?file_path=README.md`, { key: user.key })).status,
    ).toBe(409);
    llm.load([{ content: 'Hello back.' }]);
    const sent = await sendMessage(id, 'Hello');
    expect(sent).toMatchObject({
      status: 200,
      body: { success: true, sandbox_status: 'RUNNING', message: expect.stringContaining('resumed') },
    });
    await settled(id);

    // A slow step: interrupt cancels it at once, run goes on, pause waits for the step.
    llm.load([{ content: 'slow', delay_ms: 30_000 }, { content: 'done' }]);
    expect((await sendMessage(id, 'Take your time')).status).toBe(200);
    await settled(id, 'running');
    const interrupted = await t.request('POST', `/api/v1/app-conversations/${id}/interrupt`, { key: user.key });
    expect(interrupted).toMatchObject({ status: 200, body: { id } });
    await settled(id, 'paused'); // the step is cancelled at once, then the agent is paused
    const run = await t.request('POST', `/api/v1/app-conversations/${id}/run`, { key: user.key });
    expect(run.status).toBe(200);
    await settled(id);
    // Nothing to pause once the agent finished: the runtime's reason, as a 409.
    const paused = await t.request('POST', `/api/v1/app-conversations/${id}/pause`, { key: user.key });
    expect(paused.status).toBe(409);
    expect(paused.body.detail).toEqual(expect.any(String));

    // Its sandbox deleted from under it: a clear 409, not a hang.
    expect((await t.request('DELETE', `/api/v1/sandboxes/${ready.sandbox_id}`, { key: user.key })).status).toBe(200);
    const gone = await sendMessage(id, 'anyone?');
    expect(gone.status).toBe(409);
    expect(gone.body.detail).toMatch(/gone/);
    expect((await view(id)).sandbox_status).toBe('MISSING');
  }, 120_000);

  it('PATCH renames and changes visibility (null leaves a field as it is); DELETE removes the log, keeps a shared sandbox, deletes an unshared one', async () => {
    const a = await startReady({ title: 'First' });
    const b = await startReady({ sandbox_id: a.sandbox_id, title: 'Second' });
    expect(b.sandbox_id).toBe(a.sandbox_id);
    const renamed = await t.request('PATCH', `/api/v1/app-conversations/${a.id}`, {
      key: user.key,
      body: { title: 'Renamed', public: true },
    });
    expect(renamed).toMatchObject({ status: 200, body: { id: a.id, title: 'Renamed', public: true } });
    const kept = await t.request('PATCH', `/api/v1/app-conversations/${a.id}`, {
      key: user.key,
      body: { title: null, public: null },
    });
    expect(kept.body).toMatchObject({ title: 'Renamed', public: true });
    expect(
      (
        await t.request('PATCH', `/api/v1/app-conversations/${a.id}`, {
          key: user.key,
          body: { title: 'x', color: 'red' },
        })
      ).status,
    ).toBe(422);
    expect(
      (await t.request('PATCH', `/api/v1/app-conversations/${a.id}`, { key: other.key, body: { title: 'mine now' } }))
        .status,
    ).toBe(404);
    expect((await view(a.id)).title).toBe('Renamed');

    expect((await loggedEvents(t, user.key, a.id)).length).toBeGreaterThan(0);
    expect((await t.request('DELETE', `/api/v1/app-conversations/${a.id}`, { key: other.key })).status).toBe(404);
    expect(await t.request('DELETE', `/api/v1/app-conversations/${a.id}`, { key: user.key })).toMatchObject({
      status: 200,
      body: { success: true },
    });
    expect((await t.request('DELETE', `/api/v1/app-conversations/${a.id}`, { key: user.key })).status).toBe(404);
    expect(await view(a.id)).toBeNull();
    expect((await t.request('GET', `/api/v1/conversation/${a.id}/events/search`, { key: user.key })).status).toBe(404);
    expect(await t.database.db.collection('events').countDocuments({ conversation_id: a.id })).toBe(0);
    // The other conversation still runs in the shared sandbox.
    expect((await view(b.id)).sandbox_status).toBe('RUNNING');
    llm.load([{ content: 'still here' }]);
    expect((await sendMessage(b.id, 'ping')).status).toBe(200);

    expect((await t.request('DELETE', `/api/v1/app-conversations/${b.id}`, { key: user.key })).status).toBe(200);
    await waitForStatus(t, user.key, a.sandbox_id, 'DELETED');
  }, 120_000);

  it('messages queued during a start arrive in order after READY, each once; a start that fails keeps them as UNDELIVERED', async () => {
    const slow = bareRepo(dataDir, 'slow', { 'README.md': '# slow\n', '.agents/setup.sh': 'sleep 3\n' });
    const id = randomUUID();
    llm.load([{ content: 'got both' }, { content: 'got both' }]);
    const accepted = await t.request('POST', '/api/v1/app-conversations', {
      key: user.key,
      body: { conversation_id: id, selected_repository: slow },
    });
    expect(accepted.status).toBe(200);
    const q1 = await queueMessage(id, 'first queued', { messageId: 'm-1' });
    expect(q1).toMatchObject({ status: 201, body: { id: 'm-1', queued: true, position: 1, conversation_id: id } });
    const q2 = await queueMessage(id, 'second queued', { messageId: 'm-2' });
    expect(q2.body).toMatchObject({ queued: true, position: 2 });
    const again = await queueMessage(id, 'first queued', { messageId: 'm-1' });
    expect(again.body).toMatchObject({ id: 'm-1', position: 1 });
    expect((await queueMessage(id, 'x', { key: other.key })).status).toBe(404);

    await waitForStartTask(t, user.key, id, (s) => s.status === 'READY', 60_000);
    const listed = await eventually(
      async () => {
        const l = (await t.request('GET', `/api/v1/conversations/${id}/pending-messages`, { key: user.key })).body;
        expect(l.map((m: any) => [m.id, m.status])).toEqual([
          ['m-1', 'DELIVERED'],
          ['m-2', 'DELIVERED'],
        ]);
        return l;
      },
      { timeoutMs: 30_000, intervalMs: 200 },
    );
    expect(listed).toHaveLength(2);
    const log = await eventually(
      async () => {
        const l = await loggedEvents(t, user.key, id);
        expect(userTexts(l)).toEqual(['first queued', 'second queued']);
        return l;
      },
      { timeoutMs: 20_000, intervalMs: 200 },
    );
    expect(log.filter((e) => e.kind === 'MessageEvent' && e.source === 'user').map((e) => e.id)).toEqual([
      'm-1',
      'm-2',
    ]);
    // Once READY, a message goes at once.
    const now = await queueMessage(id, 'after ready');
    expect(now.body).toMatchObject({ queued: false, position: 0 });

    const failing = bareRepo(dataDir, 'failing', {
      'README.md': '# failing\n',
      '.agents/setup.sh': 'sleep 2\nexit 3\n',
    });
    const failId = randomUUID();
    await t.request('POST', '/api/v1/app-conversations', {
      key: user.key,
      body: { conversation_id: failId, selected_repository: failing },
    });
    expect((await queueMessage(failId, 'lost?')).status).toBe(201);
    await waitForStartTask(t, user.key, failId, (s) => s.status === 'ERROR', 60_000);
    await eventually(
      async () => {
        const l = (await t.request('GET', `/api/v1/conversations/${failId}/pending-messages`, { key: user.key })).body;
        expect(l).toEqual([
          expect.objectContaining({ status: 'UNDELIVERED', detail: expect.stringContaining('the start failed') }),
        ]);
      },
      { timeoutMs: 20_000, intervalMs: 200 },
    );
    expect((await queueMessage(failId, 'more')).status).toBe(409);
  }, 150_000);

  it('at most ten messages wait; bad bodies are 422; every route answers 401 without a key, 404 for a foreign or unknown id, 422 for a malformed one', async () => {
    const slow = bareRepo(dataDir, 'slower', { 'README.md': '# slower\n', '.agents/setup.sh': 'sleep 5\n' });
    const id = randomUUID();
    await t.request('POST', '/api/v1/app-conversations', {
      key: user.key,
      body: { conversation_id: id, selected_repository: slow },
    });
    for (let i = 0; i < 10; i++) {
      expect((await queueMessage(id, `m${i}`)).status).toBe(201);
    }
    const eleventh = await queueMessage(id, 'one too many');
    expect(eleventh.status).toBe(429);
    expect(eleventh.body.detail).toMatch(/10 messages/);
    for (const body of [
      {},
      { content: [] },
      { content: [{ text: 'x' }], role: 'system' },
      { content: [{ text: 'x' }], id: 'no spaces allowed' },
    ]) {
      const r = await t.request('POST', `/api/v1/conversations/${id}/pending-messages`, { key: user.key, body });
      expect(r.status).toBe(422);
      expect(Array.isArray(r.body.detail)).toBe(true);
    }

    const ready = await startReady();
    const routes: [string, string, unknown?][] = [
      ['POST', 'send-message', { content: [{ text: 'hi' }] }],
      ['POST', 'pause'],
      ['POST', 'run'],
      ['POST', 'interrupt'],
      ['PATCH', '', { title: 't' }],
      ['DELETE', ''],
      ['GET', 'file?file_path=README.md'],
      ['GET', 'git/changes?path=.'],
      ['GET', 'git/diff?path=README.md'],
      ['GET', 'skills'],
      ['GET', 'hooks'],
    ];
    for (const [method, tail, body] of routes) {
      const at = (cid: string) =>
        `/api/v1/app-conversations/${cid}${tail ? (tail.startsWith('?') ? tail : `/${tail}`) : ''}`;
      expect([method, tail, (await t.request(method, at(ready.id), { body })).status]).toEqual([method, tail, 401]);
      expect([method, tail, (await t.request(method, at(ready.id), { key: other.key, body })).status]).toEqual([
        method,
        tail,
        404,
      ]);
      expect([method, tail, (await t.request(method, at(randomUUID()), { key: user.key, body })).status]).toEqual([
        method,
        tail,
        404,
      ]);
      expect([method, tail, (await t.request(method, at('not-a-uuid'), { key: user.key, body })).status]).toEqual([
        method,
        tail,
        422,
      ]);
    }
    expect(
      (
        await t.request('POST', `/api/v1/app-conversations/${ready.id}/send-message`, {
          key: user.key,
          body: { content: 'not a list' },
        })
      ).status,
    ).toBe(422);
    expect(
      (await t.request('GET', `/api/v1/app-conversations/${ready.id}/git/changes`, { key: user.key })).status,
    ).toBe(422);
    expect((await view(ready.id)).title).toBeNull(); // nothing changed by any refused call
  }, 150_000);

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
