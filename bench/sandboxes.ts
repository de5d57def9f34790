/**
 * Sandbox start benchmark (on demand, never part of the tests): `npm run bench:sandboxes [-- --runs 20 --limits on]`.
 *
 * Starts FerretDB, the Temporal dev server, the api and the worker as separate processes in a temporary
 * directory, then measures, alternating the two so drift hits both alike:
 *   - direct: spawn the runtime (dist/src/runtime/main.js) and poll its /alive until it answers;
 *   - service: POST /api/v1/sandboxes and poll GET /api/v1/sandboxes?id= until RUNNING
 *     (record, sandbox workflow, provider activity, /alive wait, status write), then DELETE it.
 * Prints median, p90 and min of each and the orchestration share (service / direct - 1).
 *
 * Then, per provider (process, and docker on a Docker engine: the developer's, or one the project runs as
 * root, see scripts/docker/engine.ts; `--docker 0` leaves it out), the lifecycle through the api: start ->
 * RUNNING, pause (POST answered PAUSED), resume (POST answered RUNNING), beside the same work done on the
 * provider's own (a container created and started with the engine API until /alive answers; docker
 * pause; docker unpause until /alive answers).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { SecretBox } from '../src/auth/secret-box';
import { sandboxWorkflowId } from '../src/temporal/shared';
import { freePort } from '../src/process/net';
import { arg, median, pct, printTable, progress, runBench, wordArg } from './report';
import { printHistory, startBenchServers } from './servers';
import { createStores } from '../src/composition';
import { openDatabase } from '../src/store/mongo';
import { ensureDockerEngine, type DockerEngine } from '../scripts/docker/engine';
import { buildProjectImages, ensureBaseImage } from '../scripts/docker/images';
import { dockerFromHost } from '../activities/sandbox-providers/docker-provider';
import type Docker from 'dockerode';
import { setTimeout as sleep } from 'node:timers/promises';

const RUNS = arg('runs', 20);
const DOCKER = arg('docker', 1) !== 0;
/** `--limits on`: process sandboxes in a cgroup each (SANDBOX_CGROUPS=on) on a file system of their own (SANDBOX_DISKS=on), as root; `off` (the default): neither, as the other benches run them. */
const LIMITS = wordArg('limits', ['off', 'on'] as const, 'off');
const POLL_MS = 10;

