/**
 * Start benchmark (on demand, never part of the tests):
 * `npm run bench:starts [-- --starts 200 --single 15 --follow workflow|record --runtime built-in|openhands --workers 1]`.
 *
 * --workers runs that many worker processes, each as a host of its own (WORKER_HOST, DATA_DIR, its
 * runtimes on 127.0.0.<2 + i>, an address the others reach): the sandbox lives on one of them, whose
 * host queue takes its calls; the start-task workflows and their steps spread over all.
 *
 * --runtime picks the sandbox's agent server: the built-in runtime, or the real OpenHands agent server
 * (installed first when missing, as `npm start` does). The raw steps go through the same runtime client.
 *
 * --follow sets START_STREAM_FOLLOW on the api: stream-start learns each status from the start-task
 * workflow's Update (workflow, the default) or by reading the stored record (record).
 *
 * Starts FerretDB, the Temporal dev server, the api and the workers as processes, and one sandbox that
 * the starts use (no repository: each start makes an empty git workspace), then:
 *   - concurrency: N stream-starts at once, each read to its end: all READY? starts per second, p50/p99
 *     from the request to READY, and the CPU seconds each process used in that phase (bench/cpu.ts);
 *   - one start at a time, alternating with the same steps made raw (the runtime's bash calls the steps
 *     make, the conversation created in the runtime, and the status and record writes with the driver):
 *     the orchestration share of one start (goal <= 20% over the raw steps).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import {
  cloneCommand,
  HOOK_COMMAND,
  SETUP_SCRIPT,
  SKILLS_DIR,
  skillFilesCommand,
} from '../activities/repository-steps';
import { SecretBox } from '../src/auth/secret-box';
import { START_TASK_STATUSES } from '../src/schemas/app-conversations';
import type { SandboxView } from '../src/schemas/sandboxes';
import { runtimeClient } from '../src/sandboxes/runtime-clients';
import { ensureAgentServer } from '../scripts/servers/agent-server';
import { freePort } from '../src/process/net';
import { createServices, createStores } from '../src/composition';
import { openDatabase } from '../src/store/mongo';
import { processTree as treeOf, signalAll } from '../src/process/process-tree';
import {
  cpuLine,
  cpuRows,
  cpuSnapshot,
  detachedChildren,
  processGroup,
  processTree,
  processTrees,
  readProcs,
  type CpuScope,
} from './cpu';
import { AgentControlClient } from '../src/client';
import { arg, median, pct, printTable, progress, runBench, wordArg } from './report';
import { printHistory, startBenchServers } from './servers';
import { startTaskWorkflowId } from '../src/temporal/shared';
import { setTimeout as sleep } from 'node:timers/promises';

const STARTS = arg('starts', 200);
const SINGLE = arg('single', 15);
const FOLLOW = wordArg('follow', ['workflow', 'record'] as const, 'workflow');
const RUNTIME = wordArg('runtime', ['built-in', 'openhands'] as const, 'built-in');
const WORKERS = arg('workers', 1);
/** The bench is one user: its N starts at once are the load, so its start quotas (under way, not ended, conversations kept) are lifted, the first unless --max-starts sets one (each start still passes its line). */
const CONCURRENT_STARTS = String(arg('max-starts', 0));
const dist = (...p: string[]) => path.join(__dirname, '..', ...p);
const STATUSES = START_TASK_STATUSES.filter((s) => s !== 'ERROR');

