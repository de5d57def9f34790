/**
 * The default provider: the runtime as a child process on a free loopback port, in
 * `<sandboxes dir>/<id>` (on a file system of its own, in a cgroup of its own, where the worker may make
 * them), with its session key in its environment. Pause stops every process of the sandbox (SIGSTOP),
 * resume continues them (SIGCONT), delete kills them and removes the directory. The handle (pid, its start time, port, directory) lives in MongoDB, so any worker, including
 * one started after this one died, finds the process again; the process does not depend on the worker.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { freePort, listenerUids } from '../../src/process/net';
import {
  killUserProcesses,
  processesOfUser,
  processesWithEnv,
  processTree,
  readStat,
  signalAll,
  stopThenKill,
} from '../../src/process/process-tree';
import { readAgentServerEnv, type AgentServerEnv } from '../../src/process/agent-server-env';
import { trustedPath } from '../../src/process/trusted-path';
import { AGENT_SERVER } from '../../src/schemas/sandboxes';
import type { ProcessRuntimeHandle as ProcessHandle, RuntimeHandle } from '../../src/store/runtime-handle';
import { openHandsCommand, openHandsEnv } from './openhands-launch';
import { SandboxCgroups } from './process-cgroups';
import type { SandboxDisks } from './process-disks';
import type { ProcessIsolation } from './process-isolation';
import {
  limitsOf,
  ProviderConfigError,
  wrongHandle,
  type SandboxLimits,
  type RuntimeState,
  type SandboxProvider,
  type StartRequest,
  type StartedRuntime,
} from './provider';
import { setTimeout as sleep } from 'node:timers/promises';

export interface ProcessProviderOptions {
  /** Parent of the sandbox directories (DATA_DIR/sandboxes). */
  sandboxesDir: string;
  /** The built-in runtime's entry point (dist/src/runtime/main.js), run when a spec has no command. */
  runtimeEntry: string;
  host?: string;
  /** Each sandbox as a uid of its own behind a firewall rule (the worker runs as root). */
  isolation?: ProcessIsolation;
  /** The installed OpenHands agent server (OPENHANDS_AGENT_SERVER_DIR), for specs with `runtime: openhands`. */
  agentServerDir?: string;
  /** A cgroup per sandbox with its limits (SANDBOX_CGROUPS); without, a sandbox is limited in nothing. */
  cgroups?: SandboxCgroups;
  /** The limits a spec leaves null (SANDBOX_DEFAULT_*). */
  defaultLimits?: SandboxLimits;
  /** A file system of its disk_mb per sandbox (SANDBOX_DISKS); without, a sandbox may fill the host's disk. */
  disks?: SandboxDisks;
}

/** Freeze, stop, thaw: how many times before falling back to rounds of SIGSTOP. */
const FREEZE_ATTEMPTS = 10;

/**
 * Variables a runtime needs from the worker's environment; nothing else (no credentials) is passed on.
 * Not PATH: a runtime gets the fixed, root-owned one (trustedPath), whatever the worker was started with.
 */
const INHERITED = ['HOME', 'LANG', 'TZ', 'TMPDIR', 'LOG_LEVEL'];

/** The fd on which an isolated runtime writes the port it bound (RUNTIME_PORT_FD). */
const PORT_FD = 3;
const PORT_REPORT_MS = 30_000;
/** How long the OpenHands agent server has to listen (it imports a few hundred modules first). */
const LISTEN_MS = 120_000;

/** Written beside the runtime as soon as it is spawned: pid, start time, port. */
const RUNTIME_FILE = 'runtime.json';

const asProcess = (h: RuntimeHandle): ProcessHandle => (h.provider === 'process' ? h : wrongHandle('process', h));

/** The last lines a runtime wrote, for a status_detail a person can act on. */
function lastWords(logFile: string): string {
  let text: string;
  try {
    const fd = fs.openSync(logFile, 'r');
    const size = fs.fstatSync(fd).size;
    const buf = Buffer.alloc(Math.min(size, 600));
    fs.readSync(fd, buf, 0, buf.length, size - buf.length);
    fs.closeSync(fd);
    text = buf.toString('utf8').trim();
  } catch {
    return '';
  }
  const lines = text.split('\n').slice(-3).join(' | ');
  return lines ? `; its log (${logFile}) ends: ${lines}` : `; its log is ${logFile}`;
}

