/**
 * The api and worker processes a benchmark starts from the built tree (dist/) against its servers, and
 * the wait until the api answers /ready.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { startBenchServers } from './servers';

/** The servers of one benchmark run (bench/servers.ts). */
export type BenchServers = Awaited<ReturnType<typeof startBenchServers>>;

/** A path in the built tree, from the folder the built bench runs in (dist/bench). */
export const dist = (...p: string[]): string => path.join(__dirname, '..', ...p);

/** The api (dist/src/api/main.js) with `env`, its output on the bench's own. */
export const spawnApi = (env: NodeJS.ProcessEnv): ChildProcess =>
  spawn(process.execPath, [dist('src', 'api', 'main.js')], { env, stdio: ['ignore', 'inherit', 'inherit'] });

/** A worker (dist/worker/main.js) with `env`, its output on the bench's own. */
export const spawnWorker = (env: NodeJS.ProcessEnv): ChildProcess =>
  spawn(process.execPath, [dist('worker', 'main.js')], { env, stdio: ['ignore', 'inherit', 'inherit'] });

/**
 * Polls the api's /ready every 100 ms until it answers 200, 300 times at most; after that the bench goes
 * on all the same, and its first request says what is wrong.
 */
export async function waitForReady(base: string): Promise<void> {
  for (let i = 0; i < 300; i++) {
    if ((await fetch(`${base}/ready`).catch(() => null))?.status === 200) break;
    await sleep(100);
  }
}
