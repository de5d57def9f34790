/**
 * Spawning a process runtime: the environment it gets (of the worker's, a few variables only), and the
 * child started detached on its log, its handle written beside it before anything else runs.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { readStat } from '../../src/process/process-tree';
import { trustedPath } from '../../src/process/trusted-path';
import type { ProcessRuntimeHandle as ProcessHandle } from '../../src/store/runtime-handle';
import type { ProcessIsolation } from './process-isolation';
import { ProviderConfigError, type RuntimeStartRequest } from './provider';

/**
 * Variables a runtime needs from the worker's environment; nothing else (no credentials) is passed on.
 * Not PATH: a runtime gets the fixed, root-owned one (trustedPath), whatever the worker was started with.
 */
const INHERITED = ['HOME', 'LANG', 'TZ', 'TMPDIR', 'LOG_LEVEL'];

/** The fd on which an isolated runtime writes the port it bound (RUNTIME_PORT_FD). */
const PORT_FD = 3;

/** Written beside the runtime as soon as it is spawned: pid, start time, port. */
export const RUNTIME_FILE = 'runtime.json';

/** Where a runtime runs, and whether it reports the port it bound (isolated, the built-in runtime) or is given one. */
export interface RuntimePlace {
  dir: string;
  workspace: string;
  host: string;
  port: number;
  reportsPort: boolean;
}

/** The runtime's environment: the few inherited variables, the spec's, then what the service sets. */
export function runtimeEnv(
  req: RuntimeStartRequest,
  { dir, workspace, host, port, reportsPort }: RuntimePlace,
  isolation: ProcessIsolation | undefined,
): NodeJS.ProcessEnv {
  const inherited = Object.fromEntries(
    INHERITED.flatMap((k) => (process.env[k] === undefined ? [] : [[k, process.env[k]]])),
  );
  return {
    ...inherited,
    PATH: trustedPath(),
    ...req.spec.initial_env,
    RUNTIME_HOST: host,
    RUNTIME_PORT: String(port),
    ...(reportsPort ? { RUNTIME_PORT_FD: String(PORT_FD) } : {}),
    SESSION_API_KEY: req.sessionApiKey,
    RUNTIME_WORKING_DIR: workspace,
    RUNTIME_SANDBOX_DIR: dir,
    CONTROL_PLANE_URL: req.controlPlaneUrl,
    ...isolation?.env(dir),
  };
}

/**
 * Spawns the runtime (`run`: already wrapped in its cgroup and isolation), detached, its output appended
 * to runtime.log, and records its handle in RUNTIME_FILE; with `reportsPort`, also the pipe on which it
 * reports its port. Throws when it cannot run or exits at once.
 */
export async function spawnRuntime(
  run: { command: string; args: string[] },
  env: NodeJS.ProcessEnv,
  { dir, workspace, port, reportsPort }: RuntimePlace,
  spec: { specId: string; command: string | undefined },
): Promise<{ handle: ProcessHandle; portReport: Readable | undefined }> {
  const log = fs.openSync(path.join(dir, 'runtime.log'), 'a', 0o600);
  const child = spawn(run.command, run.args, {
    cwd: workspace,
    env,
    detached: true,
    stdio: ['ignore', log, log, ...(reportsPort ? (['pipe'] as const) : [])],
  });
  fs.closeSync(log);
  const portReport = reportsPort ? (child.stdio[PORT_FD] as Readable) : undefined;
  // Recorded before anything else runs (no await between the fork and the write): a worker killed
  // from here on leaves a file that names the runtime to the next attempt.
  const stat = child.pid === undefined ? null : readStat(child.pid);
  const handle: ProcessHandle | null = stat && {
    provider: 'process',
    pid: child.pid!,
    startTicks: stat.startTicks,
    port,
    dir,
    workspace,
  };
  if (handle) fs.writeFileSync(path.join(dir, RUNTIME_FILE), JSON.stringify(handle), { mode: 0o600 });
  await new Promise<void>((resolve, reject) => {
    child.once('spawn', resolve);
    child.once('error', (e) => {
      portReport?.destroy();
      reject(new ProviderConfigError(`spec ${spec.specId}: cannot run ${spec.command}: ${e.message}`));
    });
  });
  child.unref();
  if (!handle || !readStat(handle.pid)) {
    portReport?.destroy();
    throw new Error(`the runtime process (pid ${child.pid}) exited at once; see ${path.join(dir, 'runtime.log')}`);
  }
  return { handle, portReport };
}
