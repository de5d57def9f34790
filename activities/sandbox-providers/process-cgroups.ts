/**
 * A cgroup per process sandbox: what its processes may use together (memory, CPU, processes), where they
 * are all found (a process cannot leave its cgroup without root), and why one died (the kernel's count of
 * out-of-memory kills). cgroup v2 (one hierarchy, the usual host today) or v1 (a hierarchy per controller,
 * as on this project's CI machine); the worker, as root, makes `<parent>/<sandbox id>` in each, before the
 * runtime starts, and removes it on delete.
 *
 * The runtime enters its cgroup before it runs anything: it is launched through a small root shell that
 * writes its own pid into each `cgroup.procs` and then execs the runtime (or the isolation's launcher),
 * so every process the sandbox ever has is born inside.
 */
import fs from 'node:fs';
import path from 'node:path';
import { trustedProgram } from '../../src/process/trusted-path';
import { detectCgroups, V2_CONTROLLERS, type CgroupLayout } from './cgroup-layout';
import { writeLimits } from './cgroup-limits';
import type { SandboxLimits } from './provider';
import { setTimeout as sleep } from 'node:timers/promises';

/** A sandbox's name in the hierarchy: its id, nothing a path could be made of. */
const NAME = /^[A-Za-z0-9-]{1,64}$/;

export class SandboxCgroups {
  constructor(
    private readonly layout: CgroupLayout,
    /** The cgroup under each hierarchy that holds the sandboxes' (SANDBOX_CGROUP_PARENT). */
    private readonly parent: string,
  ) {}

  get version(): 1 | 2 {
    return this.layout.version;
  }

  /** Each cgroup directory of the sandbox (one in v2, one per controller in v1). */
  private dirs(sandboxId: string): string[] {
    if (!NAME.test(sandboxId)) throw new Error(`not a sandbox id: ${JSON.stringify(sandboxId)}`);
    return this.layout.version === 2
      ? [path.join(this.layout.root, this.parent, sandboxId)]
      : Object.values(this.layout.roots).map((r) => path.join(r, this.parent, sandboxId));
  }

  /** The parent cgroup, made and (v2) handed the controllers; throws where the hierarchy refuses it. */
  prepareParents(): void {
    if (this.layout.version === 2) {
      const root = this.layout.root;
      const parent = path.join(root, this.parent);
      fs.mkdirSync(parent, { recursive: true });
      fs.chmodSync(parent, 0o700);
      // Children get the controllers only when each level above hands them down.
      for (const dir of [root, parent]) {
        const enabled = new Set(
          fs.readFileSync(path.join(dir, 'cgroup.subtree_control'), 'utf8').trim().split(/\s+/).filter(Boolean),
        );
        const wanted = V2_CONTROLLERS.filter((c) => !enabled.has(c));
        if (wanted.length > 0)
          fs.writeFileSync(path.join(dir, 'cgroup.subtree_control'), wanted.map((c) => `+${c}`).join(' '));
      }
      return;
    }
    for (const root of Object.values(this.layout.roots)) {
      fs.mkdirSync(path.join(root, this.parent), { recursive: true });
      // Closed to sandboxes: who else runs, their pids and their use are none of theirs.
      fs.chmodSync(path.join(root, this.parent), 0o700);
    }
  }

  /**
   * The sandbox's cgroup with these limits (made, or its limits set again when it exists: a restart);
   * answers the `cgroup.procs` files a process writes its pid into to enter it.
   */
  create(sandboxId: string, limits: SandboxLimits): string[] {
    this.prepareParents();
    const dirs = this.dirs(sandboxId);
    for (const d of dirs) fs.mkdirSync(d, { recursive: true });
    writeLimits(this.layout.version, dirs, limits);
    return dirs.map((d) => path.join(d, 'cgroup.procs'));
  }

  /**
   * A command that enters the cgroups (`procs`, from `create`) and then runs `command`: a root shell
   * writes its pid into each and execs, so nothing of the sandbox runs outside them even for an instant.
   */
  static entering(procs: string[], command: string, args: string[]): { command: string; args: string[] } {
    if (procs.length === 0) return { command, args };
    const script = 'while [ "$1" != -- ]; do echo $$ > "$1" || exit 97; shift; done; shift; exec "$@"';
    return {
      command: trustedProgram('sh', 'dash'),
      args: ['-c', script, 'sandbox-cgroup', ...procs, '--', command, ...args],
    };
  }

  /** The sandbox's freezer: v1's freezer.state, or v2's cgroup.freeze; null without one. */
  private freezer(sandboxId: string): { set: (frozen: boolean) => void; frozen: () => boolean } | null {
    const dirs = this.dirs(sandboxId);
    if (this.layout.version === 2) {
      const [dir] = dirs as [string];
      if (!fs.existsSync(path.join(dir, 'cgroup.freeze'))) return null;
      return {
        set: (frozen) => fs.writeFileSync(path.join(dir, 'cgroup.freeze'), frozen ? '1' : '0'),
        frozen: () => /^frozen 1$/m.test(fs.readFileSync(path.join(dir, 'cgroup.events'), 'utf8')),
      };
    }
    const root = this.layout.roots.freezer;
    if (!root) return null;
    const state = path.join(root, this.parent, sandboxId, 'freezer.state');
    if (!fs.existsSync(state)) return null;
    return {
      set: (frozen) => fs.writeFileSync(state, frozen ? 'FROZEN' : 'THAWED'),
      frozen: () => fs.readFileSync(state, 'utf8').trim() === 'FROZEN',
    };
  }

