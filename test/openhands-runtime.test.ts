/**
 * A conversation on the real OpenHands agent server (PyPI openhands-agent-server, installed by the global
 * setup from runtimes/openhands/requirements.lock), in a process sandbox, through the control plane:
 * the api, the worker, the scripted LLM on loopback (no network). The start reaches READY with every
 * status; the agent edits a file of the cloned repository with the server's own tools; the events it
 * reports (its webhook, ids as 32 hex digits, its conversation-info post) are stored in order, each
 * valid against SPEC.md's schemas; a follow-up message, run control, file and git views go through the
 * same client as the built-in runtime's; delete leaves nothing running.
 */
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import { Client, Connection } from '@temporalio/client';
import { createConversationServices, createSandboxService } from '../src/composition';
import pino from 'pino';
import { startApiServer } from '../src/api/server';
import os from 'node:os';
import path from 'node:path';
import { ScriptedLlm } from '../src/llm/scripted-llm';
import { freePort } from '../src/process/net';
import { readStat } from '../src/process/process-tree';
import { EventSchema } from '../src/schemas/events';
import { loggedEvents, logWhenExecution } from './helpers/agent';
import { startTestApi, type TestApi } from './helpers/api';
import { testConfig } from './helpers/env';
import { eventually } from './helpers/eventually';
import { bareRepo } from './helpers/git-repo';
import { killRuntimesUnder, waitForStatus } from './helpers/sandboxes';
import { waitForStartTask } from './helpers/start-tasks';
import { startTestWorker, type TestWorker } from './helpers/worker';

