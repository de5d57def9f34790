/**
 * Sandboxes end to end (as in sandboxes.test.ts), watched by their health checks, each suite on a
 * service of its own settings: a runtime that is gone is ERROR at once, not after the grace period; idle
 * sandboxes are paused after SANDBOX_IDLE_TIMEOUT_MS, while events from their runtime keep them running.
 */
import { readStat } from '../src/process/process-tree';
import type { TestApi } from './helpers/api';
import { agentUrl, runningSandbox, runtimeGet, runtimePid, waitForSandbox, waitForStatus } from './helpers/sandboxes';
import { startServiceUnderTest, type ServiceUnderTest } from './helpers/service';
import { setTimeout as sleep } from 'node:timers/promises';

describe('a runtime that is gone', () => {
  let service: ServiceUnderTest;
  let t: TestApi;
  let user: { userId: string; key: string };

  beforeAll(async () => {
    // A grace period far longer than the test's waits: a runtime that is gone must not wait it out.
    service = await startServiceUnderTest('sandboxes-gone-', {
      SANDBOX_HEALTH_INTERVAL_MS: '250',
      SANDBOX_HEALTH_GRACE_MS: '120000',
      SANDBOX_IDLE_TIMEOUT_MS: '0',
    });
    t = service.t;
    user = await t.newUser();
  });

  afterAll(async () => {
    await service?.close();
  });

  it('is ERROR at the first check that finds it gone, not after the grace period: its address and key are served no more', async () => {
    const s = await runningSandbox(t, user.key);
    const pid = await runtimePid(t, s.id);
    process.kill(pid, 'SIGKILL');
    // Its port is free for anyone to bind: a client must not be sent there with the session key.
    const failed = await waitForStatus(t, user.key, s.id, 'ERROR', 10_000);
    expect(failed).toMatchObject({ session_api_key: null, exposed_urls: [] });
    expect(failed.status_detail).toContain(`the runtime process (pid ${pid}) is gone`);
    const resumed = await t.request('POST', `/api/v1/sandboxes/${s.id}/resume`, { key: user.key });
    expect(resumed.body.status).toBe('RUNNING');
    expect((await runtimeGet(agentUrl(resumed.body), '/health', resumed.body.session_api_key))!.status).toBe(200);
    await t.request('DELETE', `/api/v1/sandboxes/${s.id}`, { key: user.key });
  }, 30_000);
});

describe('idle sandboxes', () => {
  it('are paused after SANDBOX_IDLE_TIMEOUT_MS without use; events from their runtime keep them running', async () => {
    const service = await startServiceUnderTest('sandboxes-idle-', {
      SANDBOX_HEALTH_INTERVAL_MS: '200',
      SANDBOX_IDLE_TIMEOUT_MS: '2000',
    });
    const { t } = service;
    try {
      const u = await t.newUser();
      const s = (await t.request('POST', '/api/v1/sandboxes', { key: u.key })).body;
      const runningAt = Date.now();
      await waitForStatus(t, u.key, s.id, 'RUNNING');
      const paused = await waitForSandbox(t, u.key, s.id, (x) => x.status === 'PAUSED', 15_000);
      expect(Date.now() - runningAt).toBeGreaterThanOrEqual(1500);
      expect(paused.status_detail).toBe('paused after 2 s without use');
      expect(readStat(await runtimePid(t, s.id))!.state).toBe('T');
      await t.request('DELETE', `/api/v1/sandboxes/${s.id}`, { key: u.key });

      // Events its runtime reports are use: while they come, the sandbox stays RUNNING.
      const busy = (await t.request('POST', '/api/v1/sandboxes', { key: u.key })).body;
      const running = await waitForStatus(t, u.key, busy.id, 'RUNNING');
      const conversation = await t.conversations.create({
        userId: u.userId,
        sandboxId: busy.id,
        sessionApiKey: running.session_api_key,
      });
      const until = Date.now() + 4000;
      for (let i = 0; Date.now() < until; i++) {
        const r = await t.ingest(conversation.id, running.session_api_key, [
          {
            id: `e${i}`,
            kind: 'MessageEvent',
            source: 'agent',
            timestamp: new Date().toISOString(),
            llm_message: { role: 'assistant', content: [{ type: 'text', text: 'working' }] },
          },
        ]);
        expect(r.status).toBe(200);
        await sleep(300);
      }
      const stillRunning = (await t.request('GET', `/api/v1/sandboxes?id=${busy.id}`, { key: u.key })).body[0];
      expect(stillRunning.status).toBe('RUNNING');
      // Quiet again: paused after the idle timeout.
      const pausedLater = await waitForSandbox(t, u.key, busy.id, (x) => x.status === 'PAUSED', 15_000);
      expect(pausedLater.status_detail).toBe('paused after 2 s without use');
      await t.request('DELETE', `/api/v1/sandboxes/${busy.id}`, { key: u.key });
    } finally {
      await service.close();
    }
  });
});
