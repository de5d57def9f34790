/**
 * Isolation of process sandboxes when the worker runs as root (SANDBOX_PROCESS_ISOLATION=user):
 * - each sandbox runs as a uid of its own from SANDBOX_UID_RANGE, claimed atomically with a file in
 *   DATA_DIR/sandbox-uids and given back on delete; its directories (workspace, home, tmp, the runtime's
 *   conversations) are its own, mode 0700; the sandbox directory itself and the runtime's handle and log
 *   stay root's, so a sandbox cannot forge what the worker reads back;
 * - DATA_DIR is 0700 and may not hold the sandboxes (SANDBOXES_DIR lies outside it): a sandbox reaches
 *   its own directory by name and nothing of the service's (no listing, no secrets key, no database files);
 * - the runtime starts in a mount and IPC namespace of its own (`launch`): a /proc that shows it only its
 *   own processes (hidepid), its own directory's tmp as /tmp, /var/tmp, /dev/shm and /run/lock, and SysV IPC and
 *   message queues that end with it. What it leaves behind is inside its directory; another sandbox reads
 *   no command line (a clone's URL, a token) of anyone else's;
 * - it gets a fixed PATH of root's system directories (src/process/trusted-path.ts), and every program
 *   the worker runs as root here is resolved there once, never through the PATH it was started with;
 * - the runtime is a single bundled file (dist/runtime-bundle.js) copied where every uid may read it,
 *   since the checkout and its node_modules may not be (a clone under a 0700 directory);
 * - a firewall chain for the whole uid range refuses new connections to any address of this machine
 *   (the database, Temporal, the worker, other sandboxes' runtimes), except the api (events), DNS, and
 *   SANDBOX_LOCAL_ALLOW; replies of the runtime's own server pass. Sandboxes keep the internet (LLMs).
 *   A sandbox cannot bind() less than any user, but the chain drops what it would answer from the
 *   service's ports (`reservedPorts`, IPv4 and IPv6): a sandbox that binds the api's port while the api
 *   restarts, or [::1] beside an api on 127.0.0.1, completes no connection and learns nothing.
 */
import { execFile, spawn } from 'node:child_process';
import { createHash, randomInt } from 'node:crypto';
import dns from 'node:dns/promises';
import fs from 'node:fs';
import { isIP } from 'node:net';
import path from 'node:path';
import { promisify } from 'node:util';
import { AGENT_SERVER_DESCRIPTION, readAgentServerEnv, type AgentServerEnv } from '../../src/process/agent-server-env';
import { trustedPath, trustedProgram } from '../../src/process/trusted-path';

const execFileAsync = promisify(execFile);
/** Runs a program of the system's directories (never one found through PATH). */
const run = (name: string, args: string[]) => execFileAsync(trustedProgram(name, 'iptables'), args);

export interface ProcessIsolationOptions {
  dataDir: string;
  sandboxesDir: string;
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

/** The firewall chain of a uid range (iptables names are at most 28 characters). */
export const chainName = (range: [number, number]) => `AC_SBX_${range[0]}`;

/**
 * The chain's two jumps from OUTPUT: every packet of the range's uids; and SYN-ACKs that belong to no
 * socket, which is how a SYN cookie leaves (a listener whose queue is full, as a sandbox can make its
 * own): the owner match cannot see their uid, so from a service's port they are dropped whoever sent them.
 */
const jumps = (range: [number, number]) => [
  ['-m', 'owner', '--uid-owner', `${range[0]}-${range[1]}`, '-j', chainName(range)],
  [
    '-p',
    'tcp',
    '--tcp-flags',
    'SYN,ACK',
    'SYN,ACK',
    '-m',
    'owner',
    '!',
    '--socket-exists',
    '-j',
    `${chainName(range)}_NS`,
  ],
];

/** The first existing directory from `dir` up that others cannot traverse, or null. */
function untraversable(dir: string): string | null {
  let d = dir;
  for (;;) {
    const st = fs.statSync(d, { throwIfNoEntry: false });
    if (st && (st.mode & 0o001) === 0) return d;
    const parent = path.dirname(d);
    if (parent === d) return null;
    d = parent;
  }
}

/** Whether a path is readable (and its directories traversable) by a user that is neither its owner nor in its group. */
function readableByOthers(file: string): boolean {
  let dir = path.dirname(file);
  try {
    if ((fs.statSync(file).mode & 0o004) === 0) return false;
    for (;;) {
      if ((fs.statSync(dir).mode & 0o001) === 0) return false;
      const parent = path.dirname(dir);
      if (parent === dir) return true;
      dir = parent;
    }
  } catch {
    return false;
  }
}

async function hostPorts(pairs: string[]): Promise<{ address: string; family: 4 | 6; port: number }[]> {
  const out: { address: string; family: 4 | 6; port: number }[] = [];
  for (const pair of pairs) {
    const m = /^\[?([^\]]+?)\]?:(\d+)$/.exec(pair);
    if (!m) throw new Error(`not host:port: ${pair}`);
    const [, host, port] = m;
    const addresses = isIP(host!) ? [{ address: host!, family: isIP(host!) }] : await dns.lookup(host!, { all: true });
    for (const a of addresses) out.push({ address: a.address, family: a.family === 6 ? 6 : 4, port: Number(port) });
  }
  return out;
}

