/**
 * The default provider: the runtime as a child process on a free loopback port, in
 * `<sandboxes dir>/<id>` (on a file system of its own, in a cgroup of its own, where the worker may make
 * them), with its session key in its environment. Pause stops every process of the sandbox (SIGSTOP),
 * resume continues them (SIGCONT), delete kills them and removes the directory. The handle (pid, its
 * start time, port, directory) lives in MongoDB, so any worker, including one started after this one
 * died, finds the process again; the process does not depend on the worker.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { freePort, listenerUids } from '../../src/process/net';
import { killUserProcesses, readStat, signalAll } from '../../src/process/process-tree';
import { readAgentServerEnv, type AgentServerEnv } from '../../src/process/agent-server-env';
import { AGENT_SERVER, type RuntimeKind } from '../../src/schemas/sandboxes';
import type { ProcessRuntimeHandle as ProcessHandle, RuntimeHandle } from '../../src/store/runtime-handle';
import { openHandsCommand, openHandsEnv } from './openhands-launch';
import { SandboxCgroups } from './process-cgroups';
import type { SandboxDisks } from './process-disks';
import type { ProcessIsolation } from './process-isolation';
import type { SandboxTree } from './sandbox-tree';
import { awaitListener, lastWords, reportedPort } from './process-runtime-readiness';
import { RUNTIME_FILE, runtimeEnv, spawnRuntime, type RuntimePlace } from './process-runtime-spawn';
import { SandboxProcesses } from './process-sandbox-processes';
import {
  limitsOf,
  ProviderConfigError,
  wrongHandle,
  type SandboxLimits,
  type RuntimeState,
  type SandboxProvider,
  type RuntimeStartRequest,
  type StartedRuntime,
} from './provider';
import { setTimeout as sleep } from 'node:timers/promises';

export interface ProcessProviderOptions {
  /** The sandbox directories (SANDBOXES_DIR: DATA_DIR/sandboxes, or outside DATA_DIR when isolated) and those beside them. */
  tree: SandboxTree;
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

const asProcess = (h: RuntimeHandle): ProcessHandle => (h.provider === 'process' ? h : wrongHandle('process', h));

export class ProcessProvider implements SandboxProvider {
  readonly name = 'process' as const;
  private readonly host: string;
  private readonly processes: SandboxProcesses;

  constructor(private readonly opts: ProcessProviderOptions) {
    this.host = opts.host ?? '127.0.0.1';
    this.processes = new SandboxProcesses(opts.isolation, opts.cgroups);
  }

  private dirOf(sandboxId: string): string {
    return path.join(this.opts.tree.path('sandboxes'), sandboxId);
  }

  async start(req: RuntimeStartRequest): Promise<StartedRuntime> {
    const dir = this.dirOf(req.sandboxId);
    const workspace = path.resolve(dir, req.spec.working_dir ?? 'workspace');
    if (workspace !== dir && !workspace.startsWith(dir + path.sep)) {
      throw new ProviderConfigError(
        `spec ${req.spec.id}: working_dir ${req.spec.working_dir} leaves the sandbox directory`,
      );
    }
    const limits = limitsOf(req.spec, this.opts.defaultLimits);
    // The tree above the sandbox with its modes, whichever of the steps below would make a part of it first.
    this.opts.tree.make('sandboxes');
    // Its own file system first: everything of the sandbox is made on it.
    if (this.opts.disks && limits.diskMb) await this.opts.disks.attach(req.sandboxId, dir, limits.diskMb);
    const isolation = this.opts.isolation;
    const uid = isolation ? await isolation.uidFor(req.sandboxId, dir, workspace) : undefined;
    if (!isolation) fs.mkdirSync(workspace, { recursive: true });
    await this.processes.killEarlierRuntime(dir);
    // Isolated, the runtime binds a port the system picks and says which: a free port chosen here could
    // be taken by another sandbox before the runtime binds it, and that sandbox would get its clients.
    // The OpenHands agent server takes its port on the command line: one chosen here, and afterwards it
    // must be its uid's alone (awaitListener), or the start fails and is tried again.
    const openhands = req.spec.runtime === 'openhands' ? await this.agentServer(req.spec, req.progress) : undefined;
    let port = isolation && !openhands ? 0 : await freePort();
    const place: RuntimePlace = { dir, workspace, host: this.host, port, reportsPort: !!isolation && !openhands };
    const env = runtimeEnv(req, place, isolation);
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
    const { handle, portReport } = await spawnRuntime(run, env, place, { specId: req.spec.id, command });
    if (portReport) port = await this.recordReportedPort(handle, portReport, uid!);
    if (openhands) await awaitListener(port, handle.pid, uid, path.join(dir, 'runtime.log'), req.progress);
    return {
      handle,
      exposedUrls: [{ name: AGENT_SERVER, url: `http://${this.host}:${port}`, port }],
    };
  }

