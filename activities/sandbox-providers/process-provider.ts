/**
 * The default provider: the runtime as a child process on a free loopback port, in
 * `<sandboxes dir>/<id>`, with its session key in its environment. Pause stops the runtime and every
 * process below it (SIGSTOP), resume continues them (SIGCONT), delete kills them and removes the
 * directory. The handle (pid, its start time, port, directory) lives in MongoDB, so any worker, including
 * one started after this one died, finds the process again; the process does not depend on the worker.
 */
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { freePort } from '../../src/process/net';
import { processesOfUser, processesWithEnv, processTree, readStat, signalAll } from '../../src/process/process-tree';
import { AGENT_SERVER } from '../../src/schemas/sandboxes';
import type { ProcessRuntimeHandle as ProcessHandle, RuntimeHandle } from '../../src/store/runtime-handle';
import type { ProcessIsolation } from './process-isolation';
import { ProviderConfigError, wrongHandle, type RuntimeState, type SandboxProvider, type StartRequest, type StartedRuntime } from './provider';

export interface ProcessProviderOptions {
  /** Parent of the sandbox directories (DATA_DIR/sandboxes). */
  sandboxesDir: string;
  /** The built-in runtime's entry point (dist/src/runtime/main.js), run when a spec has no command. */
  runtimeEntry: string;
  host?: string;
  /** Each sandbox as a uid of its own behind a firewall rule (the worker runs as root). */
  isolation?: ProcessIsolation;
}

/** Variables a runtime needs from the worker's environment; nothing else (no credentials) is passed on. */
const INHERITED = ['PATH', 'HOME', 'LANG', 'TZ', 'TMPDIR', 'LOG_LEVEL'];

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

