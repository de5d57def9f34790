/**
 * A supervised child process: output to a log file, a readiness probe, a clean stop (SIGTERM, then
 * SIGKILL after a grace period), and a pid file so a launcher killed with -9 does not leave an orphan
 * holding the ports on the next start.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

export interface ChildSpec {
  name: string;
  command: string;
  args: string[];
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  logFile: string;
  /** When set, the pid is written here (the launcher reaps what a killed run left, with reapStale). */
  pidFile?: string;
  /** Resolves true once the process serves; polled until `readyTimeoutMs`. */
  ready: () => Promise<boolean>;
  readyTimeoutMs?: number;
  /** Called as soon as the process exists, before it is ready, so a supervisor can stop it at any time. */
  onSpawn?: (child: Child) => void;
  /** The signal that asks the process to stop cleanly. @default 'SIGTERM' */
  stopSignal?: NodeJS.Signals;
  /** A real round trip once it runs (a query, a health call): the supervisor's liveness probe. */
  alive?: () => Promise<boolean>;
}

export interface Child {
  name: string;
  process: ChildProcess;
  logFile: string;
  /** Resolves with the exit code (or signal) when the process ends. */
  exited: Promise<number | string>;
  stop(graceMs?: number): Promise<void>;
  /** Its liveness probe, when it has one (ChildSpec.alive). */
  alive?: () => Promise<boolean>;
}

function tail(file: string, lines = 25): string {
  try {
    return fs.readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return '(no output)';
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

function readPid(pidFile: string): number | undefined {
  try {
    return Number(fs.readFileSync(pidFile, 'utf8').trim());
  } catch {
    return undefined;
  }
}

/**
 * Stops a process a previous, killed launcher left behind, if the pid still runs the same program, and
 * the rest of its process group (each child was started as a group leader, so helpers it forked without
 * a session of their own go with it). PostgreSQL's backends each run in a session of their own: its
 * postmaster stops them itself on the signal (SIGINT, a fast shutdown), and they exit by themselves
 * when a postmaster killed with -9 is gone.
 */
export async function reapStale(pidFile: string, program: string, signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
  const pid = readPid(pidFile);
  if (pid === undefined || !Number.isInteger(pid) || pid <= 1 || !alive(pid)) return;
  let cmdline: string;
  try {
    cmdline = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8');
  } catch {
    return; // cannot prove it is ours (no /proc): leave it alone
  }
  if (!cmdline.includes(program)) return;
  const group = (sig: NodeJS.Signals) => {
    try {
      process.kill(-pid, sig);
    } catch {
      process.kill(pid, sig); // not a group leader after all
    }
  };
  group(signal);
  for (let i = 0; i < 50 && alive(pid); i++) await sleep(100);
  if (alive(pid)) group('SIGKILL');
}

export async function startChild(spec: ChildSpec): Promise<Child> {
  fs.mkdirSync(path.dirname(spec.logFile), { recursive: true });
  const out = fs.openSync(spec.logFile, 'a');
  const child = spawn(spec.command, spec.args, {
    cwd: spec.cwd,
    env: spec.env ?? process.env,
    stdio: ['ignore', out, out],
    // Its own process group: a terminal's Ctrl-C reaches only the supervisor, which stops children in order.
    detached: true,
  });
  fs.closeSync(out);
  const exited = new Promise<number | string>((resolve) => {
    child.on('exit', (code, signal) => resolve(code ?? signal ?? 'unknown'));
    child.on('error', () => resolve('spawn-error'));
  });
  let spawnError: Error | undefined;
  child.on('error', (e) => (spawnError = e));
  if (spec.pidFile && child.pid) {
    fs.mkdirSync(path.dirname(spec.pidFile), { recursive: true });
    fs.writeFileSync(spec.pidFile, String(child.pid));
  }
  let done = false;
  void exited.then(() => {
    done = true;
    // A restart may already have written its own pid there: remove only this process's.
    if (spec.pidFile && readPid(spec.pidFile) === child.pid) fs.rmSync(spec.pidFile, { force: true });
  });

  const handle: Child = {
    name: spec.name,
    process: child,
    logFile: spec.logFile,
    exited,
    alive: spec.alive,
    async stop(graceMs = 10_000) {
      if (done) return;
      child.kill(spec.stopSignal ?? 'SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
      await exited;
      clearTimeout(timer);
    },
  };

  spec.onSpawn?.(handle);
  const deadline = Date.now() + (spec.readyTimeoutMs ?? 60_000);
  for (;;) {
    if (spawnError) throw new Error(`${spec.name} could not start: ${spawnError.message}`);
    if (done) {
      throw new Error(
        `${spec.name} exited with ${await exited} before it was ready; its log (${spec.logFile}):\n${tail(spec.logFile)}`,
      );
    }
    if (await spec.ready().catch(() => false)) return handle;
    if (Date.now() > deadline) {
      await handle.stop(2000);
      throw new Error(
        `${spec.name} was not ready within ${spec.readyTimeoutMs ?? 60_000} ms; its log (${spec.logFile}):\n${tail(spec.logFile)}`,
      );
    }
    await sleep(150);
  }
}
