/**
 * Controlling started conversations through the control plane, against the real api, worker, sandboxes
 * (process provider) and the scripted LLM: a message to a paused sandbox resumes it; pause, run and
 * interrupt; a sandbox deleted from under a conversation; rename and visibility (PATCH); delete, which
 * keeps a shared sandbox and deletes an unshared one.
 */
import { loggedEvents } from './helpers/agent';
import {
  llm,
  other,
  sendMessage,
  settled,
  startReady,
  t,
  useAppConversationActions,
  user,
  view,
} from './helpers/app-conversation-actions';
import { waitForStatus } from './helpers/sandboxes';

describe('acting on started conversations', () => {
  useAppConversationActions();

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
});