async function main(): Promise<void> {
  const servers = await startBenchServers('starts');
  const secretsKey = SecretBox.generateKey();
  const apiPort = await freePort();
  const base = `http://127.0.0.1:${apiPort}`;
  const agentServer =
    RUNTIME === 'openhands' ? { OPENHANDS_AGENT_SERVER_DIR: (await ensureAgentServer(undefined, progress)).dir } : {};
  const env = servers.serviceEnv({
    API_PORT: String(apiPort),
    SECRETS_KEY: secretsKey,
    SANDBOX_IDLE_TIMEOUT_MS: '0',
    USER_MAX_CONCURRENT_STARTS: CONCURRENT_STARTS,
    USER_MAX_PENDING_STARTS: '0',
    USER_MAX_CONVERSATIONS: '0',
    START_STREAM_FOLLOW: FOLLOW,
    ...agentServer,
  });
  let runtimePids: number[] = [];
  const children: ChildProcess[] = [
    spawn(process.execPath, [dist('src', 'api', 'main.js')], { env, stdio: ['ignore', 'inherit', 'inherit'] }),
    ...Array.from({ length: WORKERS }, (_, i) =>
      spawn(process.execPath, [dist('worker', 'main.js')], {
        env: {
          ...env,
          WORKER_HOST: `bench-${i}`,
          DATA_DIR: path.join(servers.dir, `worker-${i}`),
          ...(WORKERS > 1 ? { SANDBOX_PROCESS_HOST: `127.0.0.${2 + i}` } : {}),
        },
        stdio: ['ignore', 'inherit', 'inherit'],
      }),
    ),
  ];
  const database = openDatabase(servers.mongoUri, 'bench');
  try {
    for (let i = 0; i < 300; i++) {
      if ((await fetch(`${base}/ready`).catch(() => null))?.status === 200) break;
      await sleep(100);
    }
    const box = new SecretBox(secretsKey);
    const stores = createStores(database.db, { box });
    const orgs = createServices(stores, { box }).organizations;
    const user = await orgs.createUser('bench@example.com'); // with a personal organization, as the service makes them
    const { raw: key } = await stores.apiKeys.create(user.id, 'bench');
    const headers = { 'X-Access-Token': key, 'Content-Type': 'application/json' };
    const api = async <T>(method: string, p: string, body?: unknown): Promise<T> => {
      const r = await fetch(base + p, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
      if (!r.ok) throw new Error(`${method} ${p} answered ${r.status}: ${await r.text()}`);
      return r.json() as Promise<T>;
    };
    const me = await api<{ current_org_id: string }>('GET', '/api/v1/users/me');
    await api('PATCH', `/api/organizations/${me.current_org_id}`, {
      agent_settings: { agent_kind: 'platform', llm: { model: 'bench', base_url: 'http://127.0.0.1:9/v1' } },
    });
    let sandbox = await api<SandboxView>('POST', '/api/v1/sandboxes', {
      sandbox_spec_id: RUNTIME === 'openhands' ? 'local-process-openhands' : 'local-process',
    });
    while (sandbox.status !== 'RUNNING') {
      await sleep(100);
      [sandbox] = await api<[SandboxView]>('GET', `/api/v1/sandboxes?id=${sandbox.id}`);
    }
    // The runtime as the start's steps reach it: the same client, whichever agent server it is.
    const runtime = runtimeClient((await stores.sandboxes.get(sandbox.id))!, box);
    const bash = (command: string, cwd: string, timeoutS: number) => runtime.bash(command, { cwd, timeoutS });

    const client = new AgentControlClient({ baseUrl: base, apiKey: key });
    /**
     * One stream-start read to its end through the typed client: its statuses, the time to READY, and for
     * each status the delay from its write (its updated_at) to its arrival at the client.
     */
    const serviceStart = async () => {
      const t0 = performance.now();
      const tasks: { id: string; status: string; detail?: string | null }[] = [];
      const delays: number[] = [];
      for await (const task of client.startConversation({ sandbox_id: sandbox.id })) {
        delays.push(Date.now() - Date.parse(task.updated_at));
        tasks.push(task);
      }
      return {
        id: tasks[0]?.id,
        ms: performance.now() - t0,
        statuses: tasks.map((s) => s.status),
        detail: tasks.at(-1)?.detail,
        delays,
      };
    };

    /** The same steps made raw: the runtime calls, the status writes and records with the driver. */
    const rawStart = async () => {
      const id = randomUUID();
      const tasks = database.db.collection<{ _id: string; status?: string; created_at?: Date }>('bench_start_tasks');
      const t0 = performance.now();
      await tasks.insertOne({ _id: id, status: 'WORKING', created_at: new Date() });
      const status = (s: string) => tasks.updateOne({ _id: id }, { $set: { status: s, updated_at: new Date() } });
      await status('WAITING_FOR_SANDBOX');
      await database.db.collection<{ _id: string }>('sandboxes').findOne({ _id: sandbox.id });
      await status('PREPARING_REPOSITORY');
      await bash(cloneCommand('project', null, undefined), '.', 60);
      await status('RUNNING_SETUP_SCRIPT');
      await bash(`test -f ${SETUP_SCRIPT}`, 'project', 30);
      await status('SETTING_UP_GIT_HOOKS');
      await bash(HOOK_COMMAND, 'project', 60);
      await status('SETTING_UP_SKILLS');
      await bash(skillFilesCommand(SKILLS_DIR), 'project', 60);
      await status('STARTING_CONVERSATION');
      await database.db
        .collection<{ _id: string; created_at: Date }>('bench_conversations')
        .insertOne({ _id: id, created_at: new Date() });
      await database.db
        .collection<{ _id: string; created_at: Date }>('bench_app_conversations')
        .insertOne({ _id: id, created_at: new Date() });
      const created = await runtime.createConversation(
        {
          id,
          llm: {
            model: 'bench',
            base_url: 'http://127.0.0.1:9/v1',
            api_key: null,
            temperature: null,
            top_p: null,
            max_output_tokens: null,
            stream: false,
            log_completions: false,
          },
          systemMessageSuffix: null,
          workingDir: 'project',
          initialMessage: null,
          maxIterations: 100,
          confirmationMode: false,
          secrets: {},
          skills: [],
        },
        60_000,
      );
      if (!created.created) throw new Error(`the runtime did not create the conversation: ${JSON.stringify(created)}`);
      await status('READY');
      return performance.now() - t0;
    };

    progress('warming up');
    for (let i = 0; i < 3; i++) {
      await serviceStart();
      await rawStart();
    }

    // CPU by process over the concurrent phase. The api and the worker run in this process's group:
    // each counted as its process tree. The runtime is the worker's detached child (the process
    // provider's spawn) and its commands start sessions of their own: its tree, out of the worker's.
    // The servers were spawned detached, each leading its process group: FerretDB and Temporal are one
    // process each, counted as their group. PostgreSQL is not: each process the postmaster forks (a
    // backend per connection, the checkpointer, the WAL writer, ...) calls setsid() first
    // (InitPostmasterChild), so the postmaster's group holds the postmaster alone: counted as its tree.
    const apiPid = children[0]!.pid!;
    const workerPids = children.slice(1).map((c) => c.pid!);
    const runtimesOf = () => workerPids.flatMap((pid) => detachedChildren(readProcs(), pid));
    runtimePids = runtimesOf();
    if (runtimePids.length === 0)
      throw new Error(`no runtime process below the workers (pids ${workerPids.join(', ')})`);
    const cmdline = (pid: number) => fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ').trim();
    for (const pid of runtimePids) progress(`runtime: pid ${pid}, ${cmdline(pid)}`);
    const serverName: Record<string, string> = { postgres: 'PostgreSQL', ferretdb: 'FerretDB', temporal: 'Temporal' };
    const cpuScopes: CpuScope[] = [
      processTree('api', apiPid),
      ...workerPids.map((pid, i) =>
        processTree(
          WORKERS > 1 ? `worker ${i}` : 'worker',
          pid,
          (procs) => detachedChildren(procs, pid),
          `pid ${pid} and descendants but the runtime`,
        ),
      ),
      processTrees('sandbox runtime', runtimePids),
      ...servers.processes.map((p) =>
        (p.name === 'postgres' ? processTree : processGroup)(serverName[p.name] ?? p.name, p.pid),
      ),
    ];
    const idle0 = cpuSnapshot(cpuScopes);
    await sleep(1000);
    const cpuBefore = cpuSnapshot(cpuScopes);

    progress(`${STARTS} concurrent starts`);
    const t0 = performance.now();
    let done = 0;
    const ticker = setInterval(() => progress(`${done}/${STARTS} streams ended`), 30_000);
    const all = await Promise.all(Array.from({ length: STARTS }, () => serviceStart().finally(() => done++))).finally(
      () => clearInterval(ticker),
    );
    const wallMs = performance.now() - t0;
    const cpuAfter = cpuSnapshot(cpuScopes);
    await sleep(1000);
    const tail = cpuSnapshot(cpuScopes);
    const runtimesAfter = runtimesOf();
    if (runtimesAfter.join() !== runtimePids.join())
      progress(`the runtime processes changed during the phase: ${runtimePids.join()} -> ${runtimesAfter.join()}`);
    const ready = all.filter((s) => s.statuses.join() === STATUSES.join()).length;
    const failed = all.filter((s) => s.statuses.at(-1) !== 'READY');
    if (failed.length > 0) progress(`not READY: ${failed.length}, e.g. ${JSON.stringify(failed[0])}`);
    const tasksStored = await database.db.collection('start_tasks').countDocuments({ status: 'READY' });

    progress(`${SINGLE} single starts, alternating with the raw steps`);
    const single: number[] = [];
    const singleDelays: number[] = [];
    const raw: number[] = [];
    let lastId = '';
    for (let i = 0; i < SINGLE; i++) {
      const s = await serviceStart();
      single.push(s.ms);
      singleDelays.push(...s.delays);
      lastId = s.id ?? lastId;
      raw.push(await rawStart());
    }

    const f = (ms: number) => `${ms.toFixed(0)} ms`;
    const lat = all.map((s) => s.ms);
    const delays = all.flatMap((s) => s.delays);
    printTable(
      `Starts on the ${RUNTIME} runtime, ${WORKERS === 1 ? 'one worker' : `${WORKERS} workers`}, one shared sandbox, FerretDB + ${servers.temporalName}; stream-start follows the ${FOLLOW}`,
      [
        ['what', 'value'],
        [
          `${STARTS} concurrent stream-starts: READY with every status in order`,
          `${ready} / ${STARTS} (lost: ${STARTS - ready})`,
        ],
        ['start tasks stored READY', String(tasksStored)],
        ['starts per second', (STARTS / (wallMs / 1000)).toFixed(1)],
        ['stream-start -> READY, p50 / p99 (concurrent)', `${f(pct(lat, 50))} / ${f(pct(lat, 99))}`],
        ['a status written -> at the client, p50 / p99 (concurrent)', `${f(pct(delays, 50))} / ${f(pct(delays, 99))}`],
        [
          'a status written -> at the client, p50 / p99 (one start alone)',
          `${f(pct(singleDelays, 50))} / ${f(pct(singleDelays, 99))}`,
        ],
        [`one start alone, median of ${SINGLE}`, f(median(single))],
        ['the same steps made raw (runtime calls + driver writes), median', f(median(raw))],
      ],
    );
    printTable(
      `CPU by process over the ${STARTS} concurrent stream-starts (${(wallMs / 1000).toFixed(1)} s wall, ${(STARTS / (wallMs / 1000)).toFixed(1)} starts/s)`,
      cpuRows(cpuScopes, cpuBefore, cpuAfter, STARTS),
    );
    console.log(`\nthe 1 s before the phase (idle): ${cpuLine(cpuScopes, idle0, cpuBefore)}`);
    console.log(`the 1 s after the last stream ended (not in the table): ${cpuLine(cpuScopes, cpuAfter, tail)}`);
    await printHistory(servers.temporalAddress, startTaskWorkflowId(lastId));
    console.log(
      `\norchestration adds ${((median(single) / median(raw) - 1) * 100).toFixed(0)}% over the raw steps (${f(median(single) - median(raw))}); goal <= 20%`,
    );
  } finally {
    await database.close();
    await servers.stop(children);
    // The sandbox's runtime outlives the worker (a detached process, as the provider makes it): the
    // OpenHands agent server does not notice its service is gone, so it goes here.
    for (const pid of runtimePids) signalAll(treeOf(pid), 'SIGKILL');
  }
}

runBench(main);