describe('the real OpenHands agent server in a process sandbox', () => {
  let t: TestApi;
  let worker: TestWorker;
  let dataDir: string;
  let llm: ScriptedLlm;
  let user: { userId: string; key: string };
  let repo: string;

  beforeAll(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'openhands-'));
    const config = testConfig({
      DATA_DIR: dataDir,
      API_PORT: String(await freePort()),
      DEFAULT_SANDBOX_SPEC_ID: 'local-process-openhands',
      SANDBOX_IDLE_TIMEOUT_MS: '0',
      SANDBOX_START_TIMEOUT_MS: '120000',
      SANDBOX_HEALTH_INTERVAL_MS: '2000',
    });
    t = await startTestApi(config);
    worker = await startTestWorker(config);
    llm = await new ScriptedLlm([]).start();
    user = await t.newUser();
    await t.setOrgLlm(user.key, { model: 'scripted-model', base_url: llm.url, api_key: 'sk-org' });
    repo = bareRepo(dataDir, 'demo', { 'README.md': '# demo\n' });
  });

  afterAll(async () => {
    await worker?.stop();
    await t?.close();
    await llm?.close();
    killRuntimesUnder(dataDir);
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  const settled = (id: string, status = 'finished') => logWhenExecution(t, user.key, id, status, 60_000);

  it('starts to READY, edits the repository with its tools, reports every event in order, and answers the control plane like the built-in runtime', async () => {
    const accepted = await t.request('POST', '/api/v1/app-conversations', { key: user.key, body: { selected_repository: repo, title: 'On the real agent' } });
    expect(accepted.status).toBe(200);
    const ready = await waitForStartTask(t, user.key, accepted.body.id, (s) => s.status === 'READY' || s.status === 'ERROR', 180_000);
    expect({ status: ready.status, detail: ready.detail }).toEqual({ status: 'READY', detail: null });
    const id = ready.app_conversation_id as string;
    const sandbox = await t.database.db.collection('sandboxes').findOne({ _id: ready.sandbox_id });
    expect(sandbox!.spec.runtime).toBe('openhands');
    const handle = sandbox!.runtime as { pid: number; workspace: string };
    const repoDir = path.join(handle.workspace, 'demo');
    expect(fs.readFileSync(path.join(repoDir, 'README.md'), 'utf8')).toBe('# demo\n');
    // Its state stays outside the repository.
    expect(fs.readdirSync(repoDir).sort()).toEqual(['.git', 'README.md']);

    // The agent's own tools: the file editor makes a file (absolute path), the terminal reads it back.
    llm.load([
      { content: 'Creating the file.', tool_calls: [{ name: 'file_editor', arguments: { command: 'create', path: path.join(repoDir, 'hello.txt'), file_text: 'hello\n' } }] },
      { tool_calls: [{ name: 'terminal', arguments: { command: 'cat hello.txt' } }] },
      { tool_calls: [{ name: 'finish', arguments: { message: 'made hello.txt' } }] },
    ]);
    const sent = await t.request('POST', `/api/v1/app-conversations/${id}/send-message`, { key: user.key, body: { content: [{ text: 'Make hello.txt' }], run: true } });
    expect(sent).toMatchObject({ status: 200, body: { success: true } });
    const log = await settled(id);
    expect(fs.readFileSync(path.join(repoDir, 'hello.txt'), 'utf8')).toBe('hello\n');

    // Stored once each, seq 1..n, every one served valid against SPEC.md's closed schemas.
    const stored = await t.database.db.collection('events').find({ conversation_id: id }, { projection: { id: 1, seq: 1 } }).toArray();
    expect(stored.map((e) => e.seq).sort((a, b) => a - b)).toEqual(stored.map((_, i) => i + 1));
    expect(new Set(log.map((e) => e.id)).size).toBe(log.length);
    expect(stored.length).toBe(log.length);
    for (const e of log) expect([e.kind, EventSchema.safeParse(e).success]).toEqual([e.kind, true]);
    const kinds = log.map((e) => e.kind);
    expect(kinds).toEqual(expect.arrayContaining(['SystemPromptEvent', 'MessageEvent', 'ActionEvent', 'ObservationEvent', 'ConversationStateUpdateEvent']));
    const actions = log.filter((e) => e.kind === 'ActionEvent').map((e) => e.tool_name);
    expect(actions).toEqual(['file_editor', 'terminal', 'finish']);
    const observation = log.find((e) => e.kind === 'ObservationEvent' && e.tool_name === 'terminal');
    expect(JSON.stringify(observation.observation)).toContain('hello');
    const system = log.find((e) => e.kind === 'SystemPromptEvent');
    expect(system.tools.map((tool: any) => tool.name ?? tool.title)).toEqual(expect.arrayContaining(['terminal', 'file_editor']));
    // Its usage figures (`stats`, one entry per LLM) are the conversation's metrics.
    const view = (await t.request('GET', `/api/v1/app-conversations?ids=${id}`, { key: user.key })).body[0];
    expect(view).toMatchObject({ execution_status: 'finished', metrics: { model_name: 'openai/scripted-model', accumulated_token_usage: { prompt_tokens: expect.any(Number) } } });
    expect(view.metrics.accumulated_token_usage.prompt_tokens).toBeGreaterThan(0);
    // The LLM was reached by its OpenAI-compatible name, with the organization's key.
    expect(llm.requests.at(-1)!.authorization).toBe('Bearer sk-org');

    // The workspace through the control plane: a file, the git changes and a diff.
    expect((await t.request('GET', `/api/v1/app-conversations/${id}/file?file_path=hello.txt`, { key: user.key })).body).toBe('hello\n');
    // Nothing outside its working directory, as with the built-in runtime (the agent server itself would read it).
    for (const outside of ['/etc/passwd', '../../../../etc/passwd', `${handle.workspace}/../runtime.log`]) {
      const r = await t.request('GET', `/api/v1/app-conversations/${id}/file?file_path=${encodeURIComponent(outside)}`, { key: user.key });
      expect([outside, r.status]).toEqual([outside, 400]);
    }
    const changes = await t.request('GET', `/api/v1/app-conversations/${id}/git/changes?path=.`, { key: user.key });
    expect(changes).toMatchObject({ status: 200, body: [{ status: 'ADDED', path: 'hello.txt' }] });
    const diff = await t.request('GET', `/api/v1/app-conversations/${id}/git/diff?path=README.md`, { key: user.key });
    // The agent server gives the texts without their last newline (the built-in runtime keeps it).
    expect(diff).toMatchObject({ status: 200, body: { original: '# demo', modified: '# demo' } });

    // A slow step: interrupt, then run; the answers carry the execution status read back from the server.
    llm.load([{ content: 'slow', delay_ms: 30_000 }, { tool_calls: [{ name: 'finish', arguments: { message: 'done' } }] }]);
    expect((await t.request('POST', `/api/v1/app-conversations/${id}/send-message`, { key: user.key, body: { content: [{ text: 'Take your time' }], run: true } })).status).toBe(200);
    await settled(id, 'running');
    const interrupted = await t.request('POST', `/api/v1/app-conversations/${id}/interrupt`, { key: user.key });
    expect(interrupted).toMatchObject({ status: 200, body: { id } });
    const run = await t.request('POST', `/api/v1/app-conversations/${id}/run`, { key: user.key });
    expect(run.status).toBe(200);
    await settled(id);

    // Pause of a running agent: the server's answer ({success}) and the status read back from it.
    llm.load([{ content: 'slow again', delay_ms: 20_000 }, { tool_calls: [{ name: 'finish', arguments: { message: 'done' } }] }]);
    expect((await t.request('POST', `/api/v1/app-conversations/${id}/send-message`, { key: user.key, body: { content: [{ text: 'Once more' }], run: true } })).status).toBe(200);
    await settled(id, 'running');
    const paused = await t.request('POST', `/api/v1/app-conversations/${id}/pause`, { key: user.key });
    expect(paused.status).toBe(200);
    await settled(id, 'paused');
    // The step under way when it paused still ends first; until then run is the server's 409, passed on.
    await eventually(
      async () => {
        const r = await t.request('POST', `/api/v1/app-conversations/${id}/run`, { key: user.key });
        expect([r.status, r.status === 409 ? 'busy' : r.body]).toEqual([200, expect.anything()]);
      },
      { timeoutMs: 60_000, intervalMs: 1000 },
    );
    await settled(id);

    // The sandbox paused (every process of its server stopped) and resumed: a message goes through again.
    expect((await t.request('POST', `/api/v1/sandboxes/${ready.sandbox_id}/pause`, { key: user.key })).body.status).toBe('PAUSED');
    expect(readStat(handle.pid)!.state).toBe('T');
    llm.load([{ content: 'Back again.' }]);
    const resumed = await t.request('POST', `/api/v1/app-conversations/${id}/send-message`, { key: user.key, body: { content: [{ text: 'Still there?' }], run: true } });
    expect(resumed).toMatchObject({ status: 200, body: { success: true, message: expect.stringContaining('resumed') } });
    await eventually(
      async () => expect(JSON.stringify((await loggedEvents(t, user.key, id)).filter((e) => e.kind === 'MessageEvent' && e.source === 'agent').at(-1))).toContain('Back again.'),
      { timeoutMs: 60_000, intervalMs: 200 },
    );

    // Delete: the sandbox goes, and its agent server with it.
    expect((await t.request('DELETE', `/api/v1/app-conversations/${id}`, { key: user.key })).status).toBe(200);
    await eventually(() => expect(readStat(handle.pid) === null || readStat(handle.pid)!.state === 'Z').toBe(true), { timeoutMs: 30_000, intervalMs: 200 });
  }, 400_000);

  it('delivers a queued message once by its id: a retry after a lost acknowledgement is not sent again (the server has no id on a message)', async () => {
    const accepted = await t.request('POST', '/api/v1/app-conversations', { key: user.key, body: {} });
    const ready = await waitForStartTask(t, user.key, accepted.body.id, (s) => s.status === 'READY' || s.status === 'ERROR', 180_000);
    expect(ready.status).toBe('READY');
    const id = ready.app_conversation_id as string;
    // The worker's own composition of the conversation service, as the pending-message activity uses it.
    const connection = await Connection.connect({ address: t.config.temporal.address! });
    try {
      const temporal = new Client({ connection, namespace: t.config.temporal.namespace });
      const sandboxService = createSandboxService(t.stores, { box: t.box, temporal, taskQueue: t.config.temporal.taskQueue, sandboxes: t.config.sandboxes });
      const { conversationService } = createConversationServices(t.stores, { box: t.box, temporal, sandboxService, sandboxWaitMs: 60_000 });
      const c = (await t.stores.appConversations.get(id))!;
      const messageId = randomUUID();
      await t.stores.pendingMessages.add({ id: messageId, conversation_id: id, created_by_user_id: user.userId, role: 'user', content: [{ type: 'text', text: 'Once only' }] });
      const message = { id: messageId, role: 'user' as const, content: [{ type: 'text' as const, text: 'Once only', cache_prompt: false }], run: false };
      const userMessages = async () => (await loggedEvents(t, user.key, id)).filter((e) => e.kind === 'MessageEvent' && e.source === 'user').length;
      const before = await userMessages();
      expect(await conversationService.deliver(user.userId, c, message)).toMatchObject({ success: true, message: null });
      // The worker dies before it marks the message DELIVERED: the activity runs again.
      const again = await conversationService.deliver(user.userId, c, message);
      expect(again).toMatchObject({ success: true, message: expect.stringContaining('delivered before') });
      await eventually(async () => expect(await userMessages()).toBe(before + 1), { timeoutMs: 30_000, intervalMs: 200 });
      // Another message (another id) goes through.
      const next = { ...message, id: randomUUID(), content: [{ type: 'text' as const, text: 'And this', cache_prompt: false }] };
      await t.stores.pendingMessages.add({ id: next.id, conversation_id: id, created_by_user_id: user.userId, role: 'user', content: next.content });
      expect(await conversationService.deliver(user.userId, c, next)).toMatchObject({ success: true, message: null });
      await eventually(async () => expect(await userMessages()).toBe(before + 2), { timeoutMs: 30_000, intervalMs: 200 });
    } finally {
      await connection.close();
    }
  }, 300_000);

  it('loses no event: what the agent server held when it was killed (-9) with the api away is read back from its log after a resume, each once', async () => {
    const accepted = await t.request('POST', '/api/v1/app-conversations', { key: user.key, body: {} });
    const ready = await waitForStartTask(t, user.key, accepted.body.id, (s) => s.status === 'READY' || s.status === 'ERROR', 180_000);
    expect(ready.status).toBe('READY');
    const id = ready.app_conversation_id as string;
    const [sandbox] = (await t.request('GET', `/api/v1/sandboxes?id=${ready.sandbox_id}`, { key: user.key })).body;
    const url = sandbox.exposed_urls[0].url as string;
    const direct = (method: string, p: string, body?: unknown) =>
      fetch(url + p, { method, headers: { 'X-Session-API-Key': sandbox.session_api_key, 'Content-Type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
    // Everything the start made has arrived (the server's count, reached by the log) before the api goes.
    const before = await eventually(
      async () => {
        const theirCount = (await (await direct('GET', `/api/conversations/${id}/events/count`)).json()) as number;
        const mine = (await loggedEvents(t, user.key, id)).length;
        expect(mine).toBe(theirCount);
        return mine;
      },
      { timeoutMs: 30_000, intervalMs: 200 },
    );

    llm.load([{ tool_calls: [{ name: 'terminal', arguments: { command: 'echo while-away' } }] }, { tool_calls: [{ name: 'finish', arguments: { message: 'done away' } }] }]);
    await t.api.close(); // the control plane goes away: every batch of the run fails and waits in the server's memory
    try {
      const sent = await direct('POST', `/api/conversations/${id}/events`, { role: 'user', content: [{ type: 'text', text: 'Work while nobody listens' }], run: true });
      expect(sent.status).toBe(200);
      await eventually(async () => expect(((await (await direct('GET', `/api/conversations/${id}`)).json()) as any).execution_status).toBe('finished'), { timeoutMs: 60_000, intervalMs: 200 });
      const handle = (await t.database.db.collection('sandboxes').findOne({ _id: ready.sandbox_id }))!.runtime as { pid: number };
      process.kill(handle.pid, 'SIGKILL'); // its queue dies with it; its log on disk stays
      // Its health check finds it gone (ERROR) before the api comes back: a read-back that was under way
      // while it lived has tried to post by then (to the api that is away), and none starts after.
      await eventually(async () => expect((await t.database.db.collection('sandboxes').findOne({ _id: ready.sandbox_id }))!.status).toBe('ERROR'), {
        timeoutMs: 30_000,
        intervalMs: 200,
      });
    } finally {
      t.api = await startApiServer(t.config, { mongoUri: t.config.mongo.uri!, temporalAddress: t.config.temporal.address! }, pino({ level: 'silent' }));
    }
    expect((await loggedEvents(t, user.key, id)).length).toBe(before); // nothing of the run arrived

    // A resume starts it again on the same state directory.
    expect((await t.request('POST', `/api/v1/sandboxes/${ready.sandbox_id}/resume`, { key: user.key })).status).toBe(200);
    await waitForStatus(t, user.key, ready.sandbox_id, 'RUNNING', 120_000);
    const [resumed] = (await t.request('GET', `/api/v1/sandboxes?id=${ready.sandbox_id}`, { key: user.key })).body;
    const theirs = async () => {
      const ids: string[] = [];
      let page: string | null = null;
      do {
        const r = await fetch(`${resumed.exposed_urls[0].url}/api/conversations/${id}/events/search?limit=100${page ? `&page_id=${page}` : ''}`, { headers: { 'X-Session-API-Key': resumed.session_api_key } });
        const body = (await r.json()) as { items: { id: string }[]; next_page_id: string | null };
        ids.push(...body.items.map((e) => e.id));
        page = body.next_page_id;
      } while (page);
      return ids;
    };
    // The health checks read its log back: every event it has is stored, once.
    const log = await eventually(
      async () => {
        const mine = await loggedEvents(t, user.key, id);
        const missing = (await theirs()).filter((e) => !mine.some((m) => m.id === e));
        expect(missing).toEqual([]);
        return mine;
      },
      { timeoutMs: 60_000, intervalMs: 500 },
    );
    expect(new Set(log.map((e) => e.id)).size).toBe(log.length);
    expect(JSON.stringify(log.filter((e) => e.kind === 'ObservationEvent'))).toContain('while-away');
    expect(log.filter((e) => e.kind === 'ActionEvent').map((e) => e.tool_name)).toEqual(['terminal', 'finish']);
  }, 400_000);
});