/** iptables-restore input for one family: the chain (flushed and refilled atomically) and its jump. */
function rules(
  chain: string,
  allowed: { address: string; port: number }[],
  reserved: number[],
  missingJumps: string[][],
  linkLocal: string,
): string {
  const local = '-m addrtype --dst-type LOCAL';
  // multiport takes at most 15 ports a rule.
  const groups = Array.from({ length: Math.ceil(reserved.length / 15) }, (_, i) =>
    reserved.slice(i * 15, i * 15 + 15).join(','),
  );
  return [
    '*filter',
    `:${chain} - [0:0]`,
    `:${chain}_NS - [0:0]`,
    ...groups.map((ports) => `-A ${chain}_NS -p tcp -m multiport --sports ${ports} -j DROP`),
    // Before the replies pass: a listener of a sandbox on a service port (the api's, after the api died)
    // sends no SYN-ACK and no datagram, so no client's key or request ever reaches it.
    ...groups.flatMap((ports) => [
      `-A ${chain} -p tcp -m multiport --sports ${ports} --tcp-flags SYN,ACK SYN,ACK -j DROP`,
      `-A ${chain} -p udp -m multiport --sports ${ports} -j DROP`,
    ]),
    `-A ${chain} -m conntrack --ctstate ESTABLISHED,RELATED -j RETURN`,
    ...allowed.map((a) => `-A ${chain} -p tcp -d ${a.address} --dport ${a.port} -j RETURN`),
    `-A ${chain} -p udp --dport 53 ${local} -j RETURN`,
    `-A ${chain} -p tcp --dport 53 ${local} -j RETURN`,
    `-A ${chain} ${local} -p tcp -j REJECT --reject-with tcp-reset`,
    `-A ${chain} ${local} -j REJECT`,
    // Broadcast and multicast reach local listeners too; a published port is a local one rewritten
    // (DNAT); link-local addresses include cloud metadata services (169.254.169.254) and their credentials.
    `-A ${chain} -m addrtype --dst-type ${linkLocal.includes(':') ? 'MULTICAST' : 'BROADCAST,MULTICAST'} -j REJECT`, // IPv6 has no broadcast
    `-A ${chain} -m conntrack --ctstate DNAT -j REJECT`,
    `-A ${chain} -d ${linkLocal} -j REJECT`,
    ...missingJumps.map((jump) => `-I OUTPUT 1 ${jump.join(' ')}`),
    'COMMIT',
    '',
  ].join('\n');
}

function restore(command: string, input: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(trustedProgram(command, 'iptables'), ['--noflush'], { stdio: ['pipe', 'ignore', 'pipe'] });
    let err = '';
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.on('error', reject);
    child.on('close', (code) =>
      code === 0 ? resolve() : reject(new Error(`${command} exited with ${code}: ${err.trim()}`)),
    );
    child.stdin.end(input);
  });
}

export class ProcessIsolation {
  private prepared: Promise<{ node: string; bundle: string }> | null = null;
  /** Directories every user may write, besides /tmp, that a sandbox gets its own tmp in place of (prepare). */
  private sharedDirs: string[] = ['/var/tmp', '/dev/shm', '/run/lock'];
  private readonly claims: string;
  private readonly sharedAgentServers = new Map<string, Promise<AgentServerEnv>>();

  constructor(private readonly opts: ProcessIsolationOptions) {
    this.claims = path.join(opts.dataDir, 'sandbox-uids');
  }

  /** Once per worker (again after a failure): modes of DATA_DIR, the runtime copy, the firewall. */
  prepare(): Promise<{ node: string; bundle: string }> {
    this.prepared ??= this.doPrepare().catch((e: unknown) => {
      this.prepared = null;
      throw e;
    });
    return this.prepared;
  }

