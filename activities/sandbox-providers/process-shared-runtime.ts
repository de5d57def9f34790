/**
 * What isolated sandboxes run, where every uid may read it: the built-in runtime's bundle and node, and
 * the OpenHands agent server; root's copies, named by their content or version, writable by no sandbox.
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { AGENT_SERVER_DESCRIPTION, readAgentServerEnv, type AgentServerEnv } from '../../src/process/agent-server-env';
import { trustedProgram } from '../../src/process/trusted-path';
import { readableByOthers } from './path-modes';
import type { SandboxTree } from './sandbox-tree';

const execFileAsync = promisify(execFile);

/**
 * The built-in runtime as every uid may run it: its bundle copied into `runtimeDir`, and node as it is,
 * or copied there too when others cannot read it where it is.
 */
export function shareBuiltInRuntime(runtimeDir: string, runtimeBundle: string): { node: string; bundle: string } {
  // The runtime as one file any uid may read, named by its content.
  const code = fs.readFileSync(runtimeBundle);
  const bundle = path.join(runtimeDir, `runtime-${createHash('sha256').update(code).digest('hex').slice(0, 16)}.js`);
  if (!fs.existsSync(bundle)) {
    fs.writeFileSync(`${bundle}.tmp`, code, { mode: 0o644 });
    fs.chmodSync(`${bundle}.tmp`, 0o644); // whatever the worker's umask (077 would keep every uid out)
    fs.renameSync(`${bundle}.tmp`, bundle);
  }
  let node = process.execPath;
  if (!readableByOthers(node)) {
    node = path.join(runtimeDir, `node-${process.versions.node}`);
    if (!fs.existsSync(node)) {
      fs.copyFileSync(process.execPath, `${node}.tmp`);
      fs.chmodSync(`${node}.tmp`, 0o755);
      fs.renameSync(`${node}.tmp`, node);
    }
  }
  return { node, bundle };
}

/** The agent server environments sandbox uids run: each used where it is, or copied once. */
export class AgentServerSharing {
  private readonly sharedAgentServers = new Map<string, Promise<AgentServerEnv>>();

  constructor(private readonly tree: SandboxTree) {}

  /**
   * The agent server as sandbox uids may run it: where it is, when they can read it there; otherwise
   * (installed under a 0700 home) a copy beside the built-in runtime's, made once per environment
   * (its name is its content's). Root's either way, writable by no sandbox.
   */
  shareAgentServer(env: AgentServerEnv, progress?: () => void): Promise<AgentServerEnv> {
    if (readableByOthers(env.python) && readableByOthers(path.join(env.dir, AGENT_SERVER_DESCRIPTION))) {
      // Used where it is: it must be root's and closed to writes by others (its top; the install makes the rest so).
      const st = fs.statSync(env.dir);
      if (st.uid !== 0 || (st.mode & 0o022) !== 0)
        return Promise.reject(
          new Error(
            `the agent server in ${env.dir} is not root's alone (owner ${st.uid}, mode ${(st.mode & 0o777).toString(8)}): sandboxes could change what they run`,
          ),
        );
      return Promise.resolve(env);
    }
    let shared = this.sharedAgentServers.get(env.dir);
    if (!shared) {
      shared = this.copyAgentServer(env);
      shared.catch(() => this.sharedAgentServers.delete(env.dir));
      this.sharedAgentServers.set(env.dir, shared);
    }
    // The copy (about 50,000 files, a gigabyte) takes seconds to minutes: the start waiting on it says it is alive.
    const beat = progress && setInterval(progress, 2000);
    return shared.finally(() => beat && clearInterval(beat));
  }

  private async copyAgentServer(env: AgentServerEnv): Promise<AgentServerEnv> {
    const target = path.join(this.tree.path('runtime'), path.basename(env.dir));
    const ready = readAgentServerEnv(target);
    if (ready) return ready;
    this.tree.make('runtime');
    const work = `${target}.copy-${process.pid}`;
    await fs.promises.rm(work, { recursive: true, force: true });
    const coreutils = (name: string, args: string[]) =>
      execFileAsync(trustedProgram(name, 'coreutils'), args).catch((e: Error & { stderr?: string }) => {
        throw new Error(`the agent server's copy ${work} could not be made (${name}): ${e.stderr || e.message}`);
      });
    // Out of process and without blocking the worker: its event loop keeps heartbeating every activity it runs.
    await coreutils('cp', ['-R', '-P', '--preserve=mode,links', env.dir, work]);
    // Readable by every uid, writable by none but root, whatever the modes (and umask) of the install.
    await coreutils('chown', ['-R', '-h', '0:0', work]);
    await coreutils('chmod', ['-R', 'u+rwX,go+rX,go-w', work]);
    try {
      fs.renameSync(work, target);
    } catch (e) {
      // Another worker finished its copy first: its copy is as good.
      await fs.promises.rm(work, { recursive: true, force: true });
      if (!readAgentServerEnv(target)) throw e;
    }
    return readAgentServerEnv(target)!;
  }
}
