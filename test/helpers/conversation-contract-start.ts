/**
 * The conversation contract's service and the one conversation it follows from its start to its delete:
 * the service under test, the scripted LLM, a user and a git host on addresses the sandbox reaches; the
 * contract's first test, the start to READY through every status that makes the conversation the later
 * tests build on; and the readers they use (its log, record, handle and view, a message to it, the
 * runtime's own count of its events, the check of its whole log against SPEC.md).
 */
import type { Document } from 'mongodb';
import path from 'node:path';
import { ScriptedLlm } from '../../src/llm/scripted-llm';
import { START_TASK_STATUSES } from '../../src/schemas/app-conversations';
import { EventSchema } from '../../src/schemas/events';
import { loggedEvents, logWhenExecution, states } from './agent';
import type { TestApi } from './api';
import type { ContractHandle, ContractTarget } from './conversation-contract-target';
import { eventually } from './eventually';
import { bareRepo } from './git-repo';
import { startServiceUnderTest, type ServiceUnderTest } from './service';

const STATUSES = [...START_TASK_STATUSES.filter((s) => s !== 'READY' && s !== 'ERROR'), 'READY'];

/** The suite's service and conversation as the later tests read them (the conversation once the start test ran). */
export interface ContractConversation {
  readonly t: TestApi;
  /** The service's data directory. */
  readonly dir: string;
  readonly llm: ScriptedLlm;
  readonly user: { userId: string; key: string };
  readonly id: string;
  readonly sandboxId: string;
  /** The cloned repository's directory, as the runtime sees it. */
  readonly repoDir: string;
  /** The log once the execution is `status` (finished by default). */
  settled: (status?: string) => Promise<any[]>;
  /** The log once a run that began after `before` (a log read earlier) has ended. */
  ranAfter: (before: any[]) => Promise<any[]>;
  /** The sandbox's record in the database. */
  record: () => Promise<Document>;
  handle: () => Promise<ContractHandle>;
  /** The conversation as the app-conversations api shows it. */
  view: () => Promise<any>;
  /** A message that runs the agent, through the api. */
  send: (text: string) => ReturnType<TestApi['request']>;
  /** What the runtime itself counts of the conversation's events. */
  runtimeCount: () => Promise<number>;
  /** Every event stored once, seq 1..n, each as SPEC.md's closed schemas describe it. */
  expectWholeLog: (log: any[]) => Promise<void>;
}

/** Sets up the suite's service, runs the start test, and answers what the later tests read. */
export function contractStart(target: ContractTarget): ContractConversation {
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

  return {
    get t() {
      return t;
    },
    get dir() {
      return dir;
    },
    get llm() {
      return llm;
    },
    get user() {
      return user;
    },
    get id() {
      return id;
    },
    get sandboxId() {
      return sandboxId;
    },
    get repoDir() {
      return repoDir;
    },
    settled,
    ranAfter,
    record,
    handle,
    view,
    send,
    runtimeCount,
    expectWholeLog,
  };
}
