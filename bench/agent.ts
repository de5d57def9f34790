/**
 * Agent runtime benchmark (on demand, never part of the tests):
 * `npm run bench:agent [-- --steps 200 --runs 3 --runtime built-in|openhands]`.
 *
 * --runtime picks the agent server: the built-in runtime, or the real OpenHands agent server (installed
 * first when missing, launched as the process provider launches it).
 *
 * Starts FerretDB and the Temporal dev server in a temporary directory, the api and one runtime as their
 * own processes, and the scripted LLM in this process. Each run, alternating the two so drift hits both:
 *   - agent: a conversation of N steps (each a `true` command) and a finish, from POST /api/conversations
 *     to `finished`, then until every event it wrote is in the log;
 *   - raw: the same work without the agent: the LLM requests the agent made, replayed as they were sent,
 *     each followed by the same command through the runtime's bash endpoint; then the conversation's
 *     events POSTed to the ingest endpoint in batches of 100.
 * Prints the medians, the agent's share over the raw work, early vs late step times (the view is rebuilt
 * every step) and the runtime's memory.
 */
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { SecretBox } from '../src/auth/secret-box';
import { ScriptedLlm, type ScriptStep } from '../src/llm/scripted-llm';
import { freePort } from '../src/process/net';
import { createStores } from '../src/composition';
import { openDatabase } from '../src/store/mongo';
import { arg, median, printTable, progress, runBench, wordArg } from './report';
import { ensureAgentServer } from '../scripts/servers/agent-server';
import { openHandsCommand, openHandsEnv } from '../activities/sandbox-providers/openhands-launch';
import { startBenchServers } from './servers';
import { setTimeout as sleep } from 'node:timers/promises';

const STEPS = arg('steps', 200);
const RUNTIME = wordArg('runtime', ['built-in', 'openhands'] as const, 'built-in');
const RUNS = arg('runs', 3);
const dist = (...p: string[]) => path.join(__dirname, '..', ...p);
const now = () => performance.now();

const COMMAND = 'true';
const script = (): ScriptStep[] => [
  ...Array.from({ length: STEPS }, (_, i) => ({
    content: `Step ${i + 1}.`,
    tool_calls: [{ name: 'terminal', arguments: { command: COMMAND } }],
  })),
  { tool_calls: [{ name: 'finish', arguments: { message: 'done' } }] },
];