  private async doPrepare(): Promise<{ node: string; bundle: string }> {
    if (process.getuid?.() !== 0) throw new Error('SANDBOX_PROCESS_ISOLATION=user needs the worker to run as root');
    const { dataDir, sandboxesDir } = this.opts;
    fs.mkdirSync(this.claims, { recursive: true, mode: 0o700 });
    // DATA_DIR is the service's alone; sandboxes live elsewhere (SANDBOXES_DIR), reached by name only.
    fs.chmodSync(dataDir, 0o700);
    if (sandboxesDir === dataDir || sandboxesDir.startsWith(dataDir + path.sep)) {
      throw new Error(
        `SANDBOXES_DIR (${sandboxesDir}) is inside DATA_DIR, which isolated sandboxes may not enter: leave it unset, or choose a directory outside`,
      );
    }
    const unreachable = untraversable(path.dirname(sandboxesDir));
    if (unreachable)
      throw new Error(
        `sandboxes in ${sandboxesDir} cannot be reached by their users: ${unreachable} is closed to others (o+x); choose another SANDBOXES_DIR`,
      );
    const runtimeDir = path.join(path.dirname(sandboxesDir), 'runtime');
    for (const d of [sandboxesDir, runtimeDir]) {
      fs.mkdirSync(d, { recursive: true });
      fs.chmodSync(d, 0o711);
    }
    fs.chmodSync(path.dirname(sandboxesDir), 0o711);
    // The runtime as one file any uid may read, named by its content.
    const code = fs.readFileSync(this.opts.runtimeBundle);
    const bundle = path.join(runtimeDir, `runtime-${createHash('sha256').update(code).digest('hex').slice(0, 16)}.js`);
    if (!fs.existsSync(bundle)) {
      fs.writeFileSync(`${bundle}.tmp`, code, { mode: 0o644 });
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
    this.sharedDirs = await worldWritableDirs([sandboxesDir, runtimeDir]);
    await this.installFirewall();
    return { node, bundle };
  }

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
    const target = path.join(path.dirname(this.opts.sandboxesDir), 'runtime', path.basename(env.dir));
    const ready = readAgentServerEnv(target);
    if (ready) return ready;
    fs.mkdirSync(path.dirname(target), { recursive: true, mode: 0o711 });
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

  /** The chain's jump is checked at every start: a firewall flushed by another tool is put back. */
  private async ensureFirewall(): Promise<void> {
    for (const cmd of ['iptables', 'ip6tables']) {
      for (const jump of jumps(this.opts.uidRange)) {
        if (
          !(await run(cmd, ['-C', 'OUTPUT', ...jump]).then(
            () => true,
            () => false,
          ))
        )
          return this.installFirewall();
      }
    }
  }

  private async installFirewall(): Promise<void> {
    const chain = chainName(this.opts.uidRange);
    const range = this.opts.uidRange;
    const api = new URL(this.opts.controlPlaneUrl);
    const reserved = [...new Set(this.opts.reservedPorts)].sort((a, b) => a - b);
    const allowed = await hostPorts([
      `${api.hostname}:${api.port || (api.protocol === 'https:' ? 443 : 80)}`,
      ...this.opts.localAllow,
    ]);
    for (const [family, command, check] of [
      [4, 'iptables-restore', 'iptables'],
      [6, 'ip6tables-restore', 'ip6tables'],
    ] as const) {
      const missing: string[][] = [];
      for (const jump of jumps(range))
        if (
          !(await run(check, ['-C', 'OUTPUT', ...jump]).then(
            () => true,
            () => false,
          ))
        )
          missing.push(jump);
      try {
        await restore(
          command,
          rules(
            chain,
            allowed.filter((a) => a.family === family),
            reserved,
            missing,
            family === 4 ? '169.254.0.0/16' : 'fe80::/10',
          ),
        );
      } catch (e) {
        throw new Error(
          `the firewall rule of process sandboxes could not be installed (${(e as Error).message}); install iptables, or set SANDBOX_PROCESS_ISOLATION=none`,
          { cause: e },
        );
      }
    }
  }

  /**
   * The uid of a sandbox: the one its directories already have (a restart), or a free one claimed now.
   * Its own directories are made (or fixed) to belong to it, mode 0700.
   */
  async uidFor(sandboxId: string, dir: string, workspace: string): Promise<number> {
    await this.prepare();
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
    await this.ensureFirewall();
    return uid;
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
   * How to start `command` as the sandbox's uid (spawned by root, no uid option): in new mount and IPC
   * namespaces, it mounts a /proc with hidepid=2 (each uid sees its own processes only; per mount since
   * Linux 5.8) and binds the sandbox's tmp over the directories every user may write (/tmp, /var/tmp, /dev/shm,
   * /run/lock), then drops to the uid with
   * no supplementary groups and no way to gain privileges (setuid programs run as the caller). The pid
   * stays the one spawned: unshare, sh and setpriv each exec the next.
   */
  launch(uid: number, dir: string, command: string, args: string[]): { command: string; args: string[] } {
    const script = [
      'set -e',
      '"$1" -t proc -o hidepid=2,nosuid,nodev,noexec proc /proc',
      // The source is named once, before /tmp changes (a sandbox directory under /tmp would resolve anew).
      '"$1" --bind "$2" /tmp',
      'mount=$1 setpriv=$3 uid=$4 shared=$5',
      'shift 5',
      'while [ "$shared" -gt 0 ]; do if [ -d "$1" ] && [ ! -L "$1" ]; then "$mount" --bind /tmp "$1"; fi; shift; shared=$((shared - 1)); done',
      // POSIX message queues of the new IPC namespace, not the host's mount of them.
      'if [ -d /dev/mqueue ]; then "$mount" -t mqueue -o nosuid,nodev,noexec mqueue /dev/mqueue; fi',
      // Files it makes are its own alone, whichever runtime it is (the agent server sets no umask).
      'umask 077',
      'exec "$setpriv" --reuid="$uid" --regid="$uid" --clear-groups --no-new-privs -- "$@"',
    ].join('\n');
    return {
      command: trustedProgram('unshare', 'util-linux'),
      args: [
        '--mount',
        '--ipc',
        '--propagation',
        'slave',
        '--',
        trustedProgram('sh', 'dash'),
        '-c',
        script,
        'sandbox-init',
        trustedProgram('mount', 'mount'),
        path.join(dir, 'tmp'),
        trustedProgram('setpriv', 'util-linux'),
        String(uid),
        String(this.sharedDirs.length),
        ...this.sharedDirs,
        command,
        ...args,
      ],
    };
  }
}

/**
 * The directories any user may reach and write (o+wx, sticky or not), up to four levels below /, outside /tmp,
 * /proc, /sys, /dev/mqueue (its own mount per sandbox) and the sandboxes' own: what a sandbox could leave
 * files in for others, or for after its delete. Links are not followed; the walk is bounded.
 */
async function worldWritableDirs(skip: string[]): Promise<string[]> {
  const skipped = new Set(['/tmp', '/proc', '/sys', '/dev/mqueue', ...skip]);
  const found: string[] = [];
  let budget = 50_000;
  const walk = async (dir: string, depth: number): Promise<void> => {
    const entries = await fs.promises.readdir(dir, { withFileTypes: true }).catch(() => []);
    for (const e of entries) {
      if (!e.isDirectory() || --budget < 0) continue;
      const p = path.join(dir, e.name);
      if (skipped.has(p)) continue;
      const st = await fs.promises.lstat(p).catch(() => null);
      if (!st?.isDirectory()) continue;
      if ((st.mode & 0o001) === 0) continue; // others cannot enter it: nothing below is theirs to reach
      if ((st.mode & 0o002) !== 0) found.push(p);
      else if (depth < 4) await walk(p, depth + 1);
    }
  };
  await walk('/', 1);
  return found.sort();
}

/** The workspace and each directory between the sandbox directory and it: the sandbox's own. */
function ownPath(dir: string, workspace: string): string[] {
  const rel = path.relative(dir, workspace);
  if (!rel || rel.startsWith('..')) return [];
  const parts = rel.split(path.sep);
  return parts.map((_, i) => path.join(dir, ...parts.slice(0, i + 1)));
}

/** Removes the firewall chain of a uid range (an operator's clean-up; the tests' own). */
export async function removeSandboxFirewall(range: [number, number]): Promise<void> {
  const chain = chainName(range);
  for (const cmd of ['iptables', 'ip6tables']) {
    for (const jump of jumps(range)) {
      for (let i = 0; i < 10; i++) {
        if (
          !(await run(cmd, ['-D', 'OUTPUT', ...jump]).then(
            () => true,
            () => false,
          ))
        )
          break;
      }
    }
    for (const c of [chain, `${chain}_NS`]) {
      await run(cmd, ['-F', c]).catch(() => undefined);
      await run(cmd, ['-X', c]).catch(() => undefined);
    }
  }
}
