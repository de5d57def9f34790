/**
 * The sandbox starts bench:sandboxes times, alternating the two so drift hits both alike: the runtime
 * spawned directly until its /alive answers, and a sandbox through the api until RUNNING.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { progress } from './report';
import { POLL_MS, RUNS } from './sandboxes-options';
import { dist } from './service-processes';
import { freePort } from '../src/process/net';

/**
 * Spawns the runtime (dist/src/runtime/main.js) in a workspace of its own and polls its /alive until it
 * answers; the time in ms.
 */
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

/** One service start: its sandbox's id, the time of the POST's answer and the time to RUNNING, in ms. */
export interface ServiceStart {
  id: string;
  postMs: number;
  ms: number;
}

/** POST /api/v1/sandboxes, poll GET /api/v1/sandboxes?id= until RUNNING, then DELETE it. */
async function serviceStart(base: string, key: string): Promise<ServiceStart> {
  const headers = { 'X-Access-Token': key, 'Content-Type': 'application/json' };
  const t0 = performance.now();
  const created = await fetch(`${base}/api/v1/sandboxes`, { method: 'POST', headers, body: '{}' });
  if (created.status !== 200) throw new Error(`POST answered ${created.status}: ${await created.text()}`);
  const { id } = (await created.json()) as { id: string };
  const postMs = performance.now() - t0;
  for (;;) {
    const [s] = (await (await fetch(`${base}/api/v1/sandboxes?id=${id}`, { headers })).json()) as {
      status: string;
      status_detail: string;
    }[];
    if (s!.status === 'RUNNING') {
      const ms = performance.now() - t0;
      await fetch(`${base}/api/v1/sandboxes/${id}`, { method: 'DELETE', headers });
      return { id, postMs, ms };
    }
    if (s!.status === 'ERROR') throw new Error(`sandbox ${id} failed: ${s!.status_detail}`);
    await sleep(POLL_MS);
  }
}

export interface StartRuns {
  /** The times in ms of each way, run by run. */
  direct: number[];
  service: number[];
  /** The last service start, for its workflow history. */
  last: ServiceStart;
}

/** Three untimed rounds, then `RUNS` timed ones, each a direct start and then a service start. */
export async function measureStarts(dir: string, base: string, key: string): Promise<StartRuns> {
  progress('warming up');
  let last: ServiceStart = { id: '', postMs: 0, ms: 0 };
  for (let i = 0; i < 3; i++) {
    await directStart(dir);
    last = await serviceStart(base, key);
  }
  const direct: number[] = [];
  const service: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    direct.push(await directStart(dir));
    last = await serviceStart(base, key);
    service.push(last.ms);
    if ((i + 1) % 5 === 0) progress(`${i + 1}/${RUNS}`);
  }
  return { direct, service, last };
}
