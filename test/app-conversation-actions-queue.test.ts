/**
 * Messages for a conversation's queue (pending-messages) through the control plane, against the real api,
 * worker, sandboxes (process provider) and the scripted LLM: queued during a start they are delivered in
 * order after READY, each once, and kept as UNDELIVERED when the start fails; at most ten wait. Then the
 * calls refused on every app-conversation route: 401 without a key, 404 for a foreign or unknown id, 422
 * for a malformed one or a bad body.
 */
import { randomUUID } from 'node:crypto';
import { loggedEvents } from './helpers/agent';
import {
  dataDir,
  llm,
  other,
  queueMessage,
  startReady,
  t,
  useAppConversationActions,
  user,
  userTexts,
  view,
} from './helpers/app-conversation-actions';
import { eventually } from './helpers/eventually';
import { bareRepo } from './helpers/git-repo';
import { waitForStartTask } from './helpers/start-tasks';

describe('acting on started conversations', () => {
  useAppConversationActions();

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
});
