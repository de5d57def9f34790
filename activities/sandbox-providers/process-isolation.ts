/**
 * Isolation of process sandboxes when the worker runs as root (SANDBOX_PROCESS_ISOLATION=user):
 * - each sandbox runs as a uid of its own from SANDBOX_UID_RANGE, claimed atomically with a file in
 *   DATA_DIR/sandbox-uids and given back on delete; its directories (workspace, home, tmp, the runtime's
 *   conversations) are its own, mode 0700; the sandbox directory itself and the runtime's handle and log
 *   stay root's, so a sandbox cannot forge what the worker reads back;
 * - DATA_DIR is 0700 and may not hold the sandboxes (SANDBOXES_DIR lies outside it): a sandbox reaches
 *   its own directory by name and nothing of the service's (no listing, no secrets key, no database files);
 * - the runtime starts in a mount and IPC namespace of its own (`launch`): a /proc that shows it only its
 *   own processes (hidepid), its own directory's tmp as /tmp and over every other directory all users may
 *   write (/var/tmp, /dev/shm, /run/lock, ...: found at prepare), and SysV IPC and message queues that end
 *   with it. What it leaves behind is inside its directory; another sandbox reads no command line (a
 *   clone's URL, a token) of anyone else's;
 * - it gets a fixed PATH of root's system directories (src/process/trusted-path.ts), and every program
 *   the worker runs as root here is resolved there once, never through the PATH it was started with;
 * - the runtime is a single bundled file (dist/runtime-bundle.js) copied where every uid may read it,
 *   since the checkout and its node_modules may not be (a clone under a 0700 directory); node and the
 *   agent server too, when others cannot read them where they are (process-shared-runtime.ts);
 * - a firewall chain for the whole uid range refuses new connections to any address of this machine
 *   (the database, Temporal, the worker, other sandboxes' runtimes), except the api (events), DNS, and
 *   SANDBOX_LOCAL_ALLOW; replies of the runtime's own server pass. Sandboxes keep the internet (LLMs),
 *   but not link-local addresses (cloud metadata) nor published ports (process-firewall.ts).
 *   A sandbox cannot bind() less than any user, but the chain drops what it would answer from the
 *   service's ports (`reservedPorts`, IPv4 and IPv6): a sandbox that binds the api's port while the api
 *   restarts, or [::1] beside an api on 127.0.0.1, completes no connection and learns nothing.
 */
import { execFile } from 'node:child_process';
import { randomInt } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import type { AgentServerEnv } from '../../src/process/agent-server-env';
import { trustedPath, trustedProgram } from '../../src/process/trusted-path';
import { ensureSandboxFirewall, installSandboxFirewall } from './process-firewall';
import { isolatedLaunch, worldWritableDirs } from './process-isolation-launch';
import { AgentServerSharing, shareBuiltInRuntime } from './process-shared-runtime';
import type { SandboxTree } from './sandbox-tree';

const execFileAsync = promisify(execFile);

export interface ProcessIsolationOptions {
  dataDir: string;
  /** The sandboxes' directories (an isolated tree: SandboxTree with `isolated`). */
  tree: SandboxTree;
  uidRange: [number, number];
  /** The built runtime bundle (dist/runtime-bundle.js). */
  runtimeBundle: string;
  /** The api as runtimes reach it (SANDBOX_CONTROL_PLANE_URL): allowed through the firewall when it is local. */
  controlPlaneUrl: string;
  /** host:port pairs sandboxes may reach on this machine besides the api. */
  localAllow: string[];
  /** The service's own ports (api, database, Temporal, metrics): a sandbox that binds one answers no one. */
  reservedPorts: number[];
}

/** The directories of a sandbox that its uid owns. */
export const OWN_DIRS = ['home', 'tmp', 'conversations'] as const;

export class ProcessIsolation {
  private prepared: Promise<{ node: string; bundle: string }> | null = null;
  /** Directories every user may write, besides /tmp, that a sandbox gets its own tmp in place of (prepare). */
  private sharedDirs: string[] = ['/var/tmp', '/dev/shm', '/run/lock'];
  private readonly claims: string;
  private readonly agentServers: AgentServerSharing;

  constructor(private readonly opts: ProcessIsolationOptions) {
    this.claims = path.join(opts.dataDir, 'sandbox-uids');
    this.agentServers = new AgentServerSharing(opts.tree);
  }

  /** Once per worker (again after a failure): modes of DATA_DIR and of the sandbox tree, the runtime copy, the firewall. */
  prepare(): Promise<{ node: string; bundle: string }> {
    this.prepared ??= this.doPrepare().catch((e: unknown) => {
      this.prepared = null;
      throw e;
    });
    return this.prepared;
  }

  private async doPrepare(): Promise<{ node: string; bundle: string }> {
    if (process.getuid?.() !== 0) throw new Error('SANDBOX_PROCESS_ISOLATION=user needs the worker to run as root');
    fs.mkdirSync(this.claims, { recursive: true, mode: 0o700 });
    // DATA_DIR is the service's alone; sandboxes live elsewhere (SANDBOXES_DIR), reached by name only.
    fs.chmodSync(this.opts.dataDir, 0o700);
    const { tree } = this.opts;
    const dirs = [tree.make('sandboxes'), tree.make('runtime')];
    const shared = shareBuiltInRuntime(tree.path('runtime'), this.opts.runtimeBundle);
    this.sharedDirs = await worldWritableDirs(dirs);
    await installSandboxFirewall(this.opts);
    return shared;
  }