  /** The port an isolated runtime reported, once its uid is seen listening there: kept in its handle and file. */
  private async recordReportedPort(handle: ProcessHandle, portReport: Readable, uid: number): Promise<number> {
    const { dir } = handle;
    const port = await reportedPort(portReport, handle.pid, path.join(dir, 'runtime.log'));
    // The port must be one the sandbox's uid listens on: another process of the uid could have written first.
    if (!listenerUids(port).includes(uid))
      throw new Error(`the runtime (pid ${handle.pid}) reported port ${port}, on which its uid does not listen`);
    handle.port = port;
    fs.writeFileSync(path.join(dir, RUNTIME_FILE), JSON.stringify(handle), { mode: 0o600 });
    return port;
  }

  /** Said to tenants (a 409 of the api): no path of this host, only what the operator sets. */
  unrunnable(runtime: RuntimeKind): string | null {
    if (runtime !== 'openhands') return null;
    const dir = this.opts.agentServerDir;
    if (dir && readAgentServerEnv(dir)) return null;
    return (
      'it runs the OpenHands agent server, which this worker does not have installed ' +
      '(its operator sets OPENHANDS_AGENT_SERVER_DIR, or lets `npm start` install it)'
    );
  }

  /** The installed agent server, as the sandbox's uid may run it. */
  private async agentServer(spec: RuntimeStartRequest['spec'], progress?: () => void): Promise<AgentServerEnv> {
    const dir = this.opts.agentServerDir;
    const env = dir ? readAgentServerEnv(dir) : null;
    // The sandbox's status_detail and a resume's 409 carry this to its tenant: the same words, no path.
    if (!env) throw new ProviderConfigError(`spec ${spec.id}: ${this.unrunnable('openhands')}`);
    return this.opts.isolation ? this.opts.isolation.shareAgentServer(env, progress) : env;
  }

  /**
   * Stops every process of the sandbox (SandboxProcesses.stopAll: frozen and stopped together where a
   * cgroup freezer allows, else rounds of SIGSTOP).
   */
  async pause(handle: RuntimeHandle): Promise<void> {
    const h = asProcess(handle);
    if (!this.processes.tree(h)) throw new Error(`the runtime process (pid ${h.pid}) is gone`);
    await this.processes.stopAll(h);
  }

  async resume(handle: RuntimeHandle): Promise<void> {
    const h = asProcess(handle);
    if (!this.processes.tree(h)) throw new Error(`the runtime process (pid ${h.pid}) is gone`);
    signalAll(await this.processes.members(h), 'SIGCONT');
  }

  async delete(sandboxId: string, handle: RuntimeHandle | null): Promise<void> {
    const pids = handle ? this.processes.tree(asProcess(handle)) : null;
    if (pids) {
      signalAll(pids, 'SIGKILL');
      const pid = asProcess(handle!).pid;
      for (let i = 0; i < 100 && readStat(pid) && readStat(pid)!.state !== 'Z'; i++) await sleep(20);
    }
    const dir = this.dirOf(sandboxId);
    const uid = this.processes.uidOf(dir);
    // An isolated sandbox's uid is its own: whatever runs as it (a daemon that left the runtime's tree,
    // one that keeps forking) ends before its files go and before the uid can be someone else's.
    if (uid) await killUserProcesses(uid);
    if (this.opts.cgroups) {
      // Whatever is left in its cgroup (every process it had, with or without a uid of its own), then the cgroup.
      await this.processes.killCgroup(sandboxId);
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
      if (this.opts.cgroups) await this.processes.killCgroup(path.basename(h.dir)).catch(() => undefined);
      return { state: 'missing', detail };
    }
    return stat.state === 'T' ? { state: 'paused' } : { state: 'running' };
  }
}
