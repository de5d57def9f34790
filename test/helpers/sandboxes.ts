/** Helpers for sandbox tests: start one, wait for a status, read a process's state, call a runtime. */
import fs from 'node:fs';
import { readStat } from '../../src/process/process-tree';
import type { TestApi } from './api';
import { eventually } from './eventually';

/** Polls the sandbox until `done` holds (or fails with the last value seen). */
export function waitForSandbox(
  t: TestApi,
  key: string,
  id: string,
  done: (s: any) => boolean,
  timeoutMs = 30_000,
): Promise<any> {
  return eventually(
    async () => {
      const last = (await t.request('GET', `/api/v1/sandboxes?id=${id}`, { key })).body?.[0];
      if (!last || !done(last))
        throw new Error(
          `sandbox ${id} did not reach the expected state within ${timeoutMs} ms; last seen: ${JSON.stringify(last)}`,
        );
      return last;
    },
    { timeoutMs, intervalMs: 100 },
  );
}

/** The document's paths of the sandbox operations its workflow carries out (pause, resume, delete), with their methods. */
export const SANDBOX_OPERATIONS = [
  ['/api/v1/sandboxes/{id}/pause', 'post'],
  ['/api/v1/sandboxes/{id}/resume', 'post'],
  ['/api/v1/sandboxes/{id}', 'delete'],
] as const;

export const waitForStatus = (t: TestApi, key: string, id: string, status: string, timeoutMs?: number) =>
  waitForSandbox(t, key, id, (s) => s.status === status, timeoutMs);

/** A new sandbox of the key's user (the default spec unless `body` names one), once it is RUNNING. */
export async function runningSandbox(t: TestApi, key: string, body: object = {}, timeoutMs?: number): Promise<any> {
  const created = await t.request('POST', '/api/v1/sandboxes', { key, body });
  return waitForStatus(t, key, created.body.id, 'RUNNING', timeoutMs);
}

/** The pid of the sandbox's runtime, as its record keeps it. */
export async function runtimePid(t: TestApi, sandboxId: string): Promise<number> {
  const record = await t.database.db.collection('sandboxes').findOne({ _id: sandboxId as never });
  return (record!.runtime as { pid: number }).pid;
}

/** GET a runtime route with a short timeout: `null` when nothing answers in time (a stopped process). */
export async function runtimeGet(
  url: string,
  path: string,
  key?: string,
  timeoutMs = 1500,
): Promise<{ status: number; body: any } | null> {
  try {
    const res = await fetch(url + path, {
      headers: key ? { 'X-Session-API-Key': key } : {},
      signal: AbortSignal.timeout(timeoutMs),
    });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : undefined };
  } catch {
    return null;
  }
}

export function agentUrl(sandbox: any): string {
  const u = sandbox.exposed_urls.find((x: any) => x.name === 'AGENT_SERVER');
  if (!u) throw new Error(`no AGENT_SERVER url in ${JSON.stringify(sandbox)}`);
  return u.url;
}

/** Runtime processes whose sandbox directory is under `root` (found through their environment). */
export function runtimesUnder(root: string): number[] {
  const found: number[] = [];
  for (const name of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const dir = fs
        .readFileSync(`/proc/${name}/environ`, 'utf8')
        .split('\0')
        .find((v) => v.startsWith('RUNTIME_SANDBOX_DIR='))
        ?.slice('RUNTIME_SANDBOX_DIR='.length);
      const stat = readStat(Number(name));
      if (dir && (dir === root || dir.startsWith(root + '/')) && stat && stat.state !== 'Z') found.push(Number(name));
    } catch {
      // gone, or not ours
    }
  }
  return found;
}

/**
 * The runtimes themselves under `root`: not the commands they run, which inherit RUNTIME_SANDBOX_DIR
 * (once pids wrap around, a command may have a lower pid than its runtime).
 */
export function runtimeRootsUnder(root: string): number[] {
  const all = runtimesUnder(root);
  // A process that ended since the listing has no parent to read: it is no root.
  return all.filter((pid) => {
    const ppid = readStat(pid)?.ppid;
    return ppid !== undefined && !all.includes(ppid);
  });
}

/**
 * Ends every runtime a test file started under `root`. Paused ones cannot notice that their directory
 * is gone (a stopped process runs no timers), so removing the directory alone would leave them behind.
 */
export function killRuntimesUnder(root: string): void {
  for (const pid of runtimesUnder(root)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
}

/** The mount points below `dir` (a sandbox's disk is one), as this process's mount table lists them. */
export const mountsUnder = (dir: string): string[] =>
  fs
    .readFileSync('/proc/self/mounts', 'utf8')
    .split('\n')
    .map((line) => line.split(' ')[1] ?? '')
    .filter((at) => at.startsWith(`${dir}/`));
