/**
 * The start flow end to end: stream-start through the api, the start-task workflow on a real worker, a
 * process sandbox with its runtime, a local bare repository with a setup script, a pre-commit hook and a
 * skill, and the scripted LLM as the organization's model; then the conversation's events in the log.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { ScriptedLlm } from '../src/llm/scripted-llm';
import {
  callbacksWorkflowId,
  sandboxWorkflowId,
  startTaskWorkflowId,
  WORKFLOW_TYPES,
  type StartTaskWorkflowInput,
} from '../src/temporal/shared';
import { echoRequest, START_TASK_STATUSES, StartRequestSchema } from '../src/schemas/app-conversations';
import { loggedEvents, newUserWithLlm, states } from './helpers/agent';
import { type TestApi } from './helpers/api';
import { eventually } from './helpers/eventually';
import { runtimesUnder, waitForStatus } from './helpers/sandboxes';
import { GitHostStandIn } from './helpers/git-host-stand-in';
import { bareRepo } from './helpers/git-repo';
import { sample } from './helpers/event-samples';
import { startServiceUnderTest, type ServiceUnderTest } from './helpers/service';
import { acceptedTaskRecord } from './helpers/start-tasks';
import { setTimeout as sleep } from 'node:timers/promises';

/** Every status before READY, in order. */
const STATUSES = START_TASK_STATUSES.filter((s) => s !== 'READY' && s !== 'ERROR');