async function main(): Promise<void> {
  const servers = await startBenchServers('agent');
  const apiPort = await freePort();
  const runtimePort = await freePort();
  const base = `http://127.0.0.1:${apiPort}`;
  const runtime = `http://127.0.0.1:${runtimePort}`;
  const sessionKey = `bench-session-${randomUUID()}`;
  const workspace = path.join(servers.dir, 'workspace');
  const stateDir = path.join(servers.dir, 'runtime-state');
  fs.mkdirSync(workspace, { recursive: true });
  fs.mkdirSync(stateDir, { recursive: true });
  const agentServer = RUNTIME === 'openhands' ? await ensureAgentServer(undefined, progress) : null;
  const launch = agentServer && {
    env: agentServer,
    stateDir,
    workspace,
    host: '127.0.0.1',
    port: runtimePort,
    sessionApiKey: sessionKey,
    controlPlaneUrl: base,
  };
  const [runtimeCommand, ...runtimeArgs] = launch
    ? openHandsCommand(launch)
    : [process.execPath, dist('src', 'runtime', 'main.js')];
  const children = [
    spawn(process.execPath, [dist('src', 'api', 'main.js')], {
      env: servers.serviceEnv({ API_PORT: String(apiPort), SECRETS_KEY: SecretBox.generateKey() }),
      stdio: ['ignore', 'inherit', 'inherit'],
    }),
    spawn(runtimeCommand!, runtimeArgs, {
      cwd: workspace,
      env: {
        PATH: process.env.PATH,
        HOME: process.env.HOME,
        RUNTIME_PORT: String(runtimePort),
        SESSION_API_KEY: sessionKey,
        RUNTIME_WORKING_DIR: workspace,
        RUNTIME_STATE_DIR: stateDir,
        CONTROL_PLANE_URL: base,
        LOG_LEVEL: 'warn',
        ...(launch ? openHandsEnv(launch) : {}),
      },
      stdio: ['ignore', 'ignore', 'inherit'],
    }),
  ];
  const database = openDatabase(servers.mongoUri, 'bench');
  const llm = await new ScriptedLlm([]).start();
  const rt = (method: string, p: string, body?: unknown) =>
    fetch(runtime + p, {
      method,
      headers: { 'X-Session-API-Key': sessionKey, 'Content-Type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    }).then(async (r) => {
      if (!r.ok) throw new Error(`${method} ${p} answered ${r.status}: ${await r.text()}`);
      return r.json() as Promise<never>;
    });
  /** The conversation as each runtime takes it: the built-in one's body, or the agent server's (an Agent with the terminal tool). */
  const createBody = (id: string) =>
    RUNTIME === 'openhands'
      ? {
          conversation_id: id,
          agent: {
            kind: 'Agent',
            llm: { model: 'openai/bench', base_url: llm.url, api_key: 'bench', num_retries: 0 },
            tools: [{ name: 'terminal' }],
          },
          workspace: { kind: 'LocalWorkspace', working_dir: workspace },
          initial_message: { role: 'user', content: [{ type: 'text', text: 'Run true many times.' }], run: true },
          max_iterations: STEPS + 5,
          autotitle: false,
        }
      : {
          conversation_id: id,
          agent: { llm: { model: 'bench', base_url: llm.url } },
          initial_message: { content: [{ text: 'Run true many times.' }], run: true },
          max_iterations: STEPS + 5,
        };
  /** How many events the runtime has for the conversation, and how many it has still to send. */
  const runtimeEvents = async (id: string): Promise<{ events: number; unsent: number }> => {
    if (RUNTIME === 'openhands')
      return { events: (await rt('GET', `/api/conversations/${id}/events/count`)) as number, unsent: 0 };
    const info: { events: number; unsent_events: number } = await rt('GET', `/api/conversations/${id}`);
    return { events: info.events, unsent: info.unsent_events };
  };
  /** Every event the runtime wrote for the conversation, as JSON texts in order. */
  const runtimeLog = async (id: string): Promise<string[]> => {
    if (RUNTIME === 'built-in') {
      const dir = fs.readdirSync(stateDir).find((d) => Buffer.from(d, 'base64url').toString() === id)!;
      return fs
        .readFileSync(path.join(stateDir, dir, 'outbox.jsonl'), 'utf8')
        .trim()
        .split('\n');
    }
    const out: string[] = [];
    let page: string | null = null;
    do {
      const r: { items: unknown[]; next_page_id: string | null } = await rt(
        'GET',
        `/api/conversations/${id}/events/search?limit=100&sort_order=TIMESTAMP${page ? `&page_id=${page}` : ''}`,
      );
      out.push(...r.items.map((e) => JSON.stringify(e)));
      page = r.next_page_id;
    } while (page);
    return out;
  };
  try {
    for (let i = 0; i < 300; i++) {
      const [a, b] = await Promise.all([
        fetch(`${base}/ready`).catch(() => null),
        fetch(`${runtime}/alive`).catch(() => null),
      ]);
      if (a?.status === 200 && b?.status === 200) break;
      await sleep(100);
    }
    const { users, conversations } = createStores(database.db);
    const user = await users.create('bench@example.com');
    const events = database.db.collection('events');

    const agentRun = async () => {
      const conv = await conversations.create({ userId: user.id, sessionApiKey: sessionKey });
      llm.load(script());
      const first = llm.requests.length;
      const t0 = now();
      await rt('POST', '/api/conversations', createBody(conv.id));
      let info: { execution_status: string };
      do {
        await sleep(2);
        info = await rt('GET', `/api/conversations/${conv.id}`);
      } while (info.execution_status === 'running' || info.execution_status === 'idle');
      if (info.execution_status !== 'finished') throw new Error(`the conversation ended ${info.execution_status}`);
      const finishedMs = now() - t0;
      let written = await runtimeEvents(conv.id);
      while (written.unsent > 0 || (await events.countDocuments({ conversation_id: conv.id })) < written.events) {
        await sleep(2);
        written = await runtimeEvents(conv.id);
      }
      const deliveredMs = now() - t0;
      // Step times from the log: from one ActionEvent to the next (LLM call, command, events).
      const actions = await events
        .find({ conversation_id: conv.id, kind: 'ActionEvent' })
        .sort({ seq: 1 })
        .project({ timestamp: 1 })
        .toArray();
      const times = actions.map((a) => new Date(a.timestamp as string | Date).getTime());
      const gaps = times.slice(1).map((t, i) => t - times[i]!);
      return {
        conv,
        finishedMs,
        deliveredMs,
        lagMs: deliveredMs - finishedMs,
        events: written.events,
        requests: llm.requests.slice(first).map((r) => r.body),
        early: median(gaps.slice(0, 20)),
        late: median(gaps.slice(-20)),
      };
    };

    const rawRun = async (requests: unknown[], conversationId: string) => {
      llm.load(script());
      const t0 = now();
      for (let i = 0; i < requests.length; i++) {
        const r = await fetch(`${llm.url}/chat/completions`, {
          method: 'POST',
          headers: { 'Content-Type': 'application/json' },
          body: JSON.stringify(requests[i]),
        });
        await r.json();
        if (i < STEPS)
          await rt('POST', '/api/bash/execute_bash_command', { command: COMMAND, cwd: workspace, timeout: 120 });
      }
      const workMs = now() - t0;
      // The same events, straight to ingest under a new conversation id.
      const lines = await runtimeLog(conversationId);
      const target = await conversations.create({ userId: user.id, sessionApiKey: sessionKey });
      const t1 = now();
      for (let i = 0; i < lines.length; i += 100) {
        const r = await fetch(`${base}/api/v1/webhooks/events/${target.id}`, {
          method: 'POST',
          headers: { 'Content-Type': 'application/json', 'X-Session-API-Key': sessionKey },
          body: `[${lines.slice(i, i + 100).join(',')}]`,
        });
        if (r.status !== 200) throw new Error(`ingest answered ${r.status}: ${await r.text()}`);
      }
      return { workMs, ingestMs: now() - t1 };
    };

    progress('warming up');
    const warm = await agentRun();
    await rawRun(warm.requests, warm.conv.id);
    const agent: Awaited<ReturnType<typeof agentRun>>[] = [];
    const raw: Awaited<ReturnType<typeof rawRun>>[] = [];
    for (let i = 0; i < RUNS; i++) {
      const a = await agentRun();
      agent.push(a);
      raw.push(await rawRun(a.requests, a.conv.id));
      progress(`run ${i + 1}/${RUNS}: agent ${a.finishedMs.toFixed(0)} ms, raw ${raw.at(-1)!.workMs.toFixed(0)} ms`);
    }
    const rss = fs.readFileSync(`/proc/${children[1]!.pid}/status`, 'utf8').match(/VmRSS:\s+(\d+)/)?.[1];

    const m = median;
    const f = (ms: number) => `${ms.toFixed(0)} ms`;
    const per = (ms: number) => `${(ms / (STEPS + 1)).toFixed(2)} ms`;
    const agentMs = m(agent.map((a) => a.finishedMs));
    const rawMs = m(raw.map((r) => r.workMs));
    const rows = [
      ['what', 'total', 'per step'],
      [`agent: POST conversation -> finished (${STEPS} steps + finish)`, f(agentMs), per(agentMs)],
      ['raw: the same LLM requests replayed + the same commands', f(rawMs), per(rawMs)],
      [
        'agent: steps 2-21 vs the last 20 (median gap between actions)',
        `${m(agent.map((a) => a.early)).toFixed(1)} / ${m(agent.map((a) => a.late)).toFixed(1)} ms`,
        '',
      ],
      [
        `agent: ${agent[0]!.events} events written -> all in the log, after finished`,
        f(m(agent.map((a) => a.lagMs))),
        '',
      ],
      ['raw: the same events POSTed to ingest, batches of 100', f(m(raw.map((r) => r.ingestMs))), ''],
      ['runtime resident memory after the runs', `${(Number(rss) / 1024).toFixed(0)} MiB`, ''],
    ];
    printTable(`Agent runtime (${RUNTIME}), ${RUNS} runs (medians), scripted LLM on loopback, FerretDB`, rows);
    console.log(
      `\nthe agent adds ${((agentMs / rawMs - 1) * 100).toFixed(0)}% over the raw LLM and command calls (events, view, tools, outbox)`,
    );
  } finally {
    await llm.close();
    await database.close();
    await servers.stop(children);
  }
}

runBench(main);
