/**
 * The conversation contract: what a client of the control plane sees of one conversation, whichever
 * runtime (the built-in one or the real OpenHands agent server) runs it in whichever provider's sandbox
 * (a process or a container). One suite, run by `test/conversation-contract.test.ts` (process sandboxes)
 * and `test/docker/conversation-contract.test.ts` (containers) for each runtime, through the real api,
 * worker, Temporal and database, with the scripted LLM and a git host on addresses the sandbox reaches:
 *
 *   start to READY through every status; the agent edits a file of the cloned repository with its own
 *   tools; events stored once, in order, seq 1..n, each valid against SPEC.md; a follow-up message
 *   reaches the next step; interrupt, run and pause; the file, git and download views; `kill -9` of the
 *   runtime mid-run with the api away, then resume: every event it had emitted is in the log once;
 *   delete leaves nothing running.
 *
 * What a provider does differently (where its runtime is, how it is frozen or killed) is the target's.
 */
import path from 'node:path';
import pino from 'pino';
import { startApiServer } from '../../src/api/server';
import { ScriptedLlm } from '../../src/llm/scripted-llm';
import { START_TASK_STATUSES } from '../../src/schemas/app-conversations';
import { EventSchema } from '../../src/schemas/events';
import type { RuntimeKind } from '../../src/schemas/sandboxes';
import { loggedEvents, logWhenExecution, states } from './agent';
import type { TestApi } from './api';
import { eventually } from './eventually';
import { bareRepo } from './git-repo';
import { waitForStatus } from './sandboxes';
import { startServiceUnderTest, type ServiceEnv, type ServiceUnderTest } from './service';
import { unzip } from './zip';

/** The runtime's handle as the sandbox record keeps it: where its workspace is, whichever provider. */
export interface ContractHandle {
  workspace: string;
  [key: string]: unknown;
}

export interface ContractTarget {
  runtime: RuntimeKind;
  /** The test file's variables over the test defaults: its spec (`runtime` above) the default. */
  env: ServiceEnv;
  /** The address the scripted LLM and the git host listen on: one the sandbox reaches. */
  host: string;
  /** A URL or path a start clones `bare` (a bare repository under `dir`) from. */
  repository(dir: string, bare: string): Promise<{ url: string; close(): Promise<void> }>;
  /** Whether every process of the sandbox's runtime is stopped; null when none is found (neither answer holds then). */
  frozen(handle: ContractHandle): Promise<boolean | null>;
  /** The runtime dies as in a crash (SIGKILL): nothing of it runs any more. */
  kill(handle: ContractHandle): Promise<void>;
  /** Whether anything of the sandbox still runs. */
  running(sandboxId: string, dir: string): Promise<boolean>;
  /** What a test file leaves behind besides `dir` (containers, volumes). */
  cleanup(sandboxIds: string[], dir: string): Promise<void>;
}

const STATUSES = [...START_TASK_STATUSES.filter((s) => s !== 'READY' && s !== 'ERROR'), 'READY'];

