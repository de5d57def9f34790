/**
 * Sandboxes end to end: the api, the real worker (sandbox workflow and activities), real Temporal and
 * the database, and real runtime processes started by the process provider.
 */
import type { Client } from '@temporalio/client';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { readStat } from '../src/process/process-tree';
import { sandboxWorkflowId } from '../src/temporal/shared';
import type { TestApi } from './helpers/api';
import { appConversationRecord } from './helpers/app-conversations';
import { eventually } from './helpers/eventually';
import {
  agentUrl,
  runningSandbox,
  runtimeGet,
  runtimePid,
  runtimesUnder,
  waitForSandbox,
  waitForStatus,
} from './helpers/sandboxes';
import { startServiceUnderTest, type ServiceUnderTest } from './helpers/service';
import { setTimeout as sleep } from 'node:timers/promises';

describe('sandboxes', () => {
  let service: ServiceUnderTest;
  let t: TestApi;
  let dataDir: string;
  let alice: { userId: string; key: string };
  let bob: { userId: string; key: string };
  let client: Client;

  beforeAll(async () => {
    service = await startServiceUnderTest('sandboxes-', {
      SANDBOX_HEALTH_INTERVAL_MS: '250',
      SANDBOX_HEALTH_GRACE_MS: '1000',
      SANDBOX_IDLE_TIMEOUT_MS: '0',
      SANDBOX_HISTORY_LIMIT: '120',
    });
    ({ t, dataDir } = service);
    alice = await t.newUser();
    bob = await t.newUser();
    client = await service.temporal();
  });

  afterAll(async () => {
    await service?.close();
  });

  const create = async (key = alice.key, body: unknown = {}) => {
    const r = await t.request('POST', '/api/v1/sandboxes', { key, body });
    expect(r.status).toBe(200);
    return r.body;
  };
  const running = async (key = alice.key) => {
    const s = await create(key);
    return waitForStatus(t, key, s.id, 'RUNNING');
  };
  const pidOf = (id: string) => runtimePid(t, id);

  it('lists the built-in specs: the built-in runtime and the OpenHands agent server, as processes', async () => {
    const page = await t.request('GET', '/api/v1/sandbox-specs/search', { key: alice.key });
    expect(page.status).toBe(200);
    const spec = {
      provider: 'process',
      image: null,
      command: null,
      working_dir: 'workspace',
      initial_env: {},
      memory_mb: null,
      cpus: null,
      pids_limit: null,
      disk_mb: null,
      created_at: expect.any(String),
    };
    expect(page.body.items).toEqual([
      { id: 'local-process', runtime: 'built-in', ...spec },
      { id: 'local-process-openhands', runtime: 'openhands', ...spec },
    ]);
    expect(page.body.next_page_id).toBeNull();
    const got = await t.request('GET', '/api/v1/sandbox-specs?id=local-process&id=nope', { key: alice.key });
    expect(got.body).toEqual([page.body.items[0], null]);
  });

  it('starts a sandbox: STARTING, then RUNNING with a runtime that wants its key', async () => {
    const created = await create();
    expect(created).toEqual({
      id: expect.any(String),
      created_by_user_id: alice.userId,
      sandbox_spec_id: 'local-process',
      status: 'STARTING',
      session_api_key: null,
      exposed_urls: [],
      created_at: expect.any(String),
      status_detail: null,
    });
    const s = await waitForStatus(t, alice.key, created.id, 'RUNNING');
    expect(s.session_api_key).toMatch(/^acp_/);
    expect(s.exposed_urls).toEqual([
      { name: 'AGENT_SERVER', url: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+$/), port: expect.any(Number) },
    ]);
    const url = agentUrl(s);
    expect(await runtimeGet(url, '/alive')).toEqual({ status: 200, body: { status: 'ok' } });
    expect((await runtimeGet(url, '/health'))!.status).toBe(401);
    expect((await runtimeGet(url, '/health', 'acp_wrong_key_wrong_key_wrong_key_wrong_'))!.status).toBe(401);
    const health = await runtimeGet(url, '/health', s.session_api_key);
    expect(health!.status).toBe(200);
    expect(health!.body.working_dir).toBe(path.join(fs.realpathSync(dataDir), 'sandboxes', s.id, 'workspace'));
  });

  it('pause stops the process (its port does not answer), pausing again is a no-op, resume brings it back', async () => {
    const s = await running();
    const url = agentUrl(s);
    const pid = await pidOf(s.id);

    const paused = await t.request('POST', `/api/v1/sandboxes/${s.id}/pause`, { key: alice.key });
    expect(paused.status).toBe(200);
    expect(paused.body).toMatchObject({
      id: s.id,
      status: 'PAUSED',
      session_api_key: null,
      exposed_urls: [],
      status_detail: 'paused on request',
    });
    expect(readStat(pid)!.state).toBe('T');
    expect(await runtimeGet(url, '/alive', undefined, 700)).toBeNull();

    const again = await t.request('POST', `/api/v1/sandboxes/${s.id}/pause`, { key: alice.key });
    expect(again.status).toBe(200);
    expect(again.body.status).toBe('PAUSED');

    const resumed = await t.request('POST', `/api/v1/sandboxes/${s.id}/resume`, { key: alice.key });
    expect(resumed.status).toBe(200);
    expect(resumed.body).toMatchObject({ status: 'RUNNING', session_api_key: s.session_api_key, status_detail: null });
    expect(await runtimeGet(url, '/alive')).toEqual({ status: 200, body: { status: 'ok' } });
    expect(await pidOf(s.id)).toBe(pid);
  });

  it('delete removes the process and the directory; the record stays DELETED and refuses resume', async () => {
    const s = await running();
    const pid = await pidOf(s.id);
    const dir = path.join(dataDir, 'sandboxes', s.id);
    expect(fs.existsSync(dir)).toBe(true);

    const deleted = await t.request('DELETE', `/api/v1/sandboxes/${s.id}`, { key: alice.key });
    expect(deleted.status).toBe(200);
    expect(deleted.body).toMatchObject({ id: s.id, status: 'DELETED', session_api_key: null, exposed_urls: [] });
    const stat = readStat(pid);
    expect(stat === null || stat.state === 'Z').toBe(true);
    expect(fs.existsSync(dir)).toBe(false);
    expect(runtimesUnder(dir)).toEqual([]);

    const resume = await t.request('POST', `/api/v1/sandboxes/${s.id}/resume`, { key: alice.key });
    expect(resume.status).toBe(409);
    expect(resume.body.detail).toContain('was deleted');
    const pause = await t.request('POST', `/api/v1/sandboxes/${s.id}/pause`, { key: alice.key });
    expect(pause.status).toBe(409);
    const again = await t.request('DELETE', `/api/v1/sandboxes/${s.id}`, { key: alice.key });
    expect(again.status).toBe(200);
    expect(again.body.status).toBe('DELETED');

    const listed = await t.request('GET', '/api/v1/sandboxes/search', { key: alice.key });
    expect(listed.body.items.map((x: any) => x.id)).not.toContain(s.id);
    const onlyDeleted = await t.request('GET', '/api/v1/sandboxes/search?status__eq=DELETED', { key: alice.key });
    expect(onlyDeleted.body.items.map((x: any) => x.id)).toContain(s.id);
    const wf = await client.workflow.getHandle(sandboxWorkflowId(s.id)).describe();
    expect(wf.status.name).toBe('COMPLETED');
  });

  it('a runtime killed from outside turns ERROR (its process is gone); resume starts it again', async () => {
    const s = await running();
    const pid = await pidOf(s.id);
    process.kill(pid, 'SIGKILL');
    const failed = await waitForStatus(t, alice.key, s.id, 'ERROR', 15_000);
    expect(failed.status_detail).toContain(`the runtime process (pid ${pid}) is gone`);
    expect(failed.status_detail).toContain('resume');
    expect(failed.session_api_key).toBeNull();

    const pause = await t.request('POST', `/api/v1/sandboxes/${s.id}/pause`, { key: alice.key });
    expect(pause.status).toBe(409);
    expect(pause.body.detail).toContain('is ERROR');

    const resumed = await t.request('POST', `/api/v1/sandboxes/${s.id}/resume`, { key: alice.key });
    expect(resumed.status).toBe(200);
    expect(resumed.body.status).toBe('RUNNING');
    expect(await pidOf(s.id)).not.toBe(pid);
    expect((await runtimeGet(agentUrl(resumed.body), '/health', resumed.body.session_api_key))!.status).toBe(200);
  });

  it("a conversation shows its sandbox's address as it is now: none while the runtime is gone or paused, the new one once it runs again", async () => {
    const s = await running();
    const oldUrl = agentUrl(s);
    // A conversation as a start records it: with the address its sandbox had then.
    const conversationId = randomUUID();
    await t.stores.appConversations.create(
      appConversationRecord({
        id: conversationId,
        created_by_user_id: alice.userId,
        sandbox_id: s.id,
        title: 'restarted',
        agent_server_url: oldUrl,
      }),
    );
    const conversation = async () =>
      (await t.request('GET', `/api/v1/app-conversations?ids=${conversationId}`, { key: alice.key })).body[0];
    expect(await conversation()).toMatchObject({
      sandbox_status: 'RUNNING',
      agent_server_url: oldUrl,
      conversation_url: `${oldUrl}/api/conversations/${conversationId}`,
    });

    const pid = await pidOf(s.id);
    process.kill(pid, 'SIGKILL');
    await waitForStatus(t, alice.key, s.id, 'ERROR', 15_000);
    expect(await conversation()).toMatchObject({
      sandbox_status: 'ERROR',
      agent_server_url: null,
      conversation_url: null,
      session_api_key: null,
    });

    // Resumed: a new runtime, whose address is recorded before the sandbox is RUNNING again.
    const resumed = await t.request('POST', `/api/v1/sandboxes/${s.id}/resume`, { key: alice.key });
    expect(resumed.body.status).toBe('RUNNING');
    const newUrl = agentUrl(resumed.body);
    const record = (await t.database.db.collection('sandboxes').findOne({ _id: s.id as any }))!;
    expect(record.runtime.pid).not.toBe(pid);
    expect(record.exposed_urls).toEqual([{ name: 'AGENT_SERVER', url: newUrl, port: record.runtime.port }]);
    expect(newUrl).toBe(`http://127.0.0.1:${record.runtime.port}`);
    expect(await conversation()).toMatchObject({
      sandbox_status: 'RUNNING',
      agent_server_url: newUrl,
      conversation_url: `${newUrl}/api/conversations/${conversationId}`,
      session_api_key: resumed.body.session_api_key,
    });
    // Paused, the runtime answers nothing: no address until it runs again.
    expect((await t.request('POST', `/api/v1/sandboxes/${s.id}/pause`, { key: alice.key })).body).toMatchObject({
      status: 'PAUSED',
      exposed_urls: [],
    });
    expect(await conversation()).toMatchObject({
      sandbox_status: 'PAUSED',
      agent_server_url: null,
      conversation_url: null,
    });
  });

  it('pause and resume sent at once are serialised: the status and the process agree', async () => {
    const s = await running();
    for (let round = 0; round < 3; round++) {
      const [p, r] = await Promise.all([
        t.request('POST', `/api/v1/sandboxes/${s.id}/pause`, { key: alice.key }),
        t.request('POST', `/api/v1/sandboxes/${s.id}/resume`, { key: alice.key }),
      ]);
      expect(p.status).toBe(200);
      expect(r.status).toBe(200);
      const now = (await t.request('GET', `/api/v1/sandboxes?id=${s.id}`, { key: alice.key })).body[0];
      expect(['PAUSED', 'RUNNING']).toContain(now.status);
      const state = readStat(await pidOf(s.id))!.state;
      expect(state === 'T').toBe(now.status === 'PAUSED');
    }
  });

  it("keeps users apart: another user's sandbox is 404 and never listed", async () => {
    const s = await create();
    for (const [method, p] of [
      ['POST', `/api/v1/sandboxes/${s.id}/pause`],
      ['POST', `/api/v1/sandboxes/${s.id}/resume`],
      ['DELETE', `/api/v1/sandboxes/${s.id}`],
    ] as const) {
      const r = await t.request(method, p, { key: bob.key });
      expect(r.status).toBe(404);
      expect(r.body).toEqual({ detail: 'Sandbox not found' });
    }
    expect((await t.request('GET', `/api/v1/sandboxes?id=${s.id}`, { key: bob.key })).body).toEqual([null]);
    const listed = await t.request('GET', '/api/v1/sandboxes/search', { key: bob.key });
    expect(listed.body.items.map((x: any) => x.id)).not.toContain(s.id);
    expect((await t.request('POST', '/api/v1/sandboxes/nope/pause', { key: alice.key })).status).toBe(404);
    expect((await t.request('GET', '/api/v1/sandboxes/search')).status).toBe(401);
  });

  it('answers bad input with 422 and starts nothing', async () => {
    const before = await t.database.db.collection('sandboxes').countDocuments();
    const unknownBody = await t.request('POST', '/api/v1/sandboxes', {
      key: alice.key,
      body: { sandbox_spec_id: 'nope' },
    });
    expect(unknownBody.status).toBe(422);
    expect(unknownBody.body.detail[0]).toMatchObject({
      loc: ['body', 'sandbox_spec_id'],
      type: 'value_error',
      input: 'nope',
    });
    const unknownQuery = await t.request('POST', '/api/v1/sandboxes?sandbox_spec_id=nope', { key: alice.key });
    expect(unknownQuery.status).toBe(422);
    expect(unknownQuery.body.detail[0].loc).toEqual(['query', 'sandbox_spec_id']);
    const extra = await t.request('POST', '/api/v1/sandboxes', { key: alice.key, body: { image: 'x' } });
    expect(extra.status).toBe(422);
    expect(extra.body.detail[0]).toMatchObject({ loc: ['body', 'image'], type: 'extra_forbidden' });
    expect(await t.database.db.collection('sandboxes').countDocuments()).toBe(before);

    for (const [q, loc] of [
      ['limit=0', ['query', 'limit']],
      ['limit=101', ['query', 'limit']],
      ['status__eq=SLEEPING', ['query', 'status__eq']],
      ['created_at__gte=yesterday', ['query', 'created_at__gte']],
      ['page_id=bogus!', ['query', 'page_id']],
    ] as const) {
      const r = await t.request('GET', `/api/v1/sandboxes/search?${q}`, { key: alice.key });
      expect(r.status).toBe(422);
      expect(r.body.detail[0].loc).toEqual(loc);
    }
    expect((await t.request('GET', '/api/v1/sandboxes', { key: alice.key })).status).toBe(422);
    const many = Array.from({ length: 101 }, (_, i) => `id=s${i}`).join('&');
    expect((await t.request('GET', `/api/v1/sandboxes?${many}`, { key: alice.key })).status).toBe(422);
  });

  it('searches with filters and a cursor, newest first', async () => {
    const carol = await t.newUser();
    const made: any[] = [];
    for (let i = 0; i < 3; i++) {
      made.push(await create(carol.key));
      await sleep(5);
    }
    const all = await t.request('GET', '/api/v1/sandboxes/search', { key: carol.key });
    expect(all.body.items.map((x: any) => x.id)).toEqual(made.map((x) => x.id).reverse());
    const first = await t.request('GET', '/api/v1/sandboxes/search?limit=2', { key: carol.key });
    expect(first.body.items).toHaveLength(2);
    const second = await t.request('GET', `/api/v1/sandboxes/search?limit=2&page_id=${first.body.next_page_id}`, {
      key: carol.key,
    });
    expect(second.body.items.map((x: any) => x.id)).toEqual([made[0].id]);
    expect(second.body.next_page_id).toBeNull();
    const since = await t.request(
      'GET',
      `/api/v1/sandboxes/search?created_at__gte=${encodeURIComponent(made[1].created_at)}`,
      { key: carol.key },
    );
    expect(since.body.items.map((x: any) => x.id)).toEqual([made[2].id, made[1].id]);
    const before = await t.request(
      'GET',
      `/api/v1/sandboxes/search?created_at__lt=${encodeURIComponent(made[1].created_at)}`,
      { key: carol.key },
    );
    expect(before.body.items.map((x: any) => x.id)).toEqual([made[0].id]);
    const bySpec = await t.request('GET', '/api/v1/sandboxes/search?sandbox_spec_id__eq=other', { key: carol.key });
    expect(bySpec.body.items).toEqual([]);
    for (const s of made) await waitForStatus(t, carol.key, s.id, 'RUNNING');
    const runningOnly = await t.request('GET', '/api/v1/sandboxes/search?status__eq=RUNNING', { key: carol.key });
    expect(runningOnly.body.items).toHaveLength(3);
    for (const s of made) await t.request('DELETE', `/api/v1/sandboxes/${s.id}`, { key: carol.key });
  });

  it('keeps its search attributes current for operators, and continues as new without losing its state', async () => {
    const s = await running();
    const handle = client.workflow.getHandle(sandboxWorkflowId(s.id));
    const query = `WorkflowId = "${sandboxWorkflowId(s.id)}" AND OwnerUserId = "${alice.userId}" AND SandboxStatus = "RUNNING"`;
    const listed = async (q: string) => {
      const ids: string[] = [];
      for await (const w of client.workflow.list({ query: q })) ids.push(w.workflowId);
      return ids;
    };
    await eventually(async () => expect(await listed(query)).toEqual([sandboxWorkflowId(s.id)]), {
      timeoutMs: 10_000,
      intervalMs: 100,
    });

    // SANDBOX_HISTORY_LIMIT=120: health checks every 250 ms fill that in a few seconds.
    const first = (await handle.describe()).runId;
    // Health checks run late on a loaded machine (one run measured 19.5 s here under load): a generous bound.
    await eventually(async () => expect((await handle.describe()).runId).not.toBe(first), {
      timeoutMs: 45_000,
      intervalMs: 100,
    });
    expect(await handle.query('state')).toEqual({ status: 'RUNNING', status_detail: null });
    const paused = await t.request('POST', `/api/v1/sandboxes/${s.id}/pause`, { key: alice.key });
    expect(paused.body.status).toBe('PAUSED');
    const pausedQuery = `WorkflowId = "${sandboxWorkflowId(s.id)}" AND SandboxStatus = "PAUSED"`;
    await eventually(async () => expect(await listed(pausedQuery)).toEqual([sandboxWorkflowId(s.id)]), {
      timeoutMs: 10_000,
      intervalMs: 100,
    });

    // The provider calls read as what they do in the Temporal UI: the first run started the runtime, the
    // current one paused it.
    const summaries = async (runId?: string) =>
      ((await client.workflow.getHandle(sandboxWorkflowId(s.id), runId).fetchHistory()).events ?? [])
        .filter((e) => e.activityTaskScheduledEventAttributes)
        .map((e) => JSON.parse(Buffer.from(e.userMetadata!.summary!.data!).toString('utf8')));
    expect(await summaries(first)).toEqual(['start the runtime']);
    expect(await summaries()).toEqual(['pause the runtime']);
  }, 90_000);
});

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