  /**
   * Runs `act` on every process of the sandbox while all of them are frozen (none runs, none forks, so
   * the list is whole), then thaws them: a signal sent in between is the first thing each one handles.
   * False when there is no freezer, or it did not settle within `timeoutMs` (it is thawed again).
   */
  async whileFrozen(sandboxId: string, act: (pids: number[]) => void, timeoutMs = 5000): Promise<boolean> {
    const f = this.freezer(sandboxId);
    if (!f) return false;
    f.set(true);
    try {
      for (const deadline = Date.now() + timeoutMs; !f.frozen();) {
        if (Date.now() > deadline) return false;
        await sleep(5);
      }
      act(this.members(sandboxId));
      return true;
    } finally {
      f.set(false);
    }
  }

  /** Every process in the sandbox's cgroup now. */
  members(sandboxId: string): number[] {
    const [dir] = this.dirs(sandboxId) as [string];
    try {
      return fs.readFileSync(path.join(dir, 'cgroup.procs'), 'utf8').split('\n').filter(Boolean).map(Number);
    } catch {
      return [];
    }
  }

  /** CPU time the sandbox's processes used so far, in nanoseconds (null without accounting). */
  cpuUsageNs(sandboxId: string): number | null {
    const dirs = this.dirs(sandboxId);
    try {
      if (this.layout.version === 2)
        return Number(/^usage_usec (\d+)$/m.exec(fs.readFileSync(path.join(dirs[0]!, 'cpu.stat'), 'utf8'))?.[1]) * 1000;
      const dir = dirs.find((d) => fs.existsSync(path.join(d, 'cpuacct.usage')));
      return dir ? Number(fs.readFileSync(path.join(dir, 'cpuacct.usage'), 'utf8')) : null;
    } catch {
      return null;
    }
  }

  /** How many processes the kernel killed in the sandbox for its memory limit (0 without a cgroup). */
  oomKills(sandboxId: string): number {
    const dirs = this.dirs(sandboxId);
    const [file, line] =
      this.layout.version === 2
        ? [path.join(dirs[0]!, 'memory.events'), /^oom_kill (\d+)$/m]
        : [path.join(dirs[0]!, 'memory.oom_control'), /^oom_kill (\d+)$/m];
    try {
      return Number(line.exec(fs.readFileSync(file, 'utf8'))?.[1] ?? 0);
    } catch {
      return 0;
    }
  }

  /** The sandbox's memory limit in MiB as set, or null. */
  memoryLimitMb(sandboxId: string): number | null {
    const [dir] = this.dirs(sandboxId) as [string];
    try {
      const text = fs
        .readFileSync(path.join(dir, this.layout.version === 2 ? 'memory.max' : 'memory.limit_in_bytes'), 'utf8')
        .trim();
      const bytes = Number(text);
      return Number.isFinite(bytes) && bytes < 2 ** 60 ? Math.round(bytes / 1024 / 1024) : null;
    } catch {
      return null;
    }
  }

  /**
   * Removes the sandbox's cgroups; every process in them must have ended (the caller kills them). A
   * cgroup whose last process is still being reaped is busy for a moment: tried again for a while.
   */
  async remove(sandboxId: string): Promise<void> {
    for (const dir of this.dirs(sandboxId)) {
      for (let attempt = 0; ; attempt++) {
        try {
          fs.rmdirSync(dir);
          break;
        } catch (e) {
          const code = (e as NodeJS.ErrnoException).code;
          if (code === 'ENOENT') break;
          if (code !== 'EBUSY' || attempt >= 100)
            throw new Error(`the cgroup ${dir} could not be removed: ${(e as Error).message}`, { cause: e });
          await sleep(20);
        }
      }
    }
  }
}

/**
 * The cgroups of process sandboxes as SANDBOX_CGROUPS asks: `off` none; `auto` the usable hierarchy
 * when the worker is root, else none and why; `on` the usable hierarchy, or an error saying why not.
 */
export function sandboxCgroups(
  mode: 'auto' | 'on' | 'off',
  parent: string,
  mount?: string,
): { cgroups: SandboxCgroups | undefined; why: string | null } {
  if (mode === 'off') return { cgroups: undefined, why: null };
  const found = process.getuid?.() === 0 ? detectCgroups(mount) : { why: 'the worker does not run as root' };
  let why = 'layout' in found ? null : found.why;
  if ('layout' in found) {
    // Tried now, not at the first start: where the hierarchy refuses it (v2 in a container whose cgroup
    // holds processes: EBUSY), every start would fail.
    const cgroups = new SandboxCgroups(found.layout, parent);
    try {
      cgroups.prepareParents();
      return { cgroups, why: null };
    } catch (e) {
      why = `the cgroup ${parent} could not be prepared (${(e as Error).message})`;
    }
  }
  if (mode === 'on') throw new Error(`SANDBOX_CGROUPS=on, but ${why}`);
  return { cgroups: undefined, why };
}
