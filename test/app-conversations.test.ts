/**
 * The start flow end to end: stream-start through the api, the start-task workflow on a real worker, a
 * process sandbox with its runtime, a local bare repository with a setup script, a pre-commit hook and a
 * skill, and the scripted LLM as the organization's model; then the conversation's events in the log. A
 * paused sandbox resumed for a start, plugins' skills, an initial message without content. Failed starts
 * are in app-conversations-failures.test.ts, conversation ids sent with a start in
 * app-conversations-conversation-id.test.ts, callback processors in app-conversations-callbacks.test.ts.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { loggedEvents, states } from './helpers/agent';
import {
  dataDir,
  llm,
  STATUSES,
  streamStart,
  t,
  useAppConversationStarts,
  user,
} from './helpers/app-conversation-starts';
import { eventually } from './helpers/eventually';
import { waitForStatus } from './helpers/sandboxes';
import { bareRepo } from './helpers/git-repo';
import { setTimeout as sleep } from 'node:timers/promises';

describe('app conversation starts', () => {
  useAppConversationStarts();

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
});