export function conversationContract(target: ContractTarget): void {
  let service: ServiceUnderTest;
  let t: TestApi;
  let dir: string;
  let llm: ScriptedLlm;
  let user: { userId: string; key: string };
  let git: { url: string; close(): Promise<void> };
  const sandboxes: string[] = [];
  // The conversation the suite follows from its start to its delete.
  let id: string;
  let sandboxId: string;
  let repoDir: string;

  beforeAll(async () => {
    service = await startServiceUnderTest(`contract-${target.runtime}-`, target.env, {
      beforeRemove: (dataDir) => target.cleanup(sandboxes, dataDir),
    });
    ({ t, dataDir: dir } = service);
    llm = await new ScriptedLlm([]).start(0, target.host);
    user = await t.newUser();
    await t.setOrgLlm(user.key, { model: 'scripted-model', base_url: llm.url, api_key: 'sk-org' });
    git = await target.repository(dir, bareRepo(dir, 'demo', { 'README.md': '# demo\n' }));
  }, 120_000);

  afterAll(async () => {
    await service?.close();
    await llm?.close();
    await git?.close();
  }, 120_000);

  const settled = (status = 'finished') => logWhenExecution(t, user.key, id, status, 90_000);
  /** The log once a run that began after `before` (a log read earlier) has ended. */
  const ranAfter = (before: any[]) =>
    eventually(
      async () => {
        const log = await loggedEvents(t, user.key, id);
        expect(log.slice(before.length).some((e) => e.kind === 'ActionEvent' && e.tool_name === 'finish')).toBe(true);
        expect(states(log).at(-1)).toBe('finished');
        return log;
      },
      { timeoutMs: 90_000, intervalMs: 100 },
    );
  const record = async () => (await t.database.db.collection('sandboxes').findOne({ _id: sandboxId as never }))!;
  const handle = async () => (await record()).runtime as ContractHandle;
  const view = async () => (await t.request('GET', `/api/v1/app-conversations?ids=${id}`, { key: user.key })).body[0];
  const send = (text: string) =>
    t.request('POST', `/api/v1/app-conversations/${id}/send-message`, {
      key: user.key,
      body: { content: [{ text }], run: true },
    });
  /** What the runtime itself counts of the conversation's events (its own API, with the sandbox's key). */
  const runtimeCount = async (): Promise<number> => {
    const [s] = (await t.request('GET', `/api/v1/sandboxes?id=${sandboxId}`, { key: user.key })).body;
    const call = (p: string) =>
      fetch(s.exposed_urls[0].url + p, {
        headers: { 'X-Session-API-Key': s.session_api_key },
        signal: AbortSignal.timeout(5000),
      }).then((r) => r.json() as Promise<any>);
    return target.runtime === 'openhands'
      ? call(`/api/conversations/${id}/events/count`)
      : (await call(`/api/conversations/${id}`)).events;
  };
  /** Every event stored once, seq 1..n, each as SPEC.md's closed schemas describe it. */
  const expectWholeLog = async (log: any[]) => {
    const stored = await t.database.db
      .collection('events')
      .find({ conversation_id: id }, { projection: { seq: 1 } })
      .toArray();
    expect(stored.map((e) => e.seq).sort((a, b) => a - b)).toEqual(stored.map((_, i) => i + 1));
    expect(stored.length).toBe(log.length);
    expect(new Set(log.map((e) => e.id)).size).toBe(log.length);
    for (const e of log) expect([e.kind, EventSchema.safeParse(e).success]).toEqual([e.kind, true]);
  };

  it('starts to READY through every status, the repository cloned, nothing of the runtime inside it', async () => {
    const res = await fetch(`${t.url}/api/v1/app-conversations/stream-start`, {
      method: 'POST',
      headers: { 'X-Access-Token': user.key, 'Content-Type': 'application/json' },
      body: JSON.stringify({
        selected_repository: git.url,
        selected_branch: 'main',
        title: `On the ${target.runtime} runtime`,
      }),
      signal: AbortSignal.timeout(240_000),
    });
    expect(res.status).toBe(200);
    const tasks = (await res.json()) as any[];
    expect({ statuses: tasks.map((s) => s.status), detail: tasks.at(-1).detail }).toEqual({
      statuses: STATUSES,
      detail: null,
    });
    id = tasks.at(-1).app_conversation_id;
    sandboxId = tasks.at(-1).sandbox_id;
    sandboxes.push(sandboxId);
    expect((await record()).spec.runtime).toBe(target.runtime);
    repoDir = path.posix.join((await handle()).workspace, 'demo');
    expect(
      (await t.request('GET', `/api/v1/app-conversations/${id}/file?file_path=README.md`, { key: user.key })).body,
    ).toBe('# demo\n');
    // The conversation works in the repository; the runtime's own state lives outside it: git sees no change.
    expect(
      await t.request('GET', `/api/v1/app-conversations/${id}/git/changes?path=.`, { key: user.key }),
    ).toMatchObject({ status: 200, body: [] });
  }, 300_000);

  it("edits the repository with the agent's own tools; every event stored once, in order, valid against SPEC.md", async () => {
    llm.load([
      {
        content: 'Creating the file.',
        tool_calls: [
          {
            name: 'file_editor',
            arguments: { command: 'create', path: path.posix.join(repoDir, 'hello.txt'), file_text: 'hello\n' },
          },
        ],
      },
      { tool_calls: [{ name: 'terminal', arguments: { command: `cat ${path.posix.join(repoDir, 'hello.txt')}` } }] },
      { tool_calls: [{ name: 'finish', arguments: { message: 'made hello.txt' } }] },
    ]);
    expect(await send('Make hello.txt')).toMatchObject({ status: 200, body: { success: true } });
    const log = await ranAfter([]);
    await expectWholeLog(log);
    expect(log.map((e) => e.kind)).toEqual(
      expect.arrayContaining([
        'SystemPromptEvent',
        'MessageEvent',
        'ActionEvent',
        'ObservationEvent',
        'ConversationStateUpdateEvent',
      ]),
    );
    expect(log.filter((e) => e.kind === 'ActionEvent').map((e) => e.tool_name)).toEqual([
      'file_editor',
      'terminal',
      'finish',
    ]);
    expect(
      JSON.stringify(log.find((e) => e.kind === 'ObservationEvent' && e.tool_name === 'terminal').observation),
    ).toContain('hello');
    // The tools as the published ToolDefinition, with their kind.
    const system = log.find((e) => e.kind === 'SystemPromptEvent');
    expect(system.tools.map((tool: any) => tool.title)).toEqual(expect.arrayContaining(['terminal', 'file_editor']));
    for (const tool of system.tools) expect(tool).toMatchObject({ kind: expect.any(String) });
    // The usage figures are the conversation's metrics; the LLM was reached with the organization's key.
    const v = await view();
    expect(v).toMatchObject({
      execution_status: 'finished',
      metrics: { accumulated_token_usage: { prompt_tokens: expect.any(Number) } },
    });
    expect(v.metrics.accumulated_token_usage.prompt_tokens).toBeGreaterThan(0);
    expect(llm.requests.at(-1)!.authorization).toBe('Bearer sk-org');
  }, 180_000);

  it('takes a follow-up message up at the next step', async () => {
    llm.load([
      {
        tool_calls: [
          { name: 'terminal', arguments: { command: `echo again >> ${path.posix.join(repoDir, 'hello.txt')}` } },
        ],
      },
      { tool_calls: [{ name: 'finish', arguments: { message: 'appended' } }] },
    ]);
    const before = llm.requests.length;
    const earlier = await loggedEvents(t, user.key, id);
    expect((await send('Now append "again" to hello.txt')).status).toBe(200);
    const log = await ranAfter(earlier);
    await expectWholeLog(log);
    expect(JSON.stringify(llm.requests[before]!.body.messages)).toContain('Now append');
    expect(log.filter((e) => e.kind === 'ActionEvent').map((e) => e.tool_name)).toEqual([
      'file_editor',
      'terminal',
      'finish',
      'terminal',
      'finish',
    ]);
    expect(
      (await t.request('GET', `/api/v1/app-conversations/${id}/file?file_path=hello.txt`, { key: user.key })).body,
    ).toBe('hello\nagain\n');
  }, 180_000);

  it('interrupts, runs and pauses the agent, each answer carrying the status read back from the runtime', async () => {
    llm.load([
      { content: 'slow', delay_ms: 30_000 },
      { tool_calls: [{ name: 'finish', arguments: { message: 'done' } }] },
    ]);
    expect((await send('Take your time')).status).toBe(200);
    await settled('running');
    expect(await t.request('POST', `/api/v1/app-conversations/${id}/interrupt`, { key: user.key })).toMatchObject({
      status: 200,
      body: { id },
    });
    expect((await t.request('POST', `/api/v1/app-conversations/${id}/run`, { key: user.key })).status).toBe(200);
    await settled();

    llm.load([
      { content: 'slow again', delay_ms: 20_000 },
      { tool_calls: [{ name: 'finish', arguments: { message: 'done' } }] },
    ]);
    expect((await send('Once more')).status).toBe(200);
    await settled('running');
    expect((await t.request('POST', `/api/v1/app-conversations/${id}/pause`, { key: user.key })).status).toBe(200);
    await settled('paused');
    // The step under way when it paused may still end first; until then run may be the runtime's 409, passed on.
    await eventually(
      async () => {
        const r = await t.request('POST', `/api/v1/app-conversations/${id}/run`, { key: user.key });
        expect([r.status, r.status === 409 ? 'busy' : r.body]).toEqual([200, expect.anything()]);
      },
      { timeoutMs: 60_000, intervalMs: 1000 },
    );
    await settled();

    // The sandbox paused (every process of it stopped) and resumed by the next message.
    expect((await t.request('POST', `/api/v1/sandboxes/${sandboxId}/pause`, { key: user.key })).body.status).toBe(
      'PAUSED',
    );
    expect(await target.frozen(await handle())).toBe(true);
    llm.load([{ content: 'Back again.' }]);
    expect(await send('Still there?')).toMatchObject({
      status: 200,
      body: { success: true, message: expect.stringContaining('resumed') },
    });
    expect(await target.frozen(await handle())).toBe(false);
    await eventually(
      async () =>
        expect(
          JSON.stringify(
            (await loggedEvents(t, user.key, id))
              .filter((e) => e.kind === 'MessageEvent' && e.source === 'agent')
              .at(-1),
          ),
        ).toContain('Back again.'),
      {
        timeoutMs: 60_000,
        intervalMs: 200,
      },
    );
  }, 300_000);

  it('serves the workspace: a file (nothing outside the working directory), git changes and diff, the download of the whole log', async () => {
    expect(
      (await t.request('GET', `/api/v1/app-conversations/${id}/file?file_path=hello.txt`, { key: user.key })).body,
    ).toBe('hello\nagain\n');
    for (const outside of ['/etc/passwd', '../../../../etc/passwd', `${(await handle()).workspace}/../runtime.log`]) {
      const r = await t.request(
        'GET',
        `/api/v1/app-conversations/${id}/file?file_path=${encodeURIComponent(outside)}`,
        { key: user.key },
      );
      expect([outside, r.status]).toEqual([outside, 400]);
    }
    expect(
      await t.request('GET', `/api/v1/app-conversations/${id}/git/changes?path=.`, { key: user.key }),
    ).toMatchObject({ status: 200, body: [{ status: 'ADDED', path: 'hello.txt' }] });
    const diff = await t.request('GET', `/api/v1/app-conversations/${id}/git/diff?path=README.md`, { key: user.key });
    expect(diff.status).toBe(200);
    expect(diff.body.original).toContain('# demo');
    expect(diff.body.modified).toBe(diff.body.original);

    const log = await loggedEvents(t, user.key, id);
    const res = await fetch(`${t.url}/api/v1/app-conversations/${id}/download`, {
      headers: { 'X-Access-Token': user.key },
    });
    expect(res.status).toBe(200);
    const entries = await unzip(Buffer.from(await res.arrayBuffer()));
    expect(entries.map(([name]) => name)).toEqual([
      'meta.json',
      ...log.map((_, i) => `events/${String(i + 1).padStart(8, '0')}.json`),
    ]);
    expect(entries.slice(1).map(([, text]) => JSON.parse(text).id)).toEqual(log.map((e) => e.id));
  }, 120_000);

  it('loses no event: the runtime killed (-9) mid-run with the api away; after a resume every event it had emitted is in the log, once', async () => {
    // Everything so far has arrived (the runtime's own count, reached by the log) before the api goes.
    const before = await eventually(
      async () => {
        const mine = (await loggedEvents(t, user.key, id)).length;
        expect(mine).toBe(await runtimeCount());
        return mine;
      },
      { timeoutMs: 60_000, intervalMs: 250 },
    );
    const [s] = (await t.request('GET', `/api/v1/sandboxes?id=${sandboxId}`, { key: user.key })).body;
    const direct = (method: string, p: string, body?: unknown) =>
      fetch(s.exposed_urls[0].url + p, {
        method,
        headers: { 'X-Session-API-Key': s.session_api_key, 'Content-Type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
    llm.load([
      { tool_calls: [{ name: 'terminal', arguments: { command: 'echo while-away' } }] },
      { content: 'thinking for a long time', delay_ms: 120_000 },
    ]);
    const h = await handle();
    const calls = llm.requests.length;
    await t.api.close(); // every batch of the run fails and waits (in the runtime's memory, or its outbox)
    try {
      expect(
        (
          await direct('POST', `/api/conversations/${id}/events`, {
            role: 'user',
            content: [{ type: 'text', text: 'Work while nobody listens' }],
            run: true,
          })
        ).status,
      ).toBe(200);
      // Mid-run: the command ran and its observation was emitted, the next LLM call is under way.
      await eventually(async () => expect(llm.requests.length).toBe(calls + 2), { timeoutMs: 60_000, intervalMs: 200 });
      await target.kill(h);
      // The health check finds it gone before the api comes back.
      await eventually(async () => expect((await record()).status).toBe('ERROR'), {
        timeoutMs: 60_000,
        intervalMs: 200,
      });
    } finally {
      t.api = await startApiServer(
        t.config,
        { mongoUri: t.config.mongo.uri!, temporalAddress: t.config.temporal.address! },
        pino({ level: 'silent' }),
      );
    }
    expect((await loggedEvents(t, user.key, id)).length).toBe(before); // nothing of the run arrived: it all waits in the dead runtime's state
    expect((await t.request('POST', `/api/v1/sandboxes/${sandboxId}/resume`, { key: user.key })).status).toBe(200);
    await waitForStatus(t, user.key, sandboxId, 'RUNNING', 180_000);
    // Whatever the runtime had emitted (and kept) reaches the log: its count and the log meet.
    const log = await eventually(
      async () => {
        const mine = await loggedEvents(t, user.key, id);
        expect(mine.length).toBe(await runtimeCount());
        return mine;
      },
      { timeoutMs: 90_000, intervalMs: 500 },
    );
    await expectWholeLog(log);
    if (target.runtime === 'openhands') {
      // Event by event, not only the count: every id its log holds is stored.
      const [r] = (await t.request('GET', `/api/v1/sandboxes?id=${sandboxId}`, { key: user.key })).body;
      const theirs: string[] = [];
      for (let page: string | null = null, n = 0; n === 0 || page; n++) {
        const res = await fetch(
          `${r.exposed_urls[0].url}/api/conversations/${id}/events/search?limit=100${page ? `&page_id=${page}` : ''}`,
          { headers: { 'X-Session-API-Key': r.session_api_key } },
        );
        const body = (await res.json()) as { items: { id: string }[]; next_page_id: string | null };
        theirs.push(...body.items.map((e) => e.id));
        page = body.next_page_id;
      }
      expect(theirs.filter((e) => !log.some((m) => m.id === e))).toEqual([]);
    }
    const run = log.slice(before);
    expect(JSON.stringify(run.find((e) => e.kind === 'MessageEvent'))).toContain('Work while nobody listens');
    expect(run.filter((e) => e.kind === 'ActionEvent').map((e) => e.tool_name)).toEqual(['terminal']);
    expect(JSON.stringify(run.find((e) => e.kind === 'ObservationEvent'))).toContain('while-away');
  }, 420_000);

  it('delete ends everything the sandbox ran', async () => {
    expect((await t.request('DELETE', `/api/v1/app-conversations/${id}`, { key: user.key })).status).toBe(200);
    await eventually(async () => expect(await target.running(sandboxId, dir)).toBe(false), {
      timeoutMs: 60_000,
      intervalMs: 250,
    });
    expect((await t.request('GET', `/api/v1/app-conversations?ids=${id}`, { key: user.key })).body).toEqual([null]);
  }, 120_000);
}
