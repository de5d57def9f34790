/**
 * The service the callback-host suites share (test/callback-hosts*.test.ts): loopback stand-ins of the
 * five hosts the host processors post to (git hosts B and C, issue trackers A and B, the chat service),
 * the api, worker processes a test may kill (they post, so they get the hosts' addresses), the scripted
 * LLM as the organization's model of one user whose credentials for every host are stored; the round
 * records of a conversation, and a start whose agent finishes at once and then gives SUMMARY.
 *
 * A suite calls useCallbackHosts() in its describe and imports the bindings below as they are: jest gives
 * each test file its own module registry, so its own stand-ins, workers and bindings, and its SWC transform
 * compiles imports to module-object reads, so tests see the `t`, `llm` and `user` the beforeAll assigned.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ScriptedLlm } from '../../src/llm/scripted-llm';
import { freePort } from '../../src/process/net';
import { startTestApi, type TestApi } from './api';
import { ChatStandIn, GitHostBStandIn, GitHostCStandIn, IssueTrackerStandIn } from './callback-host-stand-ins';
import { testConfig } from './env';
import { eventually } from './eventually';
import { killRuntimesUnder } from './sandboxes';
import { workerProcesses } from './worker';

export const SUMMARY = 'I fixed the flaky test by waiting for the server to listen.';
export const TOKENS = {
  gitB: 'glpat-b-secret',
  gitC: 'bbat-c-secret',
  trackerA: 'atat-a-secret',
  trackerB: 'pat-b-secret',
  chat: 'xoxb-chat-secret',
};

/** No credential of any host in the rounds this suite's database recorded (the check that ends each file of the suite). */
export async function expectNoCredentialRecorded(t: TestApi): Promise<void> {
  const all = JSON.stringify(await t.database.db.collection('callback_results').find({}).toArray());
  for (const token of Object.values(TOKENS)) expect(all).not.toContain(token);
}

export let t: TestApi;
export let llm: ScriptedLlm;
export let user: { userId: string; key: string };
let dataDir: string;
export const gitB = new GitHostBStandIn();
export const gitC = new GitHostCStandIn();
export const trackerA = new IssueTrackerStandIn();
export const trackerB = new IssueTrackerStandIn();
export const chat = new ChatStandIn();
const hosts = [gitB, gitC, trackerA, trackerB, chat];
// The hosts' addresses go to the worker process, which posts (the api only checks ISSUE_TRACKER_B_ORIGINS).
const hostsEnv = () => ({
  GIT_HOST_B_API_URL: `${gitB.url}/api/v4`,
  GIT_HOST_C_API_URL: `${gitC.url}/2.0`,
  ISSUE_TRACKER_A_API_URL: trackerA.url,
  ISSUE_TRACKER_B_ORIGINS: trackerB.url,
  CHAT_API_URL: `${chat.url}/api`,
});
export const workers = workerProcesses(
  () => t.config,
  () => dataDir,
  hostsEnv,
);

/**
 * Starts the stand-ins, the api and a worker process in a beforeAll and ends them in an afterAll (call it
 * inside the describe): `t`, `llm` and `user` are set once the beforeAll has run.
 */
export function useCallbackHosts(): void {
  beforeAll(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'callback-hosts-'));
    await Promise.all(hosts.map((h) => h.start()));
    llm = await new ScriptedLlm([]).start();
    t = await startTestApi(
      testConfig({
        DATA_DIR: dataDir,
        API_PORT: String(await freePort()),
        SANDBOX_IDLE_TIMEOUT_MS: '0',
        ...hostsEnv(),
      }),
    );
    user = await t.newUser();
    await t.setOrgLlm(user.key, { model: 'scripted-model', base_url: llm.url, api_key: 'sk-org' });
    const stored = await t.request('POST', '/api/v1/secrets/git-providers', {
      key: user.key,
      body: { provider_tokens: { git_host_b: { token: TOKENS.gitB }, git_host_c: { token: TOKENS.gitC } } },
    });
    expect(stored.status).toBe(200);
    for (const [name, value] of [
      ['ISSUE_TRACKER_A_API_KEY', TOKENS.trackerA],
      ['ISSUE_TRACKER_B_TOKEN', TOKENS.trackerB],
      ['CHAT_BOT_TOKEN', TOKENS.chat],
    ]) {
      expect((await t.request('POST', '/api/v1/secrets', { key: user.key, body: { name, value } })).status).toBe(201);
    }
    await workers.start();
  });

  afterAll(async () => {
    await workers.killAll();
    await t?.close();
    await llm?.close();
    await Promise.all(hosts.map((h) => h.close()));
    killRuntimesUnder(dataDir);
    fs.rmSync(dataDir, { recursive: true, force: true });
  });
}

/** The conversation's round records, in the order of the events they covered. */
export const results = (conversationId: string): Promise<any[]> =>
  t.database.db.collection('callback_results').find({ conversation_id: conversationId }).sort({ to_seq: 1 }).toArray();

/** The round of processor 0 (each test starts with one processor) once it has one in `status`. */
export const recorded = (conversationId: string, status: 'ok' | 'failed', timeoutMs = 60_000): Promise<any[]> =>
  eventually(
    async () => {
      const r = (await results(conversationId)).filter((x) => x.processor_index === 0 && x.status === status);
      return r.length > 0 ? r : false;
    },
    { timeoutMs, intervalMs: 200, what: `a ${status} round of conversation ${conversationId}` },
  );

/** The sandbox of the first start: the others join it (a user may run only so many sandboxes). */
let sandboxId: string | undefined;

/** Starts a conversation whose agent finishes at once (then, asked, gives SUMMARY); answers its id. */
export async function startFinishing(
  processor: Record<string, unknown>,
  more: Record<string, unknown>[] = [],
): Promise<string> {
  // The summary twice: two processors whose rounds run at once may each ask it (the one stored first is
  // posted by both), and which ask comes second is up to the machine's load.
  llm.load([
    { tool_calls: [{ name: 'finish', arguments: { message: 'done' } }] },
    { content: SUMMARY },
    { content: SUMMARY },
  ]);
  const res = await fetch(`${t.url}/api/v1/app-conversations/stream-start`, {
    method: 'POST',
    headers: { 'X-Access-Token': user.key, 'Content-Type': 'application/json' },
    body: JSON.stringify({
      initial_message: { content: [{ text: 'Fix the flaky test' }], run: true },
      processors: [processor, ...more],
      ...(sandboxId ? { sandbox_id: sandboxId } : {}),
    }),
  });
  const steps = JSON.parse(await res.text());
  expect(steps.at(-1)).toMatchObject({ status: 'READY' });
  sandboxId ??= steps.at(-1).sandbox_id as string;
  return steps.at(-1).app_conversation_id as string;
}
