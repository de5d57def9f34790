/**
 * Sandboxes outlive their worker: kill -9 the worker process while sandboxes run (and while one is
 * starting), start a new one, and everything is still RUNNING and controllable, with one runtime per
 * sandbox.
 */
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import type { TestApi } from './helpers/api';
import { startWorkerProcess } from './helpers/worker';
import { agentUrl, runtimeGet, runtimesUnder, waitForStatus } from './helpers/sandboxes';
import { startServiceUnderTest, type ServiceUnderTest } from './helpers/service';
import { setTimeout as sleep } from 'node:timers/promises';

describe('sandboxes across a worker crash', () => {
  let service: ServiceUnderTest;
  let t: TestApi;
  let dataDir: string;
  const workers: ChildProcess[] = [];

  beforeAll(async () => {
    // No worker of the fixture's: the test's own run as processes it kills.
    service = await startServiceUnderTest(
      'sandboxes-restart-',
      { SANDBOX_HEALTH_INTERVAL_MS: '500', SANDBOX_IDLE_TIMEOUT_MS: '0' },
      { worker: false },
    );
    ({ t, dataDir } = service);
  });

  afterAll(async () => {
    for (const w of workers) if (w.exitCode === null) w.kill('SIGKILL');
    await service?.close();
  });

  it('keeps sandboxes RUNNING and controllable after kill -9 of the worker, and finishes a start it interrupted', async () => {
    const u = await t.newUser();
    const first = startWorkerProcess(t.config, dataDir);
    workers.push(first.child);
    await first.ready;

    const created = await Promise.all([0, 1].map(() => t.request('POST', '/api/v1/sandboxes', { key: u.key })));
    const [a, b] = await Promise.all(created.map((r) => waitForStatus(t, u.key, r.body.id, 'RUNNING')));
    // A third one is still starting when the worker dies.
    const c = (await t.request('POST', '/api/v1/sandboxes', { key: u.key })).body;
    await sleep(150);
    first.child.kill('SIGKILL');
    await new Promise((r) => first.child.once('exit', r));

    // Without any worker, the runtimes go on answering with their keys.
    for (const s of [a, b]) expect((await runtimeGet(agentUrl(s), '/health', s.session_api_key))!.status).toBe(200);

    const second = startWorkerProcess(t.config, dataDir);
    workers.push(second.child);
    await second.ready;

    const cRunning = await waitForStatus(t, u.key, c.id, 'RUNNING', 60_000);
    expect((await runtimeGet(agentUrl(cRunning), '/health', cRunning.session_api_key))!.status).toBe(200);
    for (const s of [a, b, cRunning]) expect(runtimesUnder(path.join(dataDir, 'sandboxes', s.id))).toHaveLength(1);

    const paused = await t.request('POST', `/api/v1/sandboxes/${a.id}/pause`, { key: u.key });
    expect(paused.status).toBe(200);
    expect(paused.body.status).toBe('PAUSED');
    expect(await runtimeGet(agentUrl(a), '/alive', undefined, 700)).toBeNull();
    const resumed = await t.request('POST', `/api/v1/sandboxes/${a.id}/resume`, { key: u.key });
    expect(resumed.body.status).toBe('RUNNING');
    expect(resumed.body.session_api_key).toBe(a.session_api_key);
    expect((await runtimeGet(agentUrl(a), '/health', a.session_api_key))!.status).toBe(200);

    const deleted = await t.request('DELETE', `/api/v1/sandboxes/${b.id}`, { key: u.key });
    expect(deleted.body.status).toBe('DELETED');
    expect(runtimesUnder(path.join(dataDir, 'sandboxes', b.id))).toEqual([]);
    expect(fs.existsSync(path.join(dataDir, 'sandboxes', b.id))).toBe(false);

    second.child.kill('SIGTERM');
    expect(await new Promise((r) => second.child.once('exit', r))).toBe(0);
  });
});