const dist = (...p: string[]) => path.join(__dirname, '..', ...p);
async function directStart(dir: string): Promise<number> {
  const port = await freePort();
  const workspace = fs.mkdtempSync(path.join(dir, 'direct-'));
  const t0 = performance.now();
  const child = spawn(process.execPath, [dist('src', 'runtime', 'main.js')], {
    env: {
      PATH: process.env.PATH,
      RUNTIME_PORT: String(port),
      SESSION_API_KEY: 'bench-session-key-0123456789',
      RUNTIME_WORKING_DIR: workspace,
    },
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
    const [s] = (await (await fetch(`${base}/api/v1/sandboxes?id=${id}`, { headers })).json()) as {
      status: string;
      status_detail: string;
    }[];
    if (s!.status === 'RUNNING') {
      const ms = performance.now() - t0;
      await fetch(`${base}/api/v1/sandboxes/${id}`, { method: 'DELETE', headers });
      return ms;
    }
    if (s!.status === 'ERROR') throw new Error(`sandbox ${id} failed: ${s!.status_detail}`);
    await sleep(POLL_MS);
  }
}

interface Lifecycle {
  start: number[];
  pause: number[];
  resume: number[];
}

async function untilAlive(url: string): Promise<void> {
  for (;;) {
    if (
      await fetch(`${url}/alive`, { signal: AbortSignal.timeout(1000) }).then(
        (r) => r.ok,
        () => false,
      )
    )
      return;
    await sleep(POLL_MS);
  }
}

/** Start, pause, resume and delete of one sandbox of `specId` through the api, each timed. */
async function serviceLifecycle(base: string, key: string, specId: string, into: Lifecycle): Promise<void> {
  const headers = { 'X-Access-Token': key, 'Content-Type': 'application/json' };
  type Sandbox = { id: string; status: string; status_detail: string | null };
  const call = async <T = Sandbox>(method: string, p: string, body?: string): Promise<T> => {
    const r = await fetch(`${base}${p}`, { method, headers, body });
    if (r.status !== 200) throw new Error(`${method} ${p} answered ${r.status}: ${await r.text()}`);
    return (await r.json()) as T;
  };
  let t0 = performance.now();
  const { id } = await call('POST', '/api/v1/sandboxes', JSON.stringify({ sandbox_spec_id: specId }));
  for (;;) {
    const [s] = await call<Sandbox[]>('GET', `/api/v1/sandboxes?id=${id}`);
    if (!s) throw new Error(`sandbox ${id} is gone`);
    if (s.status === 'RUNNING') break;
    if (s.status === 'ERROR') throw new Error(`sandbox ${id} failed: ${s.status_detail}`);
    await sleep(POLL_MS);
  }
  into.start.push(performance.now() - t0);
  t0 = performance.now();
  const paused = await call('POST', `/api/v1/sandboxes/${id}/pause`);
  if (paused.status !== 'PAUSED') throw new Error(`pause answered ${paused.status}`);
  into.pause.push(performance.now() - t0);
  t0 = performance.now();
  const resumed = await call('POST', `/api/v1/sandboxes/${id}/resume`);
  if (resumed.status !== 'RUNNING') throw new Error(`resume answered ${resumed.status}`);
  into.resume.push(performance.now() - t0);
  await call('DELETE', `/api/v1/sandboxes/${id}`);
}

/** The same lifecycle straight on the engine: create and start until /alive, pause, unpause until /alive. */
async function engineLifecycle(docker: Docker, image: string, n: number, into: Lifecycle): Promise<void> {
  const name = `agent-control-bench-direct-${process.pid}-${n}`;
  let t0 = performance.now();
  const c = await docker.createContainer({
    name,
    Image: image,
    Env: [
      'SESSION_API_KEY=bench-session-key-0123456789',
      'RUNTIME_HOST=0.0.0.0',
      'RUNTIME_PORT=8000',
      'RUNTIME_WORKING_DIR=/workspace',
    ],
    ExposedPorts: { '8000/tcp': {} },
    HostConfig: { Init: true, PortBindings: { '8000/tcp': [{ HostIp: '127.0.0.1', HostPort: '' }] } },
  });
  try {
    await c.start();
    const port = (await c.inspect()).NetworkSettings.Ports['8000/tcp']![0]!.HostPort;
    const url = `http://127.0.0.1:${port}`;
    await untilAlive(url);
    into.start.push(performance.now() - t0);
    t0 = performance.now();
    await c.pause();
    into.pause.push(performance.now() - t0);
    t0 = performance.now();
    await c.unpause();
    await untilAlive(url);
    into.resume.push(performance.now() - t0);
  } finally {
    await c.remove({ force: true });
  }
}

function lifecycleRows(label: string, l: Lifecycle, direct: Lifecycle): string[][] {
  const f = (ms: number) => `${ms.toFixed(0)} ms`;
  return (['start', 'pause', 'resume'] as const).map((step) => [
    label,
    step === 'start' ? 'start -> RUNNING' : step,
    f(median(l[step])),
    f(pct(l[step], 90)),
    f(median(direct[step])),
    `${(median(l[step]) / median(direct[step])).toFixed(2)}x`,
  ]);
}

/** Where the last service start spent its time, from its workflow history. */
async function main(): Promise<void> {
  const servers = await startBenchServers('sandboxes');
  const dir = servers.dir;
  const apiPort = await freePort();
  let engine: DockerEngine | null = null;
  let runtimeImage = '';
  if (DOCKER) {
    progress('Docker engine and the runtime image');
    engine = await ensureDockerEngine({ say: progress });
    runtimeImage = (await buildProjectImages(engine.host, await ensureBaseImage(engine.host, progress), progress))
      .runtime;
  }
  const specsFile = path.join(dir, 'specs.json');
  fs.writeFileSync(
    specsFile,
    JSON.stringify(DOCKER ? [{ id: 'docker-runtime', provider: 'docker', image: runtimeImage }] : []),
  );
  const env = servers.serviceEnv({
    API_PORT: String(apiPort),
    SECRETS_KEY: SecretBox.generateKey(),
    SANDBOX_IDLE_TIMEOUT_MS: '0',
    SANDBOX_SPECS_FILE: specsFile,
    ...(engine ? { DOCKER_HOST: engine.host } : {}),
    ...(LIMITS === 'on' ? { SANDBOX_CGROUPS: 'on', SANDBOX_DISKS: 'on' } : { SANDBOX_CGROUPS: 'off' }),
  });
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
    printTable(
      `Sandbox start, ${RUNS} runs each (poll every ${POLL_MS} ms; limits ${LIMITS === 'on' ? 'on: a cgroup and a file system each' : 'off'})`,
      rows,
    );
    const share = median(service) / median(direct) - 1;
    console.log(`\nlast service start: POST answered in ${lastPostMs.toFixed(0)} ms`);
    await printHistory(servers.temporalAddress, sandboxWorkflowId(lastSandboxId), 16);
    console.log(
      `\norchestration adds ${(share * 100).toFixed(0)}% to the median (${f(median(service) - median(direct))}); goal <= 20%`,
    );

    const empty = (): Lifecycle => ({ start: [], pause: [], resume: [] });
    const processRuns = empty();
    const processDirect: Lifecycle = { start: direct, pause: [], resume: [] };
    progress('process provider lifecycle');
    for (let i = 0; i < RUNS; i++) await serviceLifecycle(base, key, 'local-process', processRuns);
    const lifecycle = [['provider', 'step', 'median', 'p90', 'direct median', 'ratio']];
    // A process's pause and resume are a signal each: no direct figure worth a column.
    processDirect.pause = processRuns.pause.map(() => NaN);
    processDirect.resume = processRuns.resume.map(() => NaN);
    lifecycle.push(
      ...lifecycleRows('process', processRuns, processDirect).map((r, i) =>
        i === 0 ? r : [...r.slice(0, 4), '-', '-'],
      ),
    );
    if (engine) {
      const docker = dockerFromHost(engine.host);
      const dockerRuns = empty();
      const dockerDirect = empty();
      progress('docker provider lifecycle');
      for (let i = 0; i < 2; i++) {
        await engineLifecycle(docker, runtimeImage, -1 - i, empty());
        await serviceLifecycle(base, key, 'docker-runtime', empty());
      }
      for (let i = 0; i < RUNS; i++) {
        await engineLifecycle(docker, runtimeImage, i, dockerDirect);
        await serviceLifecycle(base, key, 'docker-runtime', dockerRuns);
        if ((i + 1) % 5 === 0) progress(`docker ${i + 1}/${RUNS}`);
      }
      lifecycle.push(...lifecycleRows('docker', dockerRuns, dockerDirect));
    }
    printTable(
      `Sandbox lifecycle through the api, ${RUNS} runs per provider (direct: the provider's own work, no service)`,
      lifecycle,
    );
  } finally {
    await database.close();
    await servers.stop(children);
    await engine?.stop();
  }
}

runBench(main);