/**
 * The port an isolated runtime reports on its fd 3: a pipe that only it and this process hold, so no
 * file of the sandbox's (a FIFO, a link, a huge file) stands in between. Bounded in size and time.
 */
function reportedPort(stream: Readable, pid: number, logFile: string): Promise<number> {
  return new Promise((resolve, reject) => {
    let text = '';
    const done = (error: Error | null, port = 0) => {
      clearTimeout(timer);
      clearInterval(alive);
      stream.destroy();
      if (error) reject(error);
      else resolve(port);
    };
    const exited = () => new Error(`the runtime process (pid ${pid}) exited before it listened${lastWords(logFile)}`);
    const timer = setTimeout(
      () =>
        done(
          new Error(
            `the runtime (pid ${pid}) did not report its port within ${PORT_REPORT_MS / 1000} s${lastWords(logFile)}`,
          ),
        ),
      PORT_REPORT_MS,
    );
    const alive = setInterval(() => readStat(pid) || done(exited()), 200);
    stream.on('data', (d: Buffer) => {
      text += d.toString('latin1');
      if (text.length > 5) done(new Error('the runtime reported something that is not a port'));
    });
    stream.on('error', (e) => done(e));
    stream.on('end', () => {
      const port = Number(text);
      if (text === '') done(exited());
      else
        done(
          /^\d{1,5}$/.test(text) && port > 0 && port < 65536
            ? null
            : new Error('the runtime reported something that is not a port'),
          port,
        );
    });
  });
}

/**
 * Waits until the runtime listens on `port` (bounded, while it lives); then every listener there must be
 * its uid's (isolated) or this worker's: a port another sandbox took first is not handed out as its.
 */
async function awaitListener(
  port: number,
  pid: number,
  uid: number | undefined,
  logFile: string,
  progress?: () => void,
): Promise<void> {
  const deadline = Date.now() + LISTEN_MS;
  for (;;) {
    const uids = listenerUids(port);
    if (uids.length > 0) {
      const owner = uid ?? process.getuid?.();
      if (uids.some((u) => u !== owner))
        throw new Error(
          `port ${port} chosen for the runtime (pid ${pid}) is held by another user (uid ${uids.join(', ')})`,
        );
      return;
    }
    const stat = readStat(pid);
    if (!stat || stat.state === 'Z')
      throw new Error(`the runtime process (pid ${pid}) exited before it listened${lastWords(logFile)}`);
    if (Date.now() > deadline)
      throw new Error(
        `the runtime (pid ${pid}) did not listen on port ${port} within ${LISTEN_MS / 1000} s${lastWords(logFile)}`,
      );
    progress?.();
    await sleep(100);
  }
}

export class ProcessProvider implements SandboxProvider {
  readonly name = 'process' as const;
  private readonly host: string;

  constructor(private readonly opts: ProcessProviderOptions) {
    this.host = opts.host ?? '127.0.0.1';
  }

  private dirOf(sandboxId: string): string {
    return path.join(this.opts.sandboxesDir, sandboxId);
  }

