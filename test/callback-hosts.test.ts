/**
 * The five host callback processors against loopback stand-ins of their hosts (git hosts B and C, issue
 * trackers A and B, the chat service), with the real api, Temporal, a worker process and the built-in
 * runtime: a finished conversation posts the agent's summary (asked of it through ask_agent) exactly once,
 * with the user's stored credential; a worker killed while its post was in flight leaves one post; a host
 * that refuses ends in one recorded failure, one that keeps failing in a bounded number; a processor that
 * names a server the operator does not allow, or carries a credential, is refused before anything starts.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ScriptedLlm } from '../src/llm/scripted-llm';
import { freePort } from '../src/process/net';
import { startTestApi, type TestApi } from './helpers/api';
import {
  ChatStandIn,
  GitHostBStandIn,
  GitHostCStandIn,
  IssueTrackerStandIn,
  type HostPost,
} from './helpers/callback-host-stand-ins';
import { testConfig } from './helpers/env';
import { eventually } from './helpers/eventually';
import { killRuntimesUnder } from './helpers/sandboxes';
import { workerProcesses } from './helpers/worker';
import { setTimeout as sleep } from 'node:timers/promises';

const SUMMARY = 'I fixed the flaky test by waiting for the server to listen.';
const TOKENS = {
  gitB: 'glpat-b-secret',
  gitC: 'bbat-c-secret',
  trackerA: 'atat-a-secret',
  trackerB: 'pat-b-secret',
  chat: 'xoxb-chat-secret',
};

describe('callback processors that post to their hosts', () => {
  let t: TestApi;
  let dataDir: string;
  let llm: ScriptedLlm;
  let user: { userId: string; key: string };
  const gitB = new GitHostBStandIn();
  const gitC = new GitHostCStandIn();
  const trackerA = new IssueTrackerStandIn();
  const trackerB = new IssueTrackerStandIn();
  const chat = new ChatStandIn();
  // The hosts' addresses go to the worker process, which posts (the api only checks ISSUE_TRACKER_B_ORIGINS).
  const hostsEnv = () => ({
    GIT_HOST_B_API_URL: `${gitB.url}/api/v4`,
    GIT_HOST_C_API_URL: `${gitC.url}/2.0`,
    ISSUE_TRACKER_A_API_URL: trackerA.url,
    ISSUE_TRACKER_B_ORIGINS: trackerB.url,
    CHAT_API_URL: `${chat.url}/api`,
  });
  const workers = workerProcesses(
    () => t.config,
    () => dataDir,
    hostsEnv,
  );

  beforeAll(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'callback-hosts-'));
    await Promise.all([gitB, gitC, trackerA, trackerB, chat].map((h) => h.start()));
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
    await Promise.all([gitB, gitC, trackerA, trackerB, chat].map((h) => h.close()));
    killRuntimesUnder(dataDir);
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  const results = (conversationId: string) =>
    t.database.db
      .collection('callback_results')
      .find({ conversation_id: conversationId })
      .sort({ to_seq: 1 })
      .toArray();
  /** The round of processor 0 (each test starts with one processor) once it has one in `status`. */
  const recorded = (conversationId: string, status: 'ok' | 'failed', timeoutMs = 60_000) =>
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
  async function startFinishing(
    processor: Record<string, unknown>,
    more: Record<string, unknown>[] = [],
  ): Promise<string> {
    llm.load([{ tool_calls: [{ name: 'finish', arguments: { message: 'done' } }] }, { content: SUMMARY }]);
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

  const cases: {
    kind: string;
    host: () => { posts: HostPost[] };
    processor: Record<string, unknown>;
    place: string;
    text: (p: HostPost) => string;
    authorization: string;
  }[] = [
    {
      kind: 'GitHostBV1CallbackProcessor',
      host: () => gitB,
      processor: {
        kind: 'GitHostBV1CallbackProcessor',
        git_host_b_view_data: { project_id: 'acme/widgets', mr_iid: 7 },
      },
      place: 'acme/widgets!7',
      text: (p) => p.body.body,
      authorization: `Bearer ${TOKENS.gitB}`,
    },
    {
      kind: 'GitHostBV1CallbackProcessor (inline_mr_comment)',
      host: () => gitB,
      processor: {
        kind: 'GitHostBV1CallbackProcessor',
        git_host_b_view_data: { project_id: 'acme/widgets', mr_iid: 8, discussion_id: 'abc123' },
        inline_mr_comment: true,
      },
      place: 'acme/widgets!8#abc123',
      text: (p) => p.body.body,
      authorization: `Bearer ${TOKENS.gitB}`,
    },
    {
      kind: 'GitHostCV1CallbackProcessor',
      host: () => gitC,
      processor: { kind: 'GitHostCV1CallbackProcessor', git_host_c_view_data: { repo: 'acme/gadgets', pr_id: 3 } },
      place: 'acme/gadgets#3',
      text: (p) => p.body.content.raw,
      authorization: `Bearer ${TOKENS.gitC}`,
    },
    {
      kind: 'IssueTrackerAV1CallbackProcessor',
      host: () => trackerA,
      processor: {
        kind: 'IssueTrackerAV1CallbackProcessor',
        svc_acc_email: 'bot@acme.example',
        issue_key: 'WID-12',
        issue_tracker_a_cloud_id: 'cloud-1',
      },
      place: 'cloud-1/WID-12',
      text: (p) => p.body.body,
      authorization: `Basic ${Buffer.from(`bot@acme.example:${TOKENS.trackerA}`).toString('base64')}`,
    },
    {
      kind: 'IssueTrackerBV1CallbackProcessor',
      host: () => trackerB,
      processor: {
        kind: 'IssueTrackerBV1CallbackProcessor',
        issue_key: 'OPS-4',
        workspace_name: 'acme-dc',
        base_api_url: '' /* set below */,
      },
      place: 'OPS-4',
      text: (p) => p.body.body,
      authorization: `Bearer ${TOKENS.trackerB}`,
    },
    {
      kind: 'ChatV1CallbackProcessor',
      host: () => chat,
      processor: {
        kind: 'ChatV1CallbackProcessor',
        chat_view_data: { channel_id: 'C0123', thread_ts: '1700000000.000100' },
      },
      place: 'C0123/1700000000.000100',
      text: (p) => p.body.text,
      authorization: `Bearer ${TOKENS.chat}`,
    },
  ];

  it.each(cases)(
    '$kind: a finished conversation posts the summary the agent gave once, with the stored credential; another round posts nothing more',
    async (c) => {
      const processor = c.kind.startsWith('IssueTrackerB')
        ? { ...c.processor, base_api_url: trackerB.url }
        : c.processor;
      const id = await startFinishing(processor);
      const [round] = await recorded(id, 'ok');
      expect(round).toMatchObject({ kind: processor.kind, actions: ['comment-posted'], attempts: 1 });
      const posts = c.host().posts.filter((p) => p.place === c.place);
      expect(posts).toHaveLength(1);
      expect(c.text(posts[0]!)).toMatch(new RegExp(`^The agent finished:\\n\\n${SUMMARY.replace(/\./g, '\\.')}`));
      expect(posts[0]!.authorization).toBe(c.authorization);
      // The summary was asked of the agent: one LLM call without tools, after the step that finished.
      const ask = llm.requests.at(-1)!;
      expect(ask.body.tools ?? []).toEqual([]);
      expect(JSON.stringify(ask.body.messages?.at(-1))).toMatch(/summarize your work/);

      // The agent finishes again, and the round's record is gone (a crash right after the post): the post
      // is found on the host (its marker, property or metadata), not made twice.
      await t.database.db.collection('callback_results').deleteMany({ conversation_id: id });
      llm.load([{ content: 'Nothing else.' }, { content: 'A second summary.' }]);
      const sent = await t.request('POST', `/api/v1/app-conversations/${id}/send-message`, {
        key: user.key,
        body: { content: [{ text: 'Anything else?' }] },
      });
      expect(sent.status).toBe(200);
      await recorded(id, 'ok');
      expect(c.host().posts.filter((p) => p.place === c.place)).toHaveLength(1);
    },
    120_000,
  );

  it('two processors of one conversation post the same summary', async () => {
    const id = await startFinishing(
      { kind: 'GitHostBV1CallbackProcessor', git_host_b_view_data: { project_id: 'acme/both', mr_iid: 4 } },
      [{ kind: 'ChatV1CallbackProcessor', chat_view_data: { channel_id: 'CBOTH', thread_ts: '1700000000.000200' } }],
    );
    await eventually(
      async () =>
        (await results(id)).filter((r) => r.status === 'ok' && r.actions.includes('comment-posted')).length === 2,
      { timeoutMs: 60_000, intervalMs: 200, what: 'both posted' },
    );
    const [note] = gitB.posts.filter((p) => p.place === 'acme/both!4');
    const [reply] = chat.posts.filter((p) => p.place === 'CBOTH/1700000000.000200');
    expect(note!.body.body.split('\n\n<!--')[0]).toBe(reply!.body.text);
    expect(reply!.body.text).toBe(`The agent finished:\n\n${SUMMARY}`);
  }, 90_000);

  it('should_request_summary false posts nothing', async () => {
    const before = gitB.posts.length;
    const id = await startFinishing({
      kind: 'GitHostBV1CallbackProcessor',
      git_host_b_view_data: { project_id: 'acme/quiet', mr_iid: 1 },
      should_request_summary: false,
    });
    await eventually(
      async () =>
        (
          await t.request(
            'GET',
            `/api/v1/conversation/${id}/events/search?kind__eq=ConversationStateUpdateEvent&limit=100`,
            { key: user.key },
          )
        ).body.items.some((e: any) => e.value === 'finished'),
      {
        timeoutMs: 30_000,
        what: 'the agent finished',
      },
    );
    await sleep(2000);
    expect(gitB.posts.length).toBe(before);
    expect((await results(id)).filter((r) => r.processor_index === 0)).toEqual([]);
  }, 60_000);

  it('a worker killed while its post is in flight: the next worker finds the post and makes no second one', async () => {
    const held = gitB.hold();
    const startP = startFinishing({
      kind: 'GitHostBV1CallbackProcessor',
      git_host_b_view_data: { project_id: 'acme/killed', mr_iid: 2 },
    });
    await held.stored;
    await workers.kill(workers.all.at(-1)!);
    held.release(); // answered to no one: the worker is gone
    await workers.start();
    const id = await startP;
    const [round] = await recorded(id, 'ok');
    expect(round!.attempts).toBeGreaterThanOrEqual(2);
    expect(gitB.posts.filter((p) => p.place === 'acme/killed!2')).toHaveLength(1);
  }, 120_000);

  it('a host that refuses (4xx) ends in one recorded failure, the credential it echoes masked', async () => {
    gitC.refuseWith = 403;
    try {
      const id = await startFinishing({
        kind: 'GitHostCV1CallbackProcessor',
        git_host_c_view_data: { repo: 'acme/refused', pr_id: 1 },
      });
      const [failed] = await recorded(id, 'failed');
      expect(failed).toMatchObject({
        attempts: 1,
        detail: expect.stringMatching(/^git host C refused the summary on acme\/refused#1 \(403\)/),
      });
      // The host echoed the credential it was sent: the record says only that it did.
      expect(failed!.detail).toContain('"authorization":"Bearer ***"');
      expect(failed!.detail).not.toContain(TOKENS.gitC);
    } finally {
      gitC.refuseWith = null;
    }
  }, 90_000);

  it("the chat service's ok: false is a refusal: one recorded failure", async () => {
    chat.refuseWith = 404; // ok: false, channel_not_found
    try {
      const id = await startFinishing({
        kind: 'ChatV1CallbackProcessor',
        chat_view_data: { channel_id: 'CGONE', thread_ts: '1.2' },
      });
      const [failed] = await recorded(id, 'failed');
      expect(failed).toMatchObject({ attempts: 1, detail: expect.stringMatching(/channel_not_found/) });
    } finally {
      chat.refuseWith = null;
    }
  }, 90_000);

  it('a host that keeps failing (5xx) is tried a bounded number of times, then the failure is recorded', async () => {
    trackerA.refuseWith = 503;
    try {
      const before = trackerA.postRequests;
      const id = await startFinishing({
        kind: 'IssueTrackerAV1CallbackProcessor',
        svc_acc_email: 'bot@acme.example',
        issue_key: 'WID-99',
        issue_tracker_a_cloud_id: 'cloud-1',
      });
      const failed = await eventually(
        async () => {
          const r = (await results(id)).find((x) => x.status === 'failed' && x.attempts === 6);
          return r ?? false;
        },
        { timeoutMs: 90_000, intervalMs: 500, what: 'the sixth and last failed try' },
      );
      expect(failed.detail).toMatch(/^issue tracker A answered 503/);
      expect(failed.detail).toContain('"authorization":"Basic ***"');
      await sleep(3000);
      expect(trackerA.postRequests - before).toBe(6); // then no more
    } finally {
      trackerA.refuseWith = null;
    }
  }, 150_000);

  it('a processor naming a server the operator does not allow, or carrying a credential, is refused with 422; nothing starts', async () => {
    const tasks = async () =>
      (await t.request('GET', '/api/v1/app-conversations/start-tasks/count', { key: user.key })).body as number;
    const before = await tasks();
    const refused = await t.request('POST', '/api/v1/app-conversations', {
      key: user.key,
      body: {
        processors: [
          {
            kind: 'IssueTrackerBV1CallbackProcessor',
            issue_key: 'OPS-1',
            workspace_name: 'x',
            base_api_url: 'http://169.254.169.254/latest',
          },
        ],
      },
    });
    expect(refused.status).toBe(422);
    expect(refused.body.detail[0]).toMatchObject({
      loc: ['body', 'processors', 0, 'base_api_url'],
      msg: expect.stringMatching(/not among the issue tracker B servers/),
    });
    const clear = await t.request('POST', '/api/v1/app-conversations', {
      key: user.key,
      body: {
        processors: [
          {
            kind: 'IssueTrackerAV1CallbackProcessor',
            svc_acc_email: 'bot@acme.example',
            issue_key: 'WID-1',
            issue_tracker_a_cloud_id: 'c',
            decrypted_api_key: 'atat-in-clear',
          },
        ],
      },
    });
    expect(clear.status).toBe(422);
    expect(JSON.stringify(clear.body)).toMatch(
      /store the service account's API key as the secret ISSUE_TRACKER_A_API_KEY/,
    );
    expect(JSON.stringify(clear.body)).not.toMatch(/atat-in-clear/);
    expect(await tasks()).toBe(before);
  });

  it('no credential of any host is in a round record or the worker-visible failure', async () => {
    const all = JSON.stringify(await t.database.db.collection('callback_results').find({}).toArray());
    for (const token of Object.values(TOKENS)) expect(all).not.toContain(token);
  });
});
