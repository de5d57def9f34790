/**
 * Sandbox start benchmark (on demand, never part of the tests): `npm run bench:sandboxes [-- --runs 20]`.
 *
 * Starts FerretDB, the Temporal dev server, the api and the worker as separate processes in a temporary
 * directory, then measures, alternating the two so drift hits both alike:
 *   - direct: spawn the runtime (dist/src/runtime/main.js) and poll its /alive until it answers;
 *   - service: POST /api/v1/sandboxes and poll GET /api/v1/sandboxes?id= until RUNNING
 *     (record, sandbox workflow, provider activity, /alive wait, status write), then DELETE it.
 * Prints median, p90 and min of each and the orchestration share (service / direct - 1).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { SecretBox } from '../src/auth/secret-box';
import { sandboxWorkflowId } from '../src/temporal/shared';
import { freePort } from '../src/process/net';
import { arg, median, pct, printTable, progress, runBench } from './report';
import { printHistory, startBenchServers } from './servers';
import { createStores } from '../src/composition';
import { openDatabase } from '../src/store/mongo';

const RUNS = arg('runs', 20);
const POLL_MS = 10;

const dist = (...p: string[]) => path.join(__dirname, '..', ...p);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function directStart(dir: string): Promise<number> {
  const port = await freePort();
  const workspace = fs.mkdtempSync(path.join(dir, 'direct-'));
  const t0 = performance.now();
  const child = spawn(process.execPath, [dist('src', 'runtime', 'main.js')], {
    env: { PATH: process.env.PATH, RUNTIME_PORT: String(port), SESSION_API_KEY: 'bench-session-key-0123456789', RUNTIME_WORKING_DIR: workspace },
    stdio: 'ignore',
    detached: true,
  });
  try {
    for (;;) {
      const ok = await fetch(`http://127.0.0.1:${port}/alive`).then(
        (r) => r.ok,
        () => false,
      );
      if (ok) return performance.now() - t0;
      await sleep(POLL_MS);
    }
  } finally {
    process.kill(-child.pid!, 'SIGKILL');
  }
}

let lastSandboxId = '';
let lastPostMs = 0;

async function serviceStart(base: string, key: string): Promise<number> {
  const headers = { 'X-Access-Token': key, 'Content-Type': 'application/json' };
  const t0 = performance.now();
  const created = await fetch(`${base}/api/v1/sandboxes`, { method: 'POST', headers, body: '{}' });
  if (created.status !== 200) throw new Error(`POST answered ${created.status}: ${await created.text()}`);
  const { id } = (await created.json()) as { id: string };
  const postMs = performance.now() - t0;
  lastSandboxId = id;
  lastPostMs = postMs;
  for (;;) {
    const [s] = (await (await fetch(`${base}/api/v1/sandboxes?id=${id}`, { headers })).json()) as { status: string; status_detail: string }[];
    if (s!.status === 'RUNNING') {
      const ms = performance.now() - t0;
      await fetch(`${base}/api/v1/sandboxes/${id}`, { method: 'DELETE', headers });
      return ms;
    }
    if (s!.status === 'ERROR') throw new Error(`sandbox ${id} failed: ${s!.status_detail}`);
    await sleep(POLL_MS);
  }
}

/** Where the last service start spent its time, from its workflow history. */
async function main(): Promise<void> {
  const servers = await startBenchServers('sandboxes');
  const dir = servers.dir;
  const apiPort = await freePort();
  const env = servers.serviceEnv({ API_PORT: String(apiPort), SECRETS_KEY: SecretBox.generateKey(), SANDBOX_IDLE_TIMEOUT_MS: '0' });
  const children: ChildProcess[] = [
    spawn(process.execPath, [dist('src', 'api', 'main.js')], { env, stdio: ['ignore', 'inherit', 'inherit'] }),
    spawn(process.execPath, [dist('worker', 'main.js')], { env, stdio: ['ignore', 'inherit', 'inherit'] }),
  ];
  const base = `http://127.0.0.1:${apiPort}`;
  const database = openDatabase(servers.mongoUri, 'bench');
  try {
    for (let i = 0; i < 300; i++) {
      if ((await fetch(`${base}/ready`).catch(() => null))?.status === 200) break;
      await sleep(100);
    }
    const { users, apiKeys } = createStores(database.db);
    const user = await users.create('bench@example.com');
    const { raw: key } = await apiKeys.create(user.id, 'bench');

    progress('warming up');
    for (let i = 0; i < 3; i++) {
      await directStart(dir);
      await serviceStart(base, key);
    }
    const direct: number[] = [];
    const service: number[] = [];
    for (let i = 0; i < RUNS; i++) {
      direct.push(await directStart(dir));
      service.push(await serviceStart(base, key));
      if ((i + 1) % 5 === 0) progress(`${i + 1}/${RUNS}`);
    }
    const f = (ms: number) => `${ms.toFixed(0)} ms`;
    const rows = [
      ['path', 'median', 'p90', 'min'],
      ['spawn runtime directly, poll /alive', f(median(direct)), f(pct(direct, 90)), f(Math.min(...direct))],
      ['POST /api/v1/sandboxes -> RUNNING', f(median(service)), f(pct(service, 90)), f(Math.min(...service))],
    ];
    printTable(`Sandbox start, ${RUNS} runs each (poll every ${POLL_MS} ms)`, rows);
    const share = median(service) / median(direct) - 1;
    console.log(`\nlast service start: POST answered in ${lastPostMs.toFixed(0)} ms`);
    await printHistory(servers.temporalAddress, sandboxWorkflowId(lastSandboxId), 16);
    console.log(`\norchestration adds ${(share * 100).toFixed(0)}% to the median (${f(median(service) - median(direct))}); goal <= 20%`);
  } finally {
    await database.close();
    await servers.stop(children);
  }
}

runBench(main);