/** The port an isolated runtime reports (opened without following links: the file is in the sandbox's own directory). */
async function readPortFile(file: string, pid: number, logFile: string): Promise<number> {
  for (let i = 0; i < 600; i++) {
    try {
      const fd = fs.openSync(file, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW);
      const buf = Buffer.alloc(8);
      const n = fs.readSync(fd, buf, 0, 8, 0);
      fs.closeSync(fd);
      const text = buf.subarray(0, n).toString('latin1');
      if (/^\d{1,5}$/.test(text) && Number(text) > 0 && Number(text) < 65536) return Number(text);
      throw new Error('the runtime reported no port');
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw new Error(`the runtime's port file is not a port: ${(e as Error).message}`, { cause: e });
    }
    if (!readStat(pid)) throw new Error(`the runtime process (pid ${pid}) exited before it listened${lastWords(logFile)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`the runtime (pid ${pid}) did not report its port within 30 s${lastWords(logFile)}`);
}

/**
 * Kills every process of a uid: `kill -9 -1` run as that uid (the kernel signals all of them in one
 * pass, which a process forking in a loop cannot outrun as it can a list read from /proc), again until
 * none is left; throws (the activity retries) if some survive.
 */
async function killUser(uid: number): Promise<void> {
  for (let round = 0; round < 50; round++) {
    if ((await processesOfUser(uid)).length === 0) return;
    spawnSync('kill', ['-9', '-1'], { uid, gid: uid, timeout: 5000 });
    await new Promise((r) => setTimeout(r, 20));
  }
  const left = await processesOfUser(uid);
  if (left.length > 0) throw new Error(`processes of uid ${uid} survive SIGKILL: ${left.join(', ')}`);
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
      throw new ProviderConfigError(`spec ${req.spec.id}: working_dir ${req.spec.working_dir} leaves the sandbox directory`);
    }
    const isolation = this.opts.isolation;
    const uid = isolation ? await isolation.uidFor(req.sandboxId, dir, workspace) : undefined;
    if (!isolation) fs.mkdirSync(workspace, { recursive: true });
    await this.killEarlierRuntime(dir);
    // Isolated, the runtime binds a port the system picks and says which: a free port chosen here could
    // be taken by another sandbox before the runtime binds it, and that sandbox would get its clients.
    const portFile = isolation ? path.join(dir, 'tmp', '.runtime-port') : undefined;
    if (portFile) fs.rmSync(portFile, { force: true });
    let port = portFile ? 0 : await freePort();
    const inherited = Object.fromEntries(INHERITED.flatMap((k) => (process.env[k] === undefined ? [] : [[k, process.env[k]]])));
    const env = {
      ...inherited,
      ...req.spec.initial_env,
      RUNTIME_HOST: this.host,
      RUNTIME_PORT: String(port),
      ...(portFile ? { RUNTIME_PORT_FILE: portFile } : {}),
      SESSION_API_KEY: req.sessionApiKey,
      RUNTIME_WORKING_DIR: workspace,
      RUNTIME_SANDBOX_DIR: dir,
      CONTROL_PLANE_URL: req.controlPlaneUrl,
      ...isolation?.env(dir),
    };
    const builtIn = isolation ? Object.values(await isolation.prepare()) : [process.execPath, this.opts.runtimeEntry];
    const [command, ...args] = req.spec.command ?? builtIn;
    const log = fs.openSync(path.join(dir, 'runtime.log'), 'a', 0o600);
    const child = spawn(command!, args, { cwd: workspace, env, detached: true, stdio: ['ignore', log, log], ...(uid === undefined ? {} : { uid, gid: uid }) });
    fs.closeSync(log);
    // Recorded before anything else runs (no await between the fork and the write): a worker killed
    // from here on leaves a file that names the runtime to the next attempt.
    const stat = child.pid === undefined ? null : readStat(child.pid);
    const handle: ProcessHandle | null = stat && { provider: 'process', pid: child.pid!, startTicks: stat.startTicks, port, dir };
    if (handle) fs.writeFileSync(path.join(dir, RUNTIME_FILE), JSON.stringify(handle), { mode: 0o600 });
    await new Promise<void>((resolve, reject) => {
      child.once('spawn', resolve);
      child.once('error', (e) => reject(new ProviderConfigError(`spec ${req.spec.id}: cannot run ${command}: ${e.message}`)));
    });
    child.unref();
    if (!handle || !readStat(handle.pid)) throw new Error(`the runtime process (pid ${child.pid}) exited at once; see ${path.join(dir, 'runtime.log')}`);
    if (portFile) {
      port = await readPortFile(portFile, handle.pid, path.join(dir, 'runtime.log'));
      handle.port = port;
      fs.writeFileSync(path.join(dir, RUNTIME_FILE), JSON.stringify(handle), { mode: 0o600 });
    }
    return {
      handle,
      exposedUrls: [{ name: AGENT_SERVER, url: `http://${this.host}:${port}`, port }],
    };
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
    if (recorded) return signalAll(recorded, 'SIGKILL');
    // No live runtime on file, yet one was spawned here before (its log exists; it is opened before the
    // fork): a worker killed in the instant between the fork and the write, or a file removed by hand,
    // left one that only its environment names. The runtime and what it ran inherit the variable.
    if (fs.existsSync(path.join(dir, 'runtime.log'))) signalAll(await processesWithEnv('RUNTIME_SANDBOX_DIR', dir), 'SIGKILL');
  }

  /** The pids of the runtime and its descendants, or null when the runtime process is no longer ours. */
  private tree(h: ProcessHandle): number[] | null {
    const stat = readStat(h.pid);
    if (!stat || stat.startTicks !== h.startTicks || stat.state === 'Z' || stat.state === 'X') return null;
    return processTree(h.pid);
  }

  async pause(handle: RuntimeHandle): Promise<void> {
    const pids = this.tree(asProcess(handle));
    if (!pids) throw new Error(`the runtime process (pid ${asProcess(handle).pid}) is gone`);
    signalAll(pids, 'SIGSTOP');
  }

  async resume(handle: RuntimeHandle): Promise<void> {
    const pids = this.tree(asProcess(handle));
    if (!pids) throw new Error(`the runtime process (pid ${asProcess(handle).pid}) is gone`);
    signalAll(pids, 'SIGCONT');
  }

  async delete(sandboxId: string, handle: RuntimeHandle | null): Promise<void> {
    const pids = handle ? this.tree(asProcess(handle)) : null;
    if (pids) {
      signalAll(pids, 'SIGKILL');
      const pid = asProcess(handle!).pid;
      for (let i = 0; i < 100 && readStat(pid) && readStat(pid)!.state !== 'Z'; i++) await new Promise((r) => setTimeout(r, 20));
    }
    const dir = this.dirOf(sandboxId);
    const uid = this.opts.isolation && fs.statSync(path.join(dir, 'home'), { throwIfNoEntry: false })?.uid;
    // An isolated sandbox's uid is its own: whatever runs as it (a daemon that left the runtime's tree,
    // one that keeps forking) ends before its files go and before the uid can be someone else's.
    if (uid) await killUser(uid);
    await fs.promises.rm(dir, { recursive: true, force: true });
    this.opts.isolation?.release(sandboxId, uid || undefined);
  }

  async inspect(handle: RuntimeHandle): Promise<RuntimeState> {
    const h = asProcess(handle);
    const stat = readStat(h.pid);
    if (!stat || stat.startTicks !== h.startTicks || stat.state === 'Z' || stat.state === 'X') {
      return { state: 'missing', detail: `the runtime process (pid ${h.pid}) is gone${lastWords(path.join(h.dir, 'runtime.log'))}` };
    }
    return stat.state === 'T' ? { state: 'paused' } : { state: 'running' };
  }
}