describe('app conversation starts', () => {
  let t: TestApi;
  let service: ServiceUnderTest;
  let dataDir: string;
  let llm: ScriptedLlm;
  let user: { userId: string; key: string };
  let gitHost: GitHostStandIn;

  beforeAll(async () => {
    gitHost = await new GitHostStandIn().start();
    service = await startServiceUnderTest('starts-', {
      SANDBOX_IDLE_TIMEOUT_MS: '0',
      START_SETUP_TIMEOUT_MS: '20000',
      GIT_HOST_A_API_URL: gitHost.url,
    });
    ({ t, dataDir } = service);
    llm = await new ScriptedLlm([]).start();
    user = await newUserWithLlm(t, llm);
  });

  afterAll(async () => {
    await service?.close();
    await llm?.close();
    await gitHost?.close();
  });

  /** The workflows a visibility query lists, once it lists `atLeast` (visibility is eventually consistent). */
  const workflowsMatching = async (query: string, atLeast = 1) => {
    const client = await service.temporal();
    return await eventually(
      async () => {
        const listed: { workflowId: string; searchAttributes: Record<string, unknown[]> }[] = [];
        for await (const w of client.workflow.list({ query }))
          listed.push({
            workflowId: w.workflowId,
            searchAttributes: w.searchAttributes as Record<string, unknown[]>,
          });
        return listed.length >= atLeast ? listed : false;
      },
      { timeoutMs: 10_000, intervalMs: 200, what: `a workflow matching ${query}` },
    );
  };

  /** POSTs stream-start and reads the whole JSON array it streams. */
  const streamStart = async (body: object, key = user.key) => {
    const res = await fetch(`${t.url}/api/v1/app-conversations/stream-start`, {
      method: 'POST',
      headers: { 'X-Access-Token': key, 'Content-Type': 'application/json' },
      body: JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, body: JSON.parse(text) };
  };

  it('a full start with a repository, setup script, hook and skills reaches READY with every status in order; the agent runs and its events are searchable', async () => {
    const repo = bareRepo(dataDir, 'demo', {
      'README.md': '# demo\n',
      '.agents/setup.sh':
        'echo "setting up $(basename "$PWD")"\necho ran > setup-ran.txt\nprintf "#!/bin/sh\\necho local hook\\n" > .git/hooks/pre-commit\nchmod +x .git/hooks/pre-commit\n',
      '.agents/pre-commit.sh': 'echo "repository hook"\n',
      '.agents/skills/testing.md':
        '---\nname: testing\ntriggers: [tests, pytest]\n---\nRun the tests with `make test`.\n',
      '.agents/skills/style.md': 'Keep lines short.\n',
    });
    llm.load([
      { tool_calls: [{ name: 'terminal', arguments: { command: 'ls -a' } }] },
      { tool_calls: [{ name: 'finish', arguments: { message: 'listed' } }] },
    ]);
    const requestsBefore = llm.requests.length;
    const started = await streamStart({
      selected_repository: repo,
      selected_branch: 'main',
      initial_message: { content: [{ text: 'List the files and run the tests.' }], run: true },
      system_message_suffix: 'Be brief.',
      secrets: { DEPLOY_TOKEN: 'tok-start-secret' },
      title: 'Demo start',
    });
    expect(started.status).toBe(200);
    const tasks = started.body as any[];
    expect(tasks.map((s) => s.status)).toEqual([...STATUSES, 'READY']);
    expect(new Set(tasks.map((s) => s.id)).size).toBe(1);
    const ready = tasks.at(-1);
    expect(ready).toMatchObject({
      created_by_user_id: user.userId,
      app_conversation_id: ready.id,
      sandbox_id: expect.any(String),
      agent_server_url: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+$/),
    });
    expect(ready.request).toMatchObject({
      git_provider: null,
      trigger: 'platform_api',
      secrets: { DEPLOY_TOKEN: '**********' },
    });
    expect(JSON.stringify(tasks)).not.toContain('tok-start-secret');

    // The repository as the start left it.
    const workspace = path.join(dataDir, 'sandboxes', ready.sandbox_id, 'workspace', 'demo');
    expect(fs.readFileSync(path.join(workspace, 'setup-ran.txt'), 'utf8')).toBe('ran\n');
    expect(fs.readFileSync(path.join(workspace, '.git', 'hooks', 'pre-commit'), 'utf8')).toContain(
      'agent-control pre-commit',
    );
    expect(fs.readFileSync(path.join(workspace, '.git', 'hooks', 'pre-commit.local'), 'utf8')).toContain('local hook');
    const hook = execFileSync(path.join(workspace, '.git', 'hooks', 'pre-commit'), {
      cwd: workspace,
      encoding: 'utf8',
    });
    expect(hook).toBe('local hook\nrepository hook\n');

    // The agent ran with the organization's LLM, the repository's skills and the request's suffix.
    const log = await eventually(
      async () => {
        const l = await loggedEvents(t, user.key, ready.app_conversation_id);
        expect(states(l).at(-1)).toBe('finished');
        return l;
      },
      { timeoutMs: 10_000, intervalMs: 100 },
    );
    const first = llm.requests[requestsBefore]!;
    expect(first.authorization).toBe('Bearer sk-org');
    const system = (first.body.messages as any[])[0].content as string;
    expect(system).toContain('Keep lines short.'); // a skill without triggers is always on
    expect(system).toContain('Be brief.');
    const message = log.find((e) => e.kind === 'MessageEvent');
    expect(message.activated_skills).toEqual(['testing']); // triggered by "tests"
    const listing = log.find((e) => e.kind === 'ObservationEvent');
    expect(listing.observation.content[0].text).toContain('setup-ran.txt'); // it worked in the repository

    // Read back by id, searched and counted; the conversation is listed with its metadata.
    const byId = await t.request('GET', `/api/v1/app-conversations/start-tasks?ids=${ready.id}&ids=${randomUUID()}`, {
      key: user.key,
    });
    expect(byId.body).toEqual([expect.objectContaining({ id: ready.id, status: 'READY' }), null]);
    const search = await t.request(
      'GET',
      `/api/v1/app-conversations/start-tasks/search?conversation_id__eq=${ready.id}`,
      { key: user.key },
    );
    expect(search.body.items.map((s: any) => s.id)).toEqual([ready.id]);
    expect(
      (await t.request('GET', '/api/v1/app-conversations/start-tasks/count', { key: user.key })).body,
    ).toBeGreaterThanOrEqual(1);
    const conversations = await t.request('GET', `/api/v1/app-conversations?ids=${ready.id}`, { key: user.key });
    expect(conversations.body).toEqual([
      expect.objectContaining({
        id: ready.id,
        title: 'Demo start',
        selected_repository: repo,
        selected_branch: 'main',
        sandbox_id: ready.sandbox_id,
        trigger: 'platform_api',
      }),
    ]);
    const titled = await t.request('GET', '/api/v1/app-conversations/search?title__contains=demo', { key: user.key });
    expect(titled.body.items.map((c: any) => c.id)).toContain(ready.id);
    const other = await t.newUser();
    expect((await t.request('GET', `/api/v1/app-conversations?ids=${ready.id}`, { key: other.key })).body).toEqual([
      null,
    ]);
  }, 90_000);

  it('a PAUSED sandbox of the caller is resumed for the start, and plugins bring their skills', async () => {
    const plugin = bareRepo(dataDir, 'plugin', {
      'skills/review.md': '---\nname: review\n---\nReview with the checklist in REVIEW.md.\n',
    });
    const sandbox = (await t.request('POST', '/api/v1/sandboxes', { key: user.key, body: {} })).body;
    await waitForStatus(t, user.key, sandbox.id, 'RUNNING');
    expect((await t.request('POST', `/api/v1/sandboxes/${sandbox.id}/pause`, { key: user.key })).body.status).toBe(
      'PAUSED',
    );
    llm.load([{ content: 'Nothing to do.' }]);
    const requestsBefore = llm.requests.length;
    const started = await streamStart({
      sandbox_id: sandbox.id,
      plugins: [{ source: plugin }],
      initial_message: { content: [{ text: 'Hello' }], run: true },
    });
    expect(started.body.at(-1)).toMatchObject({ status: 'READY', sandbox_id: sandbox.id });
    expect((await t.request('GET', `/api/v1/sandboxes?id=${sandbox.id}`, { key: user.key })).body[0].status).toBe(
      'RUNNING',
    );
    await eventually(() => llm.requests.length > requestsBefore, {
      what: 'an LLM request',
      timeoutMs: 60_000,
      intervalMs: 50,
    }); // the test's own bound
    expect((llm.requests[requestsBefore]!.body.messages as any[])[0].content).toContain(
      'Review with the checklist in REVIEW.md.',
    );
    // Listed without ids: the first page, newest first.
    const listed = await t.request('GET', '/api/v1/app-conversations?limit=1', { key: user.key });
    expect(listed.body.items.map((c: any) => c.id)).toEqual([started.body.at(-1).app_conversation_id]);
    expect(listed.body.next_page_id).toEqual(expect.any(String));
  }, 60_000);

  it('a failing setup script gives ERROR with the end of its output', async () => {
    const repo = bareRepo(dataDir, 'broken', {
      '.agents/setup.sh': 'echo "installing dependencies"\necho "error: no such package: left-pad" >&2\nexit 3\n',
    });
    const started = await streamStart({ selected_repository: repo });
    const statuses = started.body.map((s: any) => s.status);
    expect(statuses).toEqual([
      'WORKING',
      'WAITING_FOR_SANDBOX',
      'PREPARING_REPOSITORY',
      'RUNNING_SETUP_SCRIPT',
      'ERROR',
    ]);
    const error = started.body.at(-1);
    expect(error.detail).toMatch(/setup script \.agents\/setup\.sh failed \(exit 3\)/);
    expect(error.detail).toContain('error: no such package: left-pad');

    // An operator finds the failed start by owner, status and conversation, and sees its sandbox.
    const q = `OwnerUserId = "${user.userId}" AND StartTaskStatus = "ERROR" AND ConversationId = "${error.id}"`;
    const found = await workflowsMatching(q);
    expect(found.map((w) => w.workflowId)).toEqual([startTaskWorkflowId(error.id)]);
    expect(found[0]!.searchAttributes.SandboxId).toEqual([error.sandbox_id]);
    expect(
      await workflowsMatching(
        `OwnerUserId = "${user.userId}" AND StartTaskStatus = "READY" AND ConversationId = "${error.id}"`,
        0,
      ),
    ).toEqual([]);

    // Its summary and its steps' summaries read without decoding payloads.
    const client = await service.temporal();
    const handle = client.workflow.getHandle(startTaskWorkflowId(error.id));
    const described = await handle.describe();
    expect(await described.staticSummary()).toBe(`Start for user ${user.userId}: ${JSON.stringify(repo)}`);
    expect(await described.staticDetails()).toContain(`- conversation: ${error.id}`);
    const history = await handle.fetchHistory();
    const summaries = (history.events ?? [])
      .filter((e) => e.activityTaskScheduledEventAttributes)
      .map((e) => JSON.parse(Buffer.from(e.userMetadata!.summary!.data!).toString('utf8')));
    expect(summaries).toEqual([
      'start a new sandbox',
      `wait for sandbox ${error.sandbox_id} to run`,
      `clone ${JSON.stringify(repo)}`,
      'run the setup script (workspace "broken")',
      `delete sandbox ${error.sandbox_id} (the start failed)`,
    ]);
  }, 60_000);

  it('a start that fails after creating its own sandbox deletes it through its workflow; a sandbox the request named stays', async () => {
    const missing = path.join(dataDir, 'no-such-repository.git');
    const started = await streamStart({ selected_repository: missing });
    expect(started.body.map((s: any) => s.status)).toEqual([
      'WORKING',
      'WAITING_FOR_SANDBOX',
      'PREPARING_REPOSITORY',
      'ERROR',
    ]);
    const failed = started.body.at(-1);
    // Deleted before the start reported ERROR: not left running until its idle timeout.
    const deleted = await waitForStatus(t, user.key, failed.sandbox_id, 'DELETED', 10_000);
    expect(deleted).toMatchObject({ status_detail: 'deleted on request', exposed_urls: [], session_api_key: null });
    expect(failed.detail).toMatch(/^Cloning .*no-such-repository\.git failed/);
    expect(failed.detail.split('\n').at(-1)).toBe(
      `The sandbox ${failed.sandbox_id} that this start created was deleted.`,
    );
    const dir = path.join(dataDir, 'sandboxes', failed.sandbox_id);
    expect(fs.existsSync(dir)).toBe(false);
    expect(runtimesUnder(dir)).toEqual([]);
    // The sandbox's own workflow did it, and ended.
    const client = await service.temporal();
    const described = await client.workflow.getHandle(sandboxWorkflowId(failed.sandbox_id)).describe();
    expect(described.status.name).toBe('COMPLETED');

    const mine = (await t.request('POST', '/api/v1/sandboxes', { key: user.key, body: {} })).body;
    await waitForStatus(t, user.key, mine.id, 'RUNNING');
    const named = await streamStart({ sandbox_id: mine.id, selected_repository: missing });
    expect(named.body.at(-1)).toMatchObject({ status: 'ERROR', sandbox_id: mine.id });
    expect(named.body.at(-1).detail).not.toContain('that this start created');
    await sleep(500);
    expect((await t.request('GET', `/api/v1/sandboxes?id=${mine.id}`, { key: user.key })).body[0].status).toBe(
      'RUNNING',
    );
    await t.request('DELETE', `/api/v1/sandboxes/${mine.id}`, { key: user.key });
  }, 60_000);

  it('an initial_message without content (the published SendMessageRequest allows it) sends no message; acp_server and launched_agent_profile are null', async () => {
    const before = llm.requests.length;
    const started = await streamStart({ initial_message: { run: true } });
    expect(started.status).toBe(200);
    const ready = started.body.at(-1);
    expect(ready).toMatchObject({ status: 'READY' });
    expect(ready.request.initial_message).toEqual({ role: 'user', content: [], run: true });
    const [conversation] = (await t.request('GET', `/api/v1/app-conversations?ids=${ready.id}`, { key: user.key }))
      .body;
    expect(conversation).toMatchObject({ id: ready.id, acp_server: null, launched_agent_profile: null });
    // No message: the agent never ran, the LLM was never asked, the log holds no message of the user.
    await sleep(500);
    expect(llm.requests.length).toBe(before);
    const events = (
      await t.request('GET', `/api/v1/conversation/${ready.id}/events/search?limit=100`, { key: user.key })
    ).body.items as { kind?: string; source?: string }[];
    expect(events.filter((e) => e.kind === 'MessageEvent' && e.source === 'user')).toEqual([]);
  }, 60_000);

  it("refuses another user's sandbox: ERROR saying it was not found", async () => {
    const other = await t.newUser();
    const theirs = await t.request('POST', '/api/v1/sandboxes', { key: other.key, body: {} });
    const started = await streamStart({ sandbox_id: theirs.body.id });
    expect(started.body.map((s: any) => s.status)).toEqual(['WORKING', 'WAITING_FOR_SANDBOX', 'ERROR']);
    expect(started.body.at(-1).detail).toMatch(/Sandbox .* not found/);
  });

  it('the same conversation_id sent twice joins the first start: one task, one conversation', async () => {
    llm.load([{ content: 'Nothing to do.' }]);
    const conversationId = randomUUID();
    const [a, b] = await Promise.all([
      t.request('POST', '/api/v1/app-conversations', { key: user.key, body: { conversation_id: conversationId } }),
      t.request('POST', '/api/v1/app-conversations', { key: user.key, body: { conversation_id: conversationId } }),
    ]);
    expect([a.status, b.status]).toEqual([200, 200]);
    expect(a.body.id).toBe(conversationId);
    expect(b.body.id).toBe(conversationId);
    const joined = await streamStart({ conversation_id: conversationId });
    expect(joined.body.at(-1)).toMatchObject({ id: conversationId, status: 'READY' });
    expect(await t.database.db.collection('app_conversations').countDocuments({ _id: conversationId as any })).toBe(1);
    expect(await t.database.db.collection('start_tasks').countDocuments({ conversation_id: conversationId })).toBe(1);
    // Sent again after READY: the same task, not run a second time (no new sandbox, no new status).
    const sandboxesBefore = await t.database.db
      .collection('sandboxes')
      .countDocuments({ created_by_user_id: user.userId });
    const resent = await t.request('POST', '/api/v1/app-conversations', {
      key: user.key,
      body: { conversation_id: conversationId, title: 'another' },
    });
    expect(resent.body).toMatchObject({ id: conversationId, status: 'READY' });
    await sleep(500);
    expect(
      (await t.database.db.collection('start_tasks').findOne({ _id: conversationId as any }))!.history,
    ).toHaveLength(8);
    expect(await t.database.db.collection('sandboxes').countDocuments({ created_by_user_id: user.userId })).toBe(
      sandboxesBefore,
    );
    // Another user cannot take the id.
    const other = await t.newUser();
    expect(
      (
        await t.request('POST', '/api/v1/app-conversations', {
          key: other.key,
          body: { conversation_id: conversationId },
        })
      ).status,
    ).toBe(409);
  }, 60_000);

  it("a conversation_id of a conversation no start made (another user's, or the caller's own) is 409: nothing starts and the conversation stays its owner's", async () => {
    // Conversations as the demo makes them: ConversationsStore.create, no start task.
    const other = await t.newUser();
    const theirs = await t.newConversation(other.userId);
    const mine = await t.newConversation(user.userId);
    const storedBefore = await t.database.db
      .collection('conversations')
      .find({ _id: { $in: [theirs.conversationId, mine.conversationId] as any[] } })
      .toArray();

    const streamed = await t.request('POST', '/api/v1/app-conversations/stream-start', {
      key: user.key,
      body: { conversation_id: theirs.conversationId },
    });
    expect(streamed.status).toBe(409);
    expect(streamed.body).toEqual({ detail: `conversation_id ${theirs.conversationId} is already in use` });
    const posted = await t.request('POST', '/api/v1/app-conversations', {
      key: user.key,
      body: { conversation_id: theirs.conversationId },
    });
    expect(posted.status).toBe(409);
    const own = await t.request('POST', '/api/v1/app-conversations/stream-start', {
      key: user.key,
      body: { conversation_id: mine.conversationId },
    });
    expect(own.status).toBe(409);
    expect(own.body.detail).toMatch(/not made by a start; send another conversation_id, or none/);

    await sleep(300);
    expect(
      await t.database.db
        .collection('start_tasks')
        .countDocuments({ _id: { $in: [theirs.conversationId, mine.conversationId] as any[] } }),
    ).toBe(0);
    const storedAfter = await t.database.db
      .collection('conversations')
      .find({ _id: { $in: [theirs.conversationId, mine.conversationId] as any[] } })
      .toArray();
    expect(storedAfter).toEqual(storedBefore);
    // The other user's runtime still reports its events with its own session key.
    expect((await t.ingest(theirs.conversationId, theirs.sessionKey, [sample('PauseEvent')])).status).toBe(200);
  });

  it("the start's conversation step never takes over a conversation that appeared after the api's check: ERROR, the conversation untouched", async () => {
    // The race the api's check cannot close: the task record is accepted (as the api writes it), then
    // another user's conversation takes the id, then the workflow runs.
    const other = await t.newUser();
    const id = randomUUID();
    const request = StartRequestSchema.parse({ conversation_id: id });
    const echoed = echoRequest(request) as Record<string, unknown>;
    await t.stores.startTasks.create(acceptedTaskRecord(user.userId, id, request), null);
    const theirs = await t.conversations.create({ id, userId: other.userId, sessionApiKey: 'their-session-key-1234' });
    const client = await service.temporal();
    const input: StartTaskWorkflowInput = {
      taskId: id,
      userId: user.userId,
      request: echoed,
      settings: {
        sandboxWaitMs: t.config.starts.sandboxWaitMs,
        setupScriptTimeoutMs: t.config.starts.setupScriptTimeoutMs,
      },
    };
    await client.workflow.start(WORKFLOW_TYPES.startTask, {
      workflowId: startTaskWorkflowId(id),
      taskQueue: t.config.temporal.taskQueue,
      args: [input],
    });
    const joined = await streamStart({ conversation_id: id });
    expect(joined.body.map((s: any) => s.status)).toEqual([...STATUSES, 'ERROR']);
    expect(joined.body.at(-1).detail).toMatch(
      new RegExp(`Conversation ${id} already exists and was not made by this start`),
    );
    expect(await t.conversations.get(id)).toEqual(theirs);
    expect(await t.conversations.sessionKeyMatches(id, 'their-session-key-1234')).toBe(true);
    expect(await t.database.db.collection('app_conversations').countDocuments({ _id: id as any })).toBe(0);
  }, 60_000);

  it('answers 422 for a bad request and starts nothing', async () => {
    const before = await t.database.db.collection('start_tasks').countDocuments();
    const bad = await t.request('POST', '/api/v1/app-conversations/stream-start', {
      key: user.key,
      body: { git_provider: 'sourceforge', trigger: 'nope', observability_metadata: { mixed: [1, 'a'] } },
    });
    expect(bad.status).toBe(422);
    expect(bad.body.detail.map((d: any) => d.loc.join('.'))).toEqual(
      expect.arrayContaining(['body.git_provider', 'body.trigger']),
    );
    expect(await t.database.db.collection('start_tasks').countDocuments()).toBe(before);
  });

  /** Retries `check` until it answers something truthy: that value. */
  const found = <T>(check: () => Promise<T | null | undefined | false>, what: string, timeoutMs = 20_000): Promise<T> =>
    eventually(
      async () => {
        const v = await check();
        if (!v) throw new Error(`timed out waiting for ${what}`);
        return v;
      },
      { timeoutMs, intervalMs: 100 },
    );
  const results = (conversationId: string) =>
    t.database.db
      .collection('callback_results')
      .find({ conversation_id: conversationId })
      .sort({ processor_index: 1, to_seq: 1 })
      .toArray();

  it('callback processors run on ingested events: a title is set, a failing git host is retried until the summary comment is posted once', async () => {
    gitHost.failNext = 2;
    // The processor posts with the stored provider token, never with one that came in the start's request.
    expect(
      (
        await t.request('POST', '/api/v1/secrets/git-providers', {
          key: user.key,
          body: { provider_tokens: { git_host_a: { token: 'ghs-test-token' } } },
        })
      ).status,
    ).toBe(200);
    // The agent finishes, is asked for its summary (once, though the host fails twice), and later answers again.
    llm.load([
      { tool_calls: [{ name: 'finish', arguments: { message: 'done' } }] },
      { content: 'Fixed the flaky test in widgets.' },
      { content: 'Still fixed.' },
    ]);
    const started = await streamStart({
      initial_message: { content: [{ text: 'Fix the flaky test\nIt fails one run in ten.' }], run: true },
      processors: [
        { kind: 'GitHostAV1CallbackProcessor', git_host_a_view_data: { repo: 'acme/widgets', pr_number: 7 } },
        { kind: 'LoggingCallbackProcessor' },
      ],
      secrets: { GIT_HOST_A_TOKEN: 'ghs-from-the-request' },
    });
    const ready = started.body.at(-1);
    expect(ready.status).toBe('READY');
    const id = ready.app_conversation_id;

    const posted = await found(
      async () => gitHost.comments.find((c) => c.repo === 'acme/widgets'),
      'the summary comment',
    );
    expect(posted).toEqual({
      repo: 'acme/widgets',
      number: 7,
      body: expect.stringMatching(
        /^The agent finished:\n\nFixed the flaky test in widgets\.\n\n<!-- agent-control:conversation=/,
      ),
      authorization: 'Bearer ghs-test-token',
    });
    const app = await found(
      async () =>
        (await t.request('GET', `/api/v1/app-conversations?ids=${id}`, { key: user.key })).body[0]?.title
          ? (await t.request('GET', `/api/v1/app-conversations?ids=${id}`, { key: user.key })).body[0]
          : null,
      'the title',
    );
    expect(app.title).toBe('Fix the flaky test');
    const recorded = await found(async () => {
      const r = await results(id);
      return r.some(
        (x) => x.kind === 'GitHostAV1CallbackProcessor' && x.status === 'ok' && x.actions.includes('comment-posted'),
      )
        ? r
        : null;
    }, 'the recorded callback');
    const comment = recorded.find((x) => x.actions.includes('comment-posted'))!;
    expect(comment.attempts).toBe(3); // two 500s, then posted
    // The agent was asked for its summary once: the tries after a failed post reuse its answer.
    expect(
      llm.requests.filter((r) => JSON.stringify(r.body.messages?.at(-1) ?? null).includes('summarize your work')),
    ).toHaveLength(1);
    expect(recorded.filter((x) => x.kind === 'LoggingCallbackProcessor').every((x) => x.status === 'ok')).toBe(true);
    expect(recorded.map((x) => x.kind)).toContain('SetTitleCallbackProcessor'); // always registered
    // Its callbacks workflow and its start are found by the conversation.
    const byConversation = await workflowsMatching(`ConversationId = "${id}"`, 2);
    expect(byConversation.map((w) => w.workflowId).sort()).toEqual(
      [callbacksWorkflowId(id), startTaskWorkflowId(id)].sort(),
    );

    // The agent finishes again, and the record of the first comment is gone (a crash right after the post):
    // the comment is not posted twice (its marker is found on the pull request).
    const rt = { url: ready.agent_server_url };
    const sandbox = (await t.request('GET', `/api/v1/sandboxes?id=${ready.sandbox_id}`, { key: user.key })).body[0];
    const again = await fetch(`${rt.url}/api/conversations/${id}/events`, {
      method: 'POST',
      headers: { 'X-Session-API-Key': sandbox.session_api_key, 'Content-Type': 'application/json' },
      body: JSON.stringify({ content: [{ text: 'Anything else?' }] }),
    });
    expect(again.status).toBe(200);
    await t.database.db
      .collection('callback_results')
      .deleteMany({ conversation_id: id, kind: 'GitHostAV1CallbackProcessor' });
    const logged = (await results(id)).filter((x) => x.kind === 'LoggingCallbackProcessor').length;
    await found(
      async () => (await results(id)).filter((x) => x.kind === 'LoggingCallbackProcessor').length > logged,
      'a second round',
    );
    await sleep(500);
    expect(gitHost.comments.filter((c) => c.repo === 'acme/widgets')).toHaveLength(1);
    await found(
      async () =>
        (await results(id)).some(
          (x) => x.kind === 'GitHostAV1CallbackProcessor' && x.actions.includes('comment-posted'),
        ),
      'the comment found again',
    );
  }, 90_000);

  it('a git host that refuses the comment: the failure is recorded, nothing is retried forever, the log is whole', async () => {
    gitHost.refuseWith = 403;
    try {
      llm.load([{ tool_calls: [{ name: 'finish', arguments: { message: 'done' } }] }]);
      const started = await streamStart({
        initial_message: { content: [{ text: 'Do it' }], run: true },
        processors: [
          { kind: 'GitHostAV1CallbackProcessor', git_host_a_view_data: { repo: 'acme/refused', pr_number: 1 } },
        ],
      });
      const id = started.body.at(-1).app_conversation_id;
      const failed = await found(
        async () => (await results(id)).find((x) => x.kind === 'GitHostAV1CallbackProcessor' && x.status === 'failed'),
        'the recorded failure',
      );
      expect(failed.detail).toMatch(/^git host A refused the summary on acme\/refused#1 \(403\)/);
      expect(failed.attempts).toBe(1); // a refusal is not retried
      const log = await loggedEvents(t, user.key, id);
      expect(states(log).at(-1)).toBe('finished');
    } finally {
      gitHost.refuseWith = null;
    }
  }, 60_000);
});