  /** The installed agent server as sandbox uids may run it (process-shared-runtime.ts). */
  shareAgentServer(env: AgentServerEnv, progress?: () => void): Promise<AgentServerEnv> {
    return this.agentServers.shareAgentServer(env, progress);
  }

  /**
   * The uid of a sandbox: the one its directories already have (a restart), or a free one claimed now.
   * Its own directories are made (or fixed) to belong to it, mode 0700.
   */
  async uidFor(sandboxId: string, dir: string, workspace: string): Promise<number> {
    await this.prepare();
    const uid = this.claimUid(sandboxId, dir);
    await this.makeOwnDirs(uid, dir, workspace);
    await ensureSandboxFirewall(this.opts);
    return uid;
  }

  /** The uid this sandbox claimed before, or a free one of the range claimed now (a file made exclusively). */
  private claimUid(sandboxId: string, dir: string): number {
    const [first, last] = this.opts.uidRange;
    let uid = this.claimedUid(sandboxId, dir, first, last);
    for (let attempt = 0; uid === null && attempt < 1000; attempt++) {
      const candidate = randomInt(first, last + 1);
      try {
        fs.writeFileSync(path.join(this.claims, String(candidate)), sandboxId, { flag: 'wx', mode: 0o600 });
        uid = candidate;
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
      }
    }
    if (uid === null) throw new Error(`no free uid in SANDBOX_UID_RANGE ${first}-${last}`);
    return uid;
  }

  /** The sandbox directory, root's (0711), and the uid's own directories in it (0700), made or fixed. */
  private async makeOwnDirs(uid: number, dir: string, workspace: string): Promise<void> {
    fs.mkdirSync(dir, { recursive: true, mode: 0o711 });
    fs.chownSync(dir, 0, 0);
    fs.chmodSync(dir, 0o711);
    // Direct children of the (root's) sandbox directory cannot be swapped by the sandbox: fixed every
    // start. Deeper ones (a working_dir below the workspace) are made by the sandbox's uid itself: root
    // never follows a path the sandbox could have turned into a link to anywhere.
    const [top, ...deeper] = ownPath(dir, workspace);
    for (const own of [...OWN_DIRS.map((d) => path.join(dir, d)), ...(top ? [top] : [])]) {
      fs.mkdirSync(own, { recursive: true });
      if (fs.lstatSync(own).isSymbolicLink()) throw new Error(`${own} is a symbolic link`);
      fs.chownSync(own, uid, uid);
      fs.chmodSync(own, 0o700);
    }
    if (deeper.length > 0) {
      // Run like the sandbox's own processes (its namespaces, no environment of the worker's): a process of
      // its uid in the host's namespaces would show the sandbox the host's /tmp through /proc/<pid>/root.
      const mkdir = this.launch(uid, dir, trustedProgram('mkdir', 'coreutils'), ['-p', '-m', '700', workspace]);
      await execFileAsync(mkdir.command, mkdir.args, { env: {}, cwd: '/', encoding: 'utf8', timeout: 10_000 }).catch(
        (e: Error & { stderr?: string }) => {
          throw new Error(`the sandbox's working directory ${workspace} could not be made: ${e.stderr || e.message}`);
        },
      );
    }
  }

  /** The uid this sandbox claimed before, when its workspace still belongs to it. */
  private claimedUid(sandboxId: string, dir: string, first: number, last: number): number | null {
    try {
      const owner = fs.statSync(path.join(dir, 'home')).uid;
      if (owner < first || owner > last) return null;
      return fs.readFileSync(path.join(this.claims, String(owner)), 'utf8') === sandboxId ? owner : null;
    } catch {
      return null;
    }
  }

  /** Gives a deleted sandbox's uid back (its directory is gone by then or about to be). */
  release(sandboxId: string, uid: number | undefined): void {
    if (uid === undefined) return;
    const claim = path.join(this.claims, String(uid));
    try {
      if (fs.readFileSync(claim, 'utf8') === sandboxId) fs.rmSync(claim, { force: true });
    } catch {
      // no claim
    }
  }

  /** The environment an isolated runtime gets on top of the provider's. */
  env(dir: string): Record<string, string> {
    return {
      PATH: trustedPath(),
      HOME: path.join(dir, 'home'),
      TMPDIR: path.join(dir, 'tmp'),
      RUNTIME_STATE_DIR: path.join(dir, 'conversations'),
      RUNTIME_UMASK: '077',
    };
  }

  /**
   * How to start `command` as the sandbox's uid (spawned by root): in namespaces of its own, with its own
   * /proc and tmp, no supplementary groups and no privilege to gain (process-isolation-launch.ts).
   */
  launch(uid: number, dir: string, command: string, args: string[]): { command: string; args: string[] } {
    return isolatedLaunch(uid, dir, this.sharedDirs, command, args);
  }
}

/** The workspace and each directory between the sandbox directory and it: the sandbox's own. */
function ownPath(dir: string, workspace: string): string[] {
  const rel = path.relative(dir, workspace);
  if (!rel || rel.startsWith('..')) return [];
  const parts = rel.split(path.sep);
  return parts.map((_, i) => path.join(dir, ...parts.slice(0, i + 1)));
}
