/**
 * The sandbox lifecycle bench:sandboxes times per provider: start -> RUNNING, pause and resume through
 * the api, beside the same work done on the provider's own (straight on the Docker engine).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type Docker from 'dockerode';
import { progress } from './report';
import { POLL_MS, RUNS } from './sandboxes-options';
import { dockerFromHost } from '../activities/sandbox-providers/docker-provider';
import type { DockerEngine } from '../scripts/docker/engine';

/** The times in ms of each step, run by run. */
export interface Lifecycle {
  start: number[];
  pause: number[];
  resume: number[];
}

const empty = (): Lifecycle => ({ start: [], pause: [], resume: [] });

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

/** One provider's lifecycle through the api, and the same work on the provider's own. */
export interface ProviderLifecycle {
  runs: Lifecycle;
  direct: Lifecycle;
}

/**
 * `RUNS` lifecycles of a process sandbox (its direct start: the runtime spawned directly, `directStarts`;
 * a process's pause and resume have no direct figure), then with an engine two untimed rounds and `RUNS`
 * timed ones of a docker sandbox, each beside the same work straight on the engine.
 */
export async function measureLifecycles(
  base: string,
  key: string,
  directStarts: number[],
  engine: DockerEngine | null,
  runtimeImage: string,
): Promise<{ process: ProviderLifecycle; docker: ProviderLifecycle | null }> {
  const processRuns = empty();
  progress('process provider lifecycle');
  for (let i = 0; i < RUNS; i++) await serviceLifecycle(base, key, 'local-process', processRuns);
  const processDirect: Lifecycle = { start: directStarts, pause: [], resume: [] };
  if (!engine) return { process: { runs: processRuns, direct: processDirect }, docker: null };
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
  return { process: { runs: processRuns, direct: processDirect }, docker: { runs: dockerRuns, direct: dockerDirect } };
}
