/**
 * Sandboxes end to end: the api, the real worker (sandbox workflow and activities), real Temporal and
 * the database, and real runtime processes started by the process provider. This file: the specs, a
 * sandbox's start, pause, resume and delete, a runtime killed from outside, the address its conversations
 * show, pause and resume at once. Searches and refusals are in sandboxes-search.test.ts, a gone runtime
 * and idle pause in sandboxes-health.test.ts.
 */
import type { Client } from '@temporalio/client';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { readStat } from '../src/process/process-tree';
import { sandboxWorkflowId } from '../src/temporal/shared';
import type { TestApi } from './helpers/api';
import { appConversationRecord } from './helpers/app-conversations';
import { agentUrl, runtimeGet, runtimesUnder, waitForStatus } from './helpers/sandboxes';
import { useSandboxesService } from './helpers/sandboxes-service';

describe('sandboxes', () => {
  const service = useSandboxesService('sandboxes-');
  const { create, running, pidOf } = service;
  let t: TestApi;
  let dataDir: string;
  let alice: { userId: string; key: string };
  let client: Client;
  beforeAll(() => {
    ({ t, dataDir, alice, client } = service.started());
  });

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
});
