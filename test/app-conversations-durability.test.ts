/**
 * Starts survive their processes: kill -9 of the worker during the setup script, a restart of the api
 * during a stream, and 50 starts at once. The worker runs as its own process here, so it can be killed.
 */
import fs from 'node:fs';
import path from 'node:path';
import pino from 'pino';
import { startApiServer } from '../src/api/server';
import { START_TASK_STATUSES } from '../src/schemas/app-conversations';
import type { TestApi } from './helpers/api';
import { eventually } from './helpers/eventually';
import { setUnusedOrgLlm, startTaskEnded, waitForStartTask } from './helpers/start-tasks';
import { bareRepo } from './helpers/git-repo';
import { waitForStatus } from './helpers/sandboxes';
import { startServiceUnderTest, type ServiceUnderTest } from './helpers/service';
import { workerProcesses } from './helpers/worker';

describe('starts across process failures', () => {
  let service: ServiceUnderTest;
  let t: TestApi;
  let dataDir: string;
  let user: { userId: string; key: string };
  const workers = workerProcesses(
    () => t.config,
    () => dataDir,
  );
  const newWorker = workers.start;
  const waitForTask = (id: string, done: (s: any) => boolean, timeoutMs?: number) =>
    waitForStartTask(t, user.key, id, done, timeoutMs);

  beforeAll(async () => {
    // Its workers are processes of their own (workerProcesses), so a test can kill them.
    service = await startServiceUnderTest('starts-durable-', { SANDBOX_IDLE_TIMEOUT_MS: '0' }, { worker: false });
    ({ t, dataDir } = service);
    user = await t.newUser();
    await setUnusedOrgLlm(t, user.key);
    await newWorker();
  });

  afterAll(async () => {
    await workers.killAll();
    await service?.close();
  });

  it('kill -9 of the worker during the setup script: a new worker brings the same task to READY', async () => {
    const repo = bareRepo(dataDir, 'slow', {
      '.agents/setup.sh': 'echo started >> setup.log\nsleep 3\necho done >> setup.log\n',
    });
    const accepted = await t.request('POST', '/api/v1/app-conversations', {
      key: user.key,
      body: { selected_repository: repo },
    });
    expect(accepted.status).toBe(200);
    const running = await waitForTask(accepted.body.id, (s) => s.status === 'RUNNING_SETUP_SCRIPT');
    const log = path.join(dataDir, 'sandboxes', running.sandbox_id, 'workspace', 'slow', 'setup.log');
    await eventually(() => fs.existsSync(log), { what: `${log} written`, timeoutMs: 90_000, intervalMs: 50 }); // the test's own bound
    // Messages queued before and after the worker dies go out once, in order, after READY.
    const queue = (id: string, text: string) =>
      t.request('POST', `/api/v1/conversations/${accepted.body.id}/pending-messages`, {
        key: user.key,
        body: { id, content: [{ text }] },
      });
    expect((await queue('d-1', 'one')).status).toBe(201);
    expect((await queue('d-2', 'two')).status).toBe(201);
    const first = workers.all.at(-1)!;
    first.kill('SIGKILL');
    await new Promise((r) => first.once('exit', r));
    expect((await queue('d-3', 'three')).body).toMatchObject({ queued: true, position: 3 });

    await newWorker();
    const ready = await waitForTask(accepted.body.id, startTaskEnded);
    expect(ready).toMatchObject({
      status: 'READY',
      sandbox_id: running.sandbox_id,
      app_conversation_id: accepted.body.id,
    });
    // The interrupted step was run again to its end (the setup script says so twice at most).
    expect(fs.readFileSync(log, 'utf8')).toMatch(/done\n$/);
    await eventually(
      async () => {
        const listed = (
          await t.request('GET', `/api/v1/conversations/${accepted.body.id}/pending-messages`, { key: user.key })
        ).body;
        expect(listed.map((m: any) => [m.id, m.status])).toEqual([
          ['d-1', 'DELIVERED'],
          ['d-2', 'DELIVERED'],
          ['d-3', 'DELIVERED'],
        ]);
        const events = (
          await t.request(
            'GET',
            `/api/v1/conversation/${accepted.body.id}/events/search?kind__eq=MessageEvent&limit=100`,
            { key: user.key },
          )
        ).body.items;
        expect(events.filter((e: any) => e.source === 'user').map((e: any) => e.id)).toEqual(['d-1', 'd-2', 'd-3']);
      },
      { timeoutMs: 30_000, intervalMs: 250, what: 'the queued messages delivered in order' },
    );
  }, 120_000);

  it('the api restarts during a stream: the stream is cut, the task goes on and is read back by id', async () => {
    const repo = bareRepo(dataDir, 'streamed', { '.agents/setup.sh': 'sleep 2\n' });
    const res = await fetch(`${t.url}/api/v1/app-conversations/stream-start`, {
      method: 'POST',
      headers: { 'X-Access-Token': user.key, 'Content-Type': 'application/json' },
      body: JSON.stringify({ selected_repository: repo }),
    });
    expect(res.status).toBe(200);
    const reader = res.body!.getReader();
    let text = '';
    while (!text.includes('RUNNING_SETUP_SCRIPT')) text += new TextDecoder().decode((await reader.read()).value);
    const id = /"id":"([^"]+)"/.exec(text)![1]!;
    // The api goes away mid-stream (its connections cut), and comes back.
    t.api.server.closeAllConnections();
    await t.api.close();
    await reader.read().catch(() => undefined);
    t.api = await startApiServer(
      t.config,
      { mongoUri: t.config.mongo.uri!, temporalAddress: t.config.temporal.address! },
      pino({ level: 'silent' }),
    );
    const ready = await waitForTask(id, startTaskEnded);
    expect(ready.status).toBe('READY');
    // Joining the stream again replays every status, in order.
    const again = await t.request('POST', '/api/v1/app-conversations/stream-start', {
      key: user.key,
      body: { conversation_id: id, selected_repository: repo },
    });
    expect(again.body.map((s: any) => s.status)).toEqual(START_TASK_STATUSES.filter((st) => st !== 'ERROR'));
  }, 90_000);

  it('50 concurrent starts in one sandbox all reach READY, none lost', async () => {
    const sandbox = (await t.request('POST', '/api/v1/sandboxes', { key: user.key, body: {} })).body;
    await waitForStatus(t, user.key, sandbox.id, 'RUNNING');
    const accepted = await Promise.all(
      Array.from({ length: 50 }, () =>
        t.request('POST', '/api/v1/app-conversations', { key: user.key, body: { sandbox_id: sandbox.id } }),
      ),
    );
    expect(accepted.map((r) => r.status)).toEqual(Array(50).fill(200));
    const ids = accepted.map((r) => r.body.id as string);
    expect(new Set(ids).size).toBe(50);
    // One request for all of them, four times a second: the test should not be the load.
    const finals: any[] = await eventually(
      async () => {
        const tasks: any[] = (
          await t.request('GET', `/api/v1/app-conversations/start-tasks?${ids.map((id) => `ids=${id}`).join('&')}`, {
            key: user.key,
          })
        ).body;
        expect(tasks.map((s) => s.status)).toEqual(Array(50).fill(expect.stringMatching(/^(READY|ERROR)$/)));
        return tasks;
      },
      { timeoutMs: 120_000, intervalMs: 250 },
    );
    // A start that failed says why in the assertion, not only that it failed.
    expect(finals.map((s) => (s.status === 'READY' ? 'READY' : `${s.status}: ${s.detail}`))).toEqual(
      Array(50).fill('READY'),
    );
    expect(await t.database.db.collection('app_conversations').countDocuments({ _id: { $in: ids as any[] } })).toBe(50);
  }, 150_000);
});