  async start(req: StartRequest): Promise<StartedRuntime> {
    const dir = this.dirOf(req.sandboxId);
    const workspace = path.resolve(dir, req.spec.working_dir ?? 'workspace');
    if (workspace !== dir && !workspace.startsWith(dir + path.sep)) {
      throw new ProviderConfigError(
        `spec ${req.spec.id}: working_dir ${req.spec.working_dir} leaves the sandbox directory`,
      );
    }
    const limits = limitsOf(req.spec, this.opts.defaultLimits);
    // Its own file system first: everything of the sandbox is made on it.
    if (this.opts.disks && limits.diskMb) await this.opts.disks.attach(req.sandboxId, dir, limits.diskMb);
    const isolation = this.opts.isolation;
    const uid = isolation ? await isolation.uidFor(req.sandboxId, dir, workspace) : undefined;
    if (!isolation) fs.mkdirSync(workspace, { recursive: true });
    await this.killEarlierRuntime(dir);
    // Isolated, the runtime binds a port the system picks and says which: a free port chosen here could
    // be taken by another sandbox before the runtime binds it, and that sandbox would get its clients.
    // The OpenHands agent server takes its port on the command line: one chosen here, and afterwards it
    // must be its uid's alone (awaitListener), or the start fails and is tried again.
    const openhands = req.spec.runtime === 'openhands' ? await this.agentServer(req.spec, req.progress) : undefined;
    let port = isolation && !openhands ? 0 : await freePort();
    const inherited = Object.fromEntries(
      INHERITED.flatMap((k) => (process.env[k] === undefined ? [] : [[k, process.env[k]]])),
    );
    const env = {
      ...inherited,
      PATH: trustedPath(),
      ...req.spec.initial_env,
      RUNTIME_HOST: this.host,
      RUNTIME_PORT: String(port),
      ...(isolation && !openhands ? { RUNTIME_PORT_FD: String(PORT_FD) } : {}),
      SESSION_API_KEY: req.sessionApiKey,
      RUNTIME_WORKING_DIR: workspace,
      RUNTIME_SANDBOX_DIR: dir,
      CONTROL_PLANE_URL: req.controlPlaneUrl,
      ...isolation?.env(dir),
    };
    const launch = openhands && {
      env: openhands,
      stateDir: path.join(dir, 'conversations'),
      workspace,
      host: this.host,
      port,
      sessionApiKey: req.sessionApiKey,
      controlPlaneUrl: req.controlPlaneUrl,
    };
    if (launch) {
      Object.assign(env, openHandsEnv(launch));
      if (!isolation) fs.mkdirSync(path.join(dir, 'conversations'), { recursive: true, mode: 0o700 });
    }
    const builtIn = launch
      ? openHandsCommand(launch)
      : isolation
        ? Object.values(await isolation.prepare())
        : [process.execPath, this.opts.runtimeEntry];
    const [command, ...args] = req.spec.command ?? builtIn;
    const launched =
      isolation && uid !== undefined ? isolation.launch(uid, dir, command!, args) : { command: command!, args };
    // Into its cgroup before it runs anything (made now, its limits set again on a restart).
    const run = SandboxCgroups.entering(
      this.opts.cgroups?.create(req.sandboxId, limits) ?? [],
      launched.command,
      launched.args,
    );
    const log = fs.openSync(path.join(dir, 'runtime.log'), 'a', 0o600);
    const reports = isolation && !openhands;
    const child = spawn(run.command, run.args, {
      cwd: workspace,
      env,
      detached: true,
      stdio: ['ignore', log, log, ...(reports ? (['pipe'] as const) : [])],
    });
    fs.closeSync(log);
    const portReport = reports ? (child.stdio[PORT_FD] as Readable) : undefined;
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
        reject(new ProviderConfigError(`spec ${req.spec.id}: cannot run ${command}: ${e.message}`));
      });
    });
    child.unref();
    if (!handle || !readStat(handle.pid)) {
      portReport?.destroy();
      throw new Error(`the runtime process (pid ${child.pid}) exited at once; see ${path.join(dir, 'runtime.log')}`);
    }
    if (portReport) {
      port = await reportedPort(portReport, handle.pid, path.join(dir, 'runtime.log'));
      // The port must be one the sandbox's uid listens on: another process of the uid could have written first.
      if (!listenerUids(port).includes(uid!))
        throw new Error(`the runtime (pid ${handle.pid}) reported port ${port}, on which its uid does not listen`);
      handle.port = port;
      fs.writeFileSync(path.join(dir, RUNTIME_FILE), JSON.stringify(handle), { mode: 0o600 });
    }
    if (openhands) await awaitListener(port, handle.pid, uid, path.join(dir, 'runtime.log'), req.progress);
    return {
      handle,
      exposedUrls: [{ name: AGENT_SERVER, url: `http://${this.host}:${port}`, port }],
    };
  }

  /** The installed agent server, as the sandbox's uid may run it. */
  private async agentServer(spec: StartRequest['spec'], progress?: () => void): Promise<AgentServerEnv> {
    const dir = this.opts.agentServerDir;
    const env = dir ? readAgentServerEnv(dir) : null;
    if (!env) {
      throw new ProviderConfigError(
        `spec ${spec.id} runs the OpenHands agent server, which this worker does not have: ` +
          `${dir ? `${dir} holds no installed agent server` : 'OPENHANDS_AGENT_SERVER_DIR is not set'} ` +
          '(`npm start` installs it when a spec needs it; `node dist/scripts/servers/agent-server.js` installs it and prints the directory)',
      );
    }
    return this.opts.isolation ? this.opts.isolation.shareAgentServer(env, progress) : env;
  }

  /**
   * A start that died after spawning (a worker killed mid-start) left a runtime behind: the file
   * written beside it names it, and it is stopped here before another is spawned.
   */
  private async killEarlierRuntime(dir: string): Promise<void> {
    let recorded: number[] | null = null;
    try {
      recorded = this.tree(JSON.parse(fs.readFileSync(path.join(dir, RUNTIME_FILE), 'utf8')) as ProcessHandle);
    } catch {
      // no file, or one cut short
    }
    if (recorded) signalAll(recorded, 'SIGKILL');
    // What the earlier runtime left in the sandbox's cgroup (its commands, a tmux server) would count against the new one's limits.
    if (this.opts.cgroups) return this.killCgroup(path.basename(dir));
    if (recorded) return;
    // No live runtime on file, yet one was spawned here before (its log exists; it is opened before the
    // fork): a worker killed in the instant between the fork and the write, or a file removed by hand,
    // left one that only its environment names. The runtime and what it ran inherit the variable.
    if (fs.existsSync(path.join(dir, 'runtime.log')))
      signalAll(await processesWithEnv('RUNTIME_SANDBOX_DIR', dir), 'SIGKILL');
  }

  /** The pids of the runtime and its descendants, or null when the runtime process is no longer ours. */
  private tree(h: ProcessHandle): number[] | null {
    const stat = readStat(h.pid);
    if (!stat || stat.startTicks !== h.startTicks || stat.state === 'Z' || stat.state === 'X') return null;
    return processTree(h.pid);
  }

  /**
   * Every process of the sandbox: the runtime's tree, and what left it (a daemon, a tmux server): with
   * isolation every process of its uid, without it every process that carries its directory in its
   * environment (best effort: a process may clear its environment).
   */
  private async members(h: ProcessHandle): Promise<number[]> {
    const uid = this.uidOf(h.dir);
    const cgroup = this.opts.cgroups?.members(path.basename(h.dir)) ?? [];
    const more = uid
      ? await processesOfUser(uid)
      : cgroup.length > 0
        ? []
        : await processesWithEnv('RUNTIME_SANDBOX_DIR', h.dir);
    return [...new Set([...(this.tree(h) ?? []), ...cgroup, ...more])];
  }

  private uidOf(dir: string): number | undefined {
    return (this.opts.isolation && fs.statSync(path.join(dir, 'home'), { throwIfNoEntry: false })?.uid) || undefined;
  }

  /**
   * Stops every process of the sandbox. With a cgroup freezer: all frozen at once, each sent SIGSTOP, then
   * thawed (each handles the SIGSTOP before anything else), so nothing forks away. Without: rounds of
   * SIGSTOP until a fresh listing finds them all stopped; if that never happens, all are continued again
   * and the pause fails.
   */
  async pause(handle: RuntimeHandle): Promise<void> {
    const h = asProcess(handle);
    if (!this.tree(h)) throw new Error(`the runtime process (pid ${h.pid}) is gone`);
    const stopped = (pids: number[]) => pids.every((pid) => ['T', 't', 'Z'].includes(readStat(pid)?.state ?? 'X'));
    // A process frozen in the middle of a fork can leave a child that no SIGSTOP reached (it was not in
    // the listing yet): the next freeze finds it, while the ones already stopped stay so. A few attempts.
    for (let attempt = 0; attempt < FREEZE_ATTEMPTS && this.opts.cgroups; attempt++) {
      if (!(await this.opts.cgroups.whileFrozen(path.basename(h.dir), (pids) => signalAll(pids, 'SIGSTOP')))) break;
      // Thawed, each handles its SIGSTOP when next scheduled: done once every one shows stopped.
      for (const deadline = Date.now() + 1000; Date.now() < deadline; await sleep(5)) {
        if (stopped(await this.members(h))) return;
      }
    }
    for (let round = 0; round < 200; round++) {
      const listed = await this.members(h);
      if (stopped(listed)) return;
      signalAll(listed, 'SIGSTOP');
      await sleep(round < 20 ? 2 : 20);
    }
    signalAll(await this.members(h), 'SIGCONT');
    throw new Error(`the processes of sandbox ${path.basename(h.dir)} could not all be stopped`);
  }

  async resume(handle: RuntimeHandle): Promise<void> {
    const h = asProcess(handle);
    if (!this.tree(h)) throw new Error(`the runtime process (pid ${h.pid}) is gone`);
    signalAll(await this.members(h), 'SIGCONT');
  }

  /** Ends every process in the sandbox's cgroup: frozen, killed, thawed (without a freezer, stopped then killed). */
  private async killCgroup(sandboxId: string): Promise<void> {
    const cgroups = this.opts.cgroups!;
    if (await cgroups.whileFrozen(sandboxId, (pids) => signalAll(pids, 'SIGKILL'))) {
      for (
        const deadline = Date.now() + 10_000;
        cgroups.members(sandboxId).some((pid) => readStat(pid)?.state !== 'Z');
      ) {
        if (Date.now() > deadline)
          throw new Error(
            `processes of sandbox ${sandboxId} survive SIGKILL: ${cgroups.members(sandboxId).join(', ')}`,
          );
        await sleep(10);
      }
      return;
    }
    await stopThenKill(() => cgroups.members(sandboxId), `processes of sandbox ${sandboxId}`);
  }

  async delete(sandboxId: string, handle: RuntimeHandle | null): Promise<void> {
    const pids = handle ? this.tree(asProcess(handle)) : null;
    if (pids) {
      signalAll(pids, 'SIGKILL');
      const pid = asProcess(handle!).pid;
      for (let i = 0; i < 100 && readStat(pid) && readStat(pid)!.state !== 'Z'; i++) await sleep(20);
    }
    const dir = this.dirOf(sandboxId);
    const uid = this.uidOf(dir);
    // An isolated sandbox's uid is its own: whatever runs as it (a daemon that left the runtime's tree,
    // one that keeps forking) ends before its files go and before the uid can be someone else's.
    if (uid) await killUserProcesses(uid);
    if (this.opts.cgroups) {
      // Whatever is left in its cgroup (every process it had, with or without a uid of its own), then the cgroup.
      await this.killCgroup(sandboxId);
      await this.opts.cgroups.remove(sandboxId);
    }
    await this.opts.disks?.detach(sandboxId, dir);
    await fs.promises.rm(dir, { recursive: true, force: true });
    this.opts.isolation?.release(sandboxId, uid);
  }

  /** Why a sandbox's processes died, when its memory limit killed some or its disk is full: said in its status_detail. */
  private outOfMemory(h: ProcessHandle): string {
    const id = path.basename(h.dir);
    const kills = this.opts.cgroups?.oomKills(id) ?? 0;
    const disk = this.opts.disks?.usage(h.dir);
    const full =
      disk && disk.usedMb >= disk.sizeMb * 0.99 ? ` with its disk full (${disk.usedMb} of ${disk.sizeMb} MiB)` : '';
    return (
      (kills > 0
        ? ` after reaching its memory limit of ${this.opts.cgroups!.memoryLimitMb(id)} MiB (${kills} process(es) killed by the kernel)`
        : '') + full
    );
  }

  async inspect(handle: RuntimeHandle): Promise<RuntimeState> {
    const h = asProcess(handle);
    const stat = readStat(h.pid);
    if (!stat || stat.startTicks !== h.startTicks || stat.state === 'Z' || stat.state === 'X') {
      const detail = `the runtime process (pid ${h.pid}) is gone${this.outOfMemory(h)}${lastWords(path.join(h.dir, 'runtime.log'))}`;
      // What it left running (its commands, a daemon) ends with it: a sandbox in ERROR uses nothing.
      if (this.opts.cgroups) await this.killCgroup(path.basename(h.dir)).catch(() => undefined);
      return { state: 'missing', detail };
    }
    return stat.state === 'T' ? { state: 'paused' } : { state: 'running' };
  }
}
