/**
 * Issue 19's end to end: a user with nothing but an API key sets their LLM and stores a git token
 * through the published routes, and a start clones a private repository (a bare repository behind a
 * loopback HTTPS git server that refuses requests without the token) to READY. Then the token, the LLM
 * key and a custom secret are looked for everywhere they must not be: every answer, the api's log (at
 * trace level), the runtime's log, the database and every workflow history of the run.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { Writable } from 'node:stream';
import { randomBytes } from 'node:crypto';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import pino from 'pino';
import { ScriptedLlm } from '../src/llm/scripted-llm';
import type { TestApi } from './helpers/api';
import { eventually } from './helpers/eventually';
import { bareRepo } from './helpers/git-repo';
import { GitHttpsServer } from './helpers/git-https-server';
import { publishedClient } from './helpers/published-client';
import { startServiceUnderTest, type ServiceUnderTest } from './helpers/service';

/** JSON.stringify replacer: payload bytes (Uint8Array) as their UTF-8 text, so a grep sees what they carry. */
function bytesAsText(_key: string, value: unknown): unknown {
  return value instanceof Uint8Array ? Buffer.from(value).toString('utf8') : value;
}

describe('a private repository start set up through the API alone', () => {
  const gitToken = `gtok_${randomBytes(12).toString('hex')}`;
  const llmKey = `sk-user-${randomBytes(12).toString('hex')}`;
  const customValue = `custom-${randomBytes(12).toString('hex')}`;
  const secrets = [gitToken, llmKey, customValue];
  let dataDir: string;
  let git: GitHttpsServer;
  let service: ServiceUnderTest;
  let t: TestApi;
  let llm: ScriptedLlm;
  const logLines: string[] = [];
  const workerLogLines: string[] = [];
  /** Every answer body the test read, to grep at the end. */
  const answers: string[] = [];

  beforeAll(async () => {
    const sink = new Writable({
      write(chunk: Buffer, _enc, done) {
        logLines.push(chunk.toString('utf8'));
        done();
      },
    });
    // The worker's log (Temporal's runtime logger, activities' failures), at debug level, kept for the grep.
    Runtime.install({
      logger: new DefaultLogger('DEBUG', (entry) =>
        workerLogLines.push(
          `${entry.level} ${entry.message} ${JSON.stringify(entry.meta ?? {}, (_k, v: unknown) => (v instanceof Error ? `${v.message}\n${v.stack}` : v))}`,
        ),
      ),
    });
    service = await startServiceUnderTest(
      'private-start-',
      async (dir) => {
        const gitRoot = path.join(dir, 'git');
        bareRepo(path.join(gitRoot, 'acme'), 'private', { 'README.md': '# private\n', 'plan.txt': 'the plan\n' });
        git = await new GitHttpsServer(gitRoot, gitToken).start();
        return {
          SANDBOX_IDLE_TIMEOUT_MS: '0',
          GIT_CLONE_BASE_URL: git.url,
          SANDBOX_SPECS_FILE: git.writeTrustingSpecs(path.join(dir, 'specs.json')),
          LOG_LEVEL: 'trace',
        };
      },
      { logger: pino({ level: 'trace' }, sink) },
    );
    ({ t, dataDir } = service);
    llm = await new ScriptedLlm([]).start();
  }, 60_000);

  afterAll(async () => {
    await service?.close();
    await llm?.close();
    await git?.close();
  });

  const streamStart = async (key: string, body: object) => {
    const res = await fetch(`${t.url}/api/v1/app-conversations/stream-start`, {
      method: 'POST',
      headers: { 'X-Access-Token': key, 'Content-Type': 'application/json' },
      body: JSON.stringify(body),
    });
    const text = await res.text();
    answers.push(text);
    return JSON.parse(text) as any[];
  };

  it("clones with the stored token to READY, uses the user's LLM key, and no secret leaks", async () => {
    const user = await t.newUser();
    const api = publishedClient(t.url, user.key);

    // Without a token the private host refuses the clone.
    const refused = await streamStart(user.key, { selected_repository: 'acme/private', git_provider: 'git_host_a' });
    expect(refused.map((s) => s.status).slice(-2)).toEqual(['PREPARING_REPOSITORY', 'ERROR']);
    expect(refused.at(-1).detail).toMatch(/Cloning acme\/private failed/);
    expect(git.requests.some((r) => !r.authorized)).toBe(true);
    expect(git.requests.some((r) => r.authorized)).toBe(false);

    // The user's own LLM and key, and the git token, through the published routes.
    const stored = await api.POST('/api/v1/settings', {
      body: {
        agent_settings_diff: { agent_kind: 'platform', llm: { model: 'scripted-model', base_url: llm.url } },
        llm_api_key: llmKey,
      },
    });
    expect(stored.response.status).toBe(200);
    answers.push(JSON.stringify(stored.data));
    const tokens = await api.POST('/api/v1/secrets/git-providers', {
      body: { provider_tokens: { git_host_a: { token: gitToken } } } as any,
    });
    expect(tokens.response.status).toBe(200);
    expect(tokens.data).toEqual({ message: 'Git providers stored' });
    const custom = await api.POST('/api/v1/secrets', {
      body: { name: 'DEPLOY_KEY', value: customValue, description: 'deploys' },
    });
    expect(custom.response.status).toBe(201);

    const settings = await api.GET('/api/v1/settings');
    answers.push(JSON.stringify(settings.data));
    expect(settings.data).toMatchObject({ llm_api_key_set: true, provider_tokens_set: { git_host_a: null } });
    expect((settings.data!.agent_settings as any).llm).toMatchObject({
      model: 'scripted-model',
      api_key: '**********',
    });
    const listed = await api.GET('/api/v1/secrets/search');
    answers.push(JSON.stringify(listed.data));
    expect(listed.data!.items.map((s) => s.name)).toEqual(['DEPLOY_KEY']);

    // The start clones the private repository with the stored token.
    llm.load([
      { tool_calls: [{ name: 'terminal', arguments: { command: 'cat plan.txt' } }] },
      { tool_calls: [{ name: 'finish', arguments: { message: 'read it' } }] },
    ]);
    const before = llm.requests.length;
    const started = await streamStart(user.key, {
      selected_repository: 'acme/private',
      git_provider: 'git_host_a',
      initial_message: { content: [{ text: 'Read the plan.' }], run: true },
    });
    const ready = started.at(-1);
    expect(ready).toMatchObject({
      status: 'READY',
      app_conversation_id: expect.any(String),
      sandbox_id: expect.any(String),
    });
    expect(git.requests.some((r) => r.authorized)).toBe(true);
    const workspace = path.join(dataDir, 'sandboxes', ready.sandbox_id, 'workspace', 'private');
    expect(fs.readFileSync(path.join(workspace, 'plan.txt'), 'utf8')).toBe('the plan\n');
    // The clone's remote is left without the token.
    expect(execFileSync('git', ['-C', workspace, 'remote', 'get-url', 'origin'], { encoding: 'utf8' }).trim()).toBe(
      `${git.url}/acme/private.git`,
    );

    // The agent ran with the user's key (their settings over the organization's, which has none).
    await eventually(() => llm.requests.length > before + 1, {
      what: 'two LLM requests',
      timeoutMs: 30_000,
      intervalMs: 100,
    });
    expect(llm.requests[before]!.authorization).toBe(`Bearer ${llmKey}`);

    // Answers a client reads afterwards.
    for (const p of [
      '/api/v1/users/me',
      '/api/v1/settings',
      '/api/v1/secrets/search',
      `/api/v1/app-conversations/start-tasks?ids=${ready.id}`,
      `/api/v1/conversation/${ready.app_conversation_id}/events/search`,
    ]) {
      const r = await t.request('GET', p, { key: user.key });
      expect(r.status).toBe(200);
      answers.push(JSON.stringify(r.body));
    }

    // Grep: answers, the api's log, the runtimes' logs, the database, every workflow history of the run.
    const runtimeLogs = fs
      .readdirSync(path.join(dataDir, 'sandboxes'))
      .map((d) => path.join(dataDir, 'sandboxes', d, 'runtime.log'))
      .filter((f) => fs.existsSync(f))
      .map((f) => fs.readFileSync(f, 'utf8'));
    expect(runtimeLogs.length).toBeGreaterThan(0);
    expect(logLines.length).toBeGreaterThan(0);
    expect(workerLogLines.join('\n')).toContain('Cloning acme/private failed'); // the refused start's failure was logged
    const dump: string[] = [];
    for (const c of await t.database.db.listCollections().toArray())
      dump.push(JSON.stringify(await t.database.db.collection(c.name).find({}).toArray()));
    expect(dump.join('\n')).toContain('DEPLOY_KEY');
    const client = await service.temporal();
    const histories: string[] = [];
    const ids = await eventually(
      async () => {
        const found: string[] = [];
        for await (const w of client.workflow.list({ query: `TaskQueue = "${t.config.temporal.taskQueue}"` }))
          found.push(w.workflowId);
        return found.length >= 3 ? found : false;
      },
      { what: 'the workflows of the run', timeoutMs: 10_000, intervalMs: 200 },
    );
    for (const id of ids)
      histories.push(JSON.stringify(await client.workflow.getHandle(id).fetchHistory(), bytesAsText));
    expect(histories.some((h) => h.includes('acme/private'))).toBe(true);
    for (const [where, text] of [
      ['answers', answers.join('\n')],
      ['api log', logLines.join('')],
      ['worker log', workerLogLines.join('\n')],
      ['runtime logs', runtimeLogs.join('\n')],
      ['database', dump.join('\n')],
      ['workflow histories', histories.join('\n')],
    ] as const) {
      for (const s of secrets) {
        expect({ where, leaked: text.includes(s) }).toEqual({ where, leaked: false });
      }
    }
  }, 120_000);
});
