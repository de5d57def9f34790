/**
 * The typed client and the built `agent-control` CLI against the real api and worker (process sandboxes,
 * the scripted LLM): a start to READY with its statuses in order, the event log tailed across an api
 * restart with no gap or repeat, and each exit code a script relies on.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import pino from 'pino';
import { AgentControlClient, type Event } from '../src/client';
import { startApiServer } from '../src/api/server';
import { ScriptedLlm } from '../src/llm/scripted-llm';
import { freePort } from '../src/process/net';
import { START_TASK_STATUSES } from '../src/schemas/app-conversations';
import { type TestApi } from './helpers/api';
import { messages, sample } from './helpers/event-samples';
import { eventually } from './helpers/eventually';
import { bareRepo } from './helpers/git-repo';
import { distPath, runNode } from './helpers/run';
import { startServiceUnderTest, type ServiceUnderTest } from './helpers/service';

const CLI = distPath('src', 'cli', 'agent-control.js');

describe('agent-control client and CLI', () => {
  let t: TestApi;
  let service: ServiceUnderTest;
  let dataDir: string;
  let llm: ScriptedLlm;
  let user: { userId: string; key: string };
  let env: NodeJS.ProcessEnv;

  beforeAll(async () => {
    service = await startServiceUnderTest('cli-', { SANDBOX_IDLE_TIMEOUT_MS: '0' });
    ({ t, dataDir } = service);
    llm = await new ScriptedLlm([]).start();
    user = await t.newUser();
    await t.setOrgLlm(user.key, { model: 'scripted-model', base_url: llm.url, api_key: 'sk-org' });
    env = { XDG_CONFIG_HOME: path.join(dataDir, 'config'), AGENT_CONTROL_URL: '', AGENT_CONTROL_API_KEY: '' };
  }, 120_000);

  afterAll(async () => {
    await service?.close();
    await llm?.close();
  });

  const cli = (args: string[], extra: NodeJS.ProcessEnv = {}) => runNode(CLI, args, { ...env, ...extra }, 90_000);

  /** The api goes away (its connections cut) and comes back on the same port. */
  const restartApi = async () => {
    t.api.server.closeAllConnections();
    await t.api.close();
    t.api = await startApiServer(
      t.config,
      { mongoUri: t.config.mongo.uri!, temporalAddress: t.config.temporal.address! },
      pino({ level: 'silent' }),
    );
  };

  it('--help lists every command and the exit codes; a usage error exits 2; no configuration exits 2', async () => {
    const help = await cli(['--help']);
    expect(help.code).toBe(0);
    for (const c of ['login', 'start', 'send', 'events', 'conversations', 'sandboxes', 'tasks'])
      expect(help.stdout).toContain(c);
    expect(help.stdout).toMatch(/Exit codes:[\s\S]*3 +the API key was refused[\s\S]*7 +the start ended in ERROR/);
    const sub = await cli(['sandboxes', '--help']);
    expect(sub.stdout).toMatch(/ls[\s\S]*pause[\s\S]*resume[\s\S]*rm/);
    expect((await cli(['frobnicate'])).code).toBe(2);
    expect(
      (
        await cli(['conversations', 'ls', '--limit', 'zero'], {
          AGENT_CONTROL_URL: t.url,
          AGENT_CONTROL_API_KEY: user.key,
        })
      ).code,
    ).toBe(2);
    const none = await cli(['tasks', 'ls']);
    expect(none.code).toBe(2);
    expect(none.stderr).toContain('agent-control login');
  });

  it('login keeps the URL and key in a 0600 file; the environment overrides it; a refused key exits 3, an unknown id 4, an unreachable service 6', async () => {
    const login = await cli(['login', '--url', t.url, '--api-key', user.key]);
    expect(login.code).toBe(0);
    const file = path.join(dataDir, 'config', 'agent-control', 'config.json');
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    expect(JSON.parse(fs.readFileSync(file, 'utf8'))).toEqual({ url: t.url, api_key: user.key });
    const ls = await cli(['tasks', 'ls', '--json']);
    expect(ls.code).toBe(0);

    expect((await cli(['login', '--url', t.url, '--api-key', 'acp_wrong'])).code).toBe(3);
    expect((await cli(['tasks', 'ls'], { AGENT_CONTROL_API_KEY: 'acp_wrong' })).code).toBe(3);
    const missing = await cli(['tasks', 'show', '00000000000000000000000000000000']);
    expect(missing.code).toBe(4);
    expect((await cli(['events', 'search', 'no-such-conversation'])).code).toBe(4);
    const closed = await freePort();
    const unreachable = await cli(['conversations', 'ls'], { AGENT_CONTROL_URL: `http://127.0.0.1:${closed}` });
    expect(unreachable.code).toBe(6);
    expect(unreachable.stderr).toContain('cannot reach');
  });

  it('start prints each status in order with its time, reaches READY and follows the agent to the end; send; pausing a deleted sandbox exits 5; a failed start exits 7', async () => {
    const repo = bareRepo(dataDir, 'cli-demo', { 'README.md': '# demo\n' });
    llm.load([{ tool_calls: [{ name: 'finish', arguments: { message: 'done from the cli' } }] }]);
    const run = await cli(['start', '--repository', repo, '--branch', 'main', '--message', 'Say done.']);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    const steps = [...run.stdout.matchAll(/^ {2}✓ ([A-Z_]+) +(?:total )?(\d+\.\d)s/gm)].map((m) => m[1]!);
    expect(steps.at(-1)).toBe('READY');
    const order = steps.map((s) => START_TASK_STATUSES.indexOf(s as (typeof START_TASK_STATUSES)[number]));
    expect(order.every((i, k) => i >= 0 && (k === 0 || i > order[k - 1]!))).toBe(true);
    expect(steps).toEqual(
      expect.arrayContaining([
        'WORKING',
        'WAITING_FOR_SANDBOX',
        'PREPARING_REPOSITORY',
        'STARTING_CONVERSATION',
        'READY',
      ]),
    );
    const conversationId = /^conversation (\S+)/m.exec(run.stdout)![1]!;
    expect(run.stdout).toMatch(/MessageEvent +user: Say done\./);
    expect(run.stdout).toMatch(/ConversationStateUpdateEvent +execution_status = "finished"/);

    const shown = await cli(['conversations', 'show', conversationId]);
    expect(shown.code).toBe(0);
    expect(JSON.parse(shown.stdout)).toMatchObject({ id: conversationId });
    const listed = await cli(['conversations', 'ls', '--json', '-n', '5']);
    expect(
      listed.stdout
        .trim()
        .split('\n')
        .map((l) => (JSON.parse(l) as { id: string }).id),
    ).toContain(conversationId);
    const sandboxId = /\(sandbox (\S+)\)/.exec(run.stdout)![1]!;
    expect((await cli(['sandboxes', 'ls'])).stdout).toMatch(new RegExp(`^${sandboxId} +RUNNING`, 'm'));
    const searched = await cli(['events', 'search', conversationId, '--json', '--kind', 'MessageEvent']);
    const lines = searched.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { kind: string });
    expect(lines.length).toBeGreaterThan(0);
    expect(lines.every((l) => l.kind === 'MessageEvent')).toBe(true);

    const sent = await cli(['send', conversationId, 'Thanks.', '--no-run']);
    expect(sent.stderr).toBe('');
    expect(sent.code).toBe(0);
    expect((await cli(['sandboxes', 'rm', sandboxId])).code).toBe(0);
    // A deleted sandbox cannot be paused: 409, exit 5.
    const conflict = await cli(['sandboxes', 'pause', sandboxId]);
    expect(conflict.stderr).toContain('409');
    expect(conflict.code).toBe(5);

    const failed = await cli([
      'start',
      '--repository',
      path.join(dataDir, 'no-such-repo.git'),
      '--message',
      'x',
      '--no-follow',
    ]);
    expect(failed.code).toBe(7);
    expect(failed.stdout).toMatch(/✗ ERROR/);
  }, 120_000);

  it('events.tail and `events tail --json` go on across an api restart: every event once, in order', async () => {
    const c = await t.newConversation(user.userId);
    const first = messages(5);
    expect((await t.ingest(c.conversationId, c.sessionKey, first)).status).toBeLessThan(300);

    const cliTail = spawn(process.execPath, [CLI, 'events', 'tail', c.conversationId, '--json'], {
      env: { ...process.env, ...env, AGENT_CONTROL_URL: t.url, AGENT_CONTROL_API_KEY: user.key },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let cliOut = '';
    cliTail.stdout.on('data', (d: Buffer) => (cliOut += d.toString()));
    const cliIds = () =>
      cliOut
        .split('\n')
        .filter(Boolean)
        .map((l) => (JSON.parse(l) as { id: string }).id);

    const client = new AgentControlClient({ baseUrl: t.url, apiKey: user.key });
    const ac = new AbortController();
    const got: string[] = [];
    let reconnects = 0;
    const reading = (async () => {
      for await (const e of client.events.tail(c.conversationId, {
        signal: ac.signal,
        onReconnect: () => reconnects++,
      }))
        got.push((e as Event & { id: string }).id);
    })();
    await eventually(() => got.length === 5 && cliIds().length === 5, { timeoutMs: 15_000, intervalMs: 50 });

    await restartApi();
    // Stored while both readers are away or reconnecting.
    const second = messages(5);
    expect((await t.ingest(c.conversationId, c.sessionKey, second)).status).toBeLessThan(300);
    const third = messages(3);
    await eventually(() => got.length >= 10, { timeoutMs: 20_000, intervalMs: 50 });
    expect((await t.ingest(c.conversationId, c.sessionKey, third)).status).toBeLessThan(300);
    const all = [...first, ...second, ...third].map((e) => e.id as string);
    await eventually(() => got.length >= 13 && cliIds().length >= 13, { timeoutMs: 20_000, intervalMs: 50 });
    ac.abort();
    await reading;
    cliTail.kill('SIGINT');
    const exitCode = await new Promise<number | null>((r) => cliTail.once('close', (code) => r(code)));
    expect(exitCode).toBe(130); // Ctrl-C: detached
    expect(reconnects).toBeGreaterThan(0);
    expect(got).toEqual(all);
    expect(cliIds()).toEqual(all);
  }, 90_000);

  it('text from the agent reaches the terminal with its control characters shown, not acted on; --json keeps the value', async () => {
    const c = await t.newConversation(user.userId);
    const hostile =
      'copy \u001b]52;c;ZXZpbA==\u0007 clear \u001b[2J csi \u009b31m flip \u202egnp.exe\u202c bell \u0007';
    const event = sample('MessageEvent', {
      timestamp: new Date().toISOString(),
      llm_message: { role: 'user', content: [{ type: 'text', text: hostile }] },
    });
    expect((await t.ingest(c.conversationId, c.sessionKey, [event])).status).toBeLessThan(300);
    const configured = { AGENT_CONTROL_URL: t.url, AGENT_CONTROL_API_KEY: user.key };
    // eslint-disable-next-line no-control-regex -- control characters are what it finds
    const raw = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202a-\u202e]/;
    const readable = await cli(['events', 'search', c.conversationId], configured);
    expect(readable.code).toBe(0);
    expect(readable.stdout).not.toMatch(raw);
    expect(readable.stdout).toContain(
      'copy \\u001b]52;c;ZXZpbA==\\u0007 clear \\u001b[2J csi \\u009b31m flip \\u202egnp.exe',
    );
    const asJson = await cli(['events', 'search', c.conversationId, '--json'], configured);
    expect(asJson.stdout).not.toMatch(raw);
    expect(
      (JSON.parse(asJson.stdout.trim()) as { llm_message: { content: { text: string }[] } }).llm_message.content[0]!
        .text,
    ).toBe(hostile);
  });
});
