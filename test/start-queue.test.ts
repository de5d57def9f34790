/**
 * A start over its user's quotas waits in line (the user's admission workflow) instead of failing: it
 * stays WAITING_FOR_SANDBOX with its place and what holds it up in the detail, goes on by itself when a
 * sandbox is paused or a start ends, in the order the starts came; another user is not held up; a start
 * that waits past START_QUEUE_WAIT_MS ends ERROR saying so; the line's workflow ends once nobody is in it.
 * Past USER_MAX_PENDING_STARTS or USER_MAX_CONVERSATIONS a start is a 429. An organization's own line is
 * in start-queue-organizations.test.ts.
 */
import { startTaskSnapshotsQuery, startTaskWorkflowId } from '../src/temporal/shared';
import { bareRepo } from './helpers/git-repo';
import {
  dir,
  ended,
  line,
  lineEnded,
  newUser,
  QUEUE_WAIT_MS,
  start,
  startEnded,
  t,
  temporal,
  useStartQueue,
  waiting,
} from './helpers/start-queue';
import { startTask, waitForStartTask } from './helpers/start-tasks';

describe("the start lines (USER_MAX_RUNNING_SANDBOXES, USER_MAX_CONCURRENT_STARTS, and an organization's own)", () => {
  useStartQueue();

  it('past the running-sandbox quota starts wait in order, told their place; a pause lets the first on, its end the next; another user goes on meanwhile', async () => {
    const a = await newUser();
    const one = await startEnded(a.key);
    expect(one).toMatchObject({ status: 'READY', detail: null });

    // A's one sandbox runs: the next two starts wait, in the order they came.
    const second = await start(a.key);
    await waitForStartTask(t, a.key, second, waiting(1), 20_000);
    const third = await start(a.key);
    const thirdWaits = await waitForStartTask(t, a.key, third, waiting(2), 20_000);
    expect(thirdWaits.detail).toContain('USER_MAX_RUNNING_SANDBOXES=1');
    expect(thirdWaits.detail).toContain('paused or deleted');
    expect(await line(a.userId)).toEqual({ admitted: [], waiting: [second, third] });
    expect((await t.request('GET', '/api/v1/sandboxes/search', { key: a.key })).body.items).toHaveLength(1);

    // Another user is not held up by A's line.
    const b = await newUser();
    expect(await startEnded(b.key)).toMatchObject({ status: 'READY' });
    expect((await startTask(t, a.key, second)).status).toBe('WAITING_FOR_SANDBOX');

    // Pausing A's sandbox makes room: the second goes on by itself, the third moves up.
    const paused = await t.request('POST', `/api/v1/sandboxes/${one.sandbox_id}/pause`, { key: a.key });
    expect(paused.body.status).toBe('PAUSED');
    const secondDone = await waitForStartTask(t, a.key, second, ended);
    expect(secondDone).toMatchObject({ status: 'READY', detail: null });
    expect(secondDone.sandbox_id).not.toBe(one.sandbox_id);
    await waitForStartTask(t, a.key, third, waiting(1), 20_000);

    // Deleting the second's sandbox lets the third on.
    expect(
      (await t.request('DELETE', `/api/v1/sandboxes/${secondDone.sandbox_id}`, { key: a.key })).status,
    ).toBeLessThan(300);
    expect(await waitForStartTask(t, a.key, third, ended)).toMatchObject({ status: 'READY' });
    await lineEnded(a.userId);
  }, 120_000);

  it('starts in a running sandbox need no room for one, but the concurrent-start quota: the third waits for one of two to end', async () => {
    const c = await newUser();
    const sandboxId = (await startEnded(c.key)).sandbox_id;
    // Each start runs a setup script of 3 s, so the first two are still under way when the third asks.
    const ids: string[] = [];
    for (const name of ['slow-1', 'slow-2', 'slow-3']) {
      ids.push(
        await start(c.key, {
          sandbox_id: sandboxId,
          selected_repository: bareRepo(dir, name, { '.agents/setup.sh': 'sleep 3\n' }),
        }),
      );
    }
    const done = await Promise.all(ids.map((id) => waitForStartTask(t, c.key, id, ended)));
    expect(done.map((s) => s.status)).toEqual(['READY', 'READY', 'READY']);
    // Two went on at once; the last to reach the line (the third sent, unless the workflows asked in
    // another order under load) waited its turn, told why: the starts under way.
    const histories = await Promise.all(
      ids.map((id) => temporal.workflow.getHandle(startTaskWorkflowId(id)).query(startTaskSnapshotsQuery)),
    );
    const waited = histories.map((h) => h.filter((s) => s.status === 'WAITING_FOR_SANDBOX' && s.detail));
    expect(waited.map((w) => w.length).sort()).toEqual([0, 0, 1]);
    expect(waited.find((w) => w.length === 1)![0]!.detail).toBe(
      'Waiting in line at place 1: as many of your starts are under way as one user may have (USER_MAX_CONCURRENT_STARTS=2); it goes on when one of them ends',
    );
    await lineEnded(c.userId);
  }, 120_000);

  it('a start that resumes a paused sandbox needs room for it: it waits until another is deleted, then resumes it', async () => {
    const e = await newUser();
    const paused = (await startEnded(e.key)).sandbox_id;
    expect((await t.request('POST', `/api/v1/sandboxes/${paused}/pause`, { key: e.key })).body.status).toBe('PAUSED');
    const running = (await startEnded(e.key)).sandbox_id;
    const resume = await start(e.key, { sandbox_id: paused });
    expect((await waitForStartTask(t, e.key, resume, waiting(1), 20_000)).detail).toContain(
      'USER_MAX_RUNNING_SANDBOXES=1',
    );
    expect((await t.request('GET', `/api/v1/sandboxes?id=${paused}`, { key: e.key })).body[0].status).toBe('PAUSED');
    expect((await t.request('DELETE', `/api/v1/sandboxes/${running}`, { key: e.key })).status).toBeLessThan(300);
    expect(await waitForStartTask(t, e.key, resume, ended)).toMatchObject({ status: 'READY', sandbox_id: paused });
    await lineEnded(e.userId);
  }, 120_000);

  it('starts not ended past USER_MAX_PENDING_STARTS are a 429 and make nothing; a resend of one of them still joins it', async () => {
    const f = await newUser();
    const first = await start(f.key);
    expect((await waitForStartTask(t, f.key, first, ended)).status).toBe('READY');
    // Its one sandbox runs: every further start waits in line, and stays not ended.
    const queued: string[] = [];
    for (let i = 1; i <= 3; i++) {
      queued.push(await start(f.key));
      await waitForStartTask(t, f.key, queued.at(-1)!, waiting(i), 20_000);
    }
    const refused = await t.request('POST', '/api/v1/app-conversations', { key: f.key, body: {} });
    expect(refused).toMatchObject({
      status: 429,
      body: { detail: expect.stringContaining('USER_MAX_PENDING_STARTS=3') },
    });
    const joined = await t.request('POST', '/api/v1/app-conversations', {
      key: f.key,
      body: { conversation_id: queued[0] },
    });
    expect(joined).toMatchObject({ status: 200, body: { id: queued[0] } });
    expect((await t.request('GET', '/api/v1/app-conversations/start-tasks/count', { key: f.key })).body).toBe(4);
    expect(await line(f.userId)).toEqual({ admitted: [], waiting: queued });
    // Deleting its sandbox lets them through, one at a time (one sandbox at most).
    const sandboxId = (await startTask(t, f.key, first)).sandbox_id;
    expect((await t.request('DELETE', `/api/v1/sandboxes/${sandboxId}`, { key: f.key })).status).toBeLessThan(300);
    expect((await waitForStartTask(t, f.key, queued[0]!, ended)).status).toBe('READY');
    expect((await t.request('POST', '/api/v1/app-conversations', { key: f.key, body: {} })).status).toBe(200);
  }, 120_000);

  it('past USER_MAX_CONVERSATIONS kept (with those unfinished starts will make) a start is a 429; deleting one makes room', async () => {
    const g = await newUser();
    const first = await start(g.key);
    const sandboxId = (await waitForStartTask(t, g.key, first, ended)).sandbox_id;
    const ids = [first];
    for (let i = 0; i < 4; i++) {
      ids.push(await start(g.key, { sandbox_id: sandboxId }));
      expect((await waitForStartTask(t, g.key, ids.at(-1)!, ended)).status).toBe('READY');
    }
    // Five kept and one under way: the seventh would pass the bound.
    ids.push(await start(g.key, { sandbox_id: sandboxId }));
    const refused = await t.request('POST', '/api/v1/app-conversations', {
      key: g.key,
      body: { sandbox_id: sandboxId },
    });
    expect(refused).toMatchObject({
      status: 429,
      body: { detail: expect.stringContaining('USER_MAX_CONVERSATIONS=6): delete some first') },
    });
    expect((await waitForStartTask(t, g.key, ids.at(-1)!, ended)).status).toBe('READY');
    expect((await t.request('GET', '/api/v1/app-conversations/count', { key: g.key })).body).toBe(6);
    const conversationId = (await startTask(t, g.key, ids[1]!)).app_conversation_id;
    expect((await t.request('DELETE', `/api/v1/app-conversations/${conversationId}`, { key: g.key })).status).toBe(200);
    expect(
      (await t.request('POST', '/api/v1/app-conversations', { key: g.key, body: { sandbox_id: sandboxId } })).status,
    ).toBe(200);
  }, 120_000);

  it(
    'a start that waits past START_QUEUE_WAIT_MS ends ERROR saying so, and leaves the line',
    async () => {
      const d = await newUser();
      expect((await startEnded(d.key)).status).toBe('READY');
      const late = await start(d.key);
      await waitForStartTask(t, d.key, late, waiting(1), 20_000);
      const gaveUp = await waitForStartTask(t, d.key, late, ended, QUEUE_WAIT_MS + 20_000);
      expect(gaveUp.status).toBe('ERROR');
      expect(gaveUp.detail).toContain(
        `waited ${QUEUE_WAIT_MS / 1000} s in line for its turn and did not get it (START_QUEUE_WAIT_MS); last seen at place 1: `,
      );
      expect(gaveUp.detail).toContain('USER_MAX_RUNNING_SANDBOXES=1');
      // Nothing was made for it, and the line is gone with it.
      expect((await t.request('GET', '/api/v1/sandboxes/search', { key: d.key })).body.items).toHaveLength(1);
      await lineEnded(d.userId);
    },
    QUEUE_WAIT_MS + 60_000,
  );
});
