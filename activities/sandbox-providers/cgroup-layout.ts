/**
 * The cgroup hierarchy this machine lets the worker use: v2 (one hierarchy) or v1 (one per controller),
 * found under a mount point, with the controllers sandboxes are limited by.
 */
import fs from 'node:fs';
import path from 'node:path';

export type CgroupLayout =
  | { version: 2; root: string }
  | { version: 1; roots: { memory: string; pids: string; cpu: string; cpuacct?: string; freezer?: string } };

const V1_CONTROLLERS = ['memory', 'pids', 'cpu'] as const;
export const V2_CONTROLLERS = ['memory', 'pids', 'cpu'] as const;

const writable = (p: string) => {
  try {
    fs.accessSync(p, fs.constants.W_OK);
    return true;
  } catch {
    return false;
  }
};

/** The controllers a v2 cgroup offers its children. */
const controllersOf = (dir: string) =>
  new Set(fs.readFileSync(path.join(dir, 'cgroup.controllers'), 'utf8').trim().split(/\s+/).filter(Boolean));

/**
 * The hierarchy this machine lets the worker use, or why none: cgroup v2 mounted at `mount` with the
 * memory, pids and cpu controllers, or v1 with those three controllers mounted each under `mount`.
 */
export function detectCgroups(mount = '/sys/fs/cgroup'): { layout: CgroupLayout } | { why: string } {
  try {
    if (fs.existsSync(path.join(mount, 'cgroup.controllers'))) {
      const have = controllersOf(mount);
      const missing = V2_CONTROLLERS.filter((c) => !have.has(c));
      if (missing.length > 0) return { why: `cgroup v2 at ${mount} lacks the ${missing.join(', ')} controller(s)` };
      if (!writable(mount))
        return {
          why: `cgroup v2 at ${mount} is not writable (run the worker as root, with a writable cgroup file system)`,
        };
      return { layout: { version: 2, root: mount } };
    }
    const roots = Object.fromEntries(V1_CONTROLLERS.map((c) => [c, path.join(mount, c)])) as Record<
      (typeof V1_CONTROLLERS)[number],
      string
    >;
    const missing = V1_CONTROLLERS.filter((c) => !fs.existsSync(path.join(roots[c], 'cgroup.procs')));
    if (missing.length > 0)
      return { why: `no cgroup v2 at ${mount}, and cgroup v1 lacks the ${missing.join(', ')} controller(s)` };
    const closed = V1_CONTROLLERS.filter((c) => !writable(roots[c]));
    if (closed.length > 0)
      return { why: `cgroup v1 ${closed.join(', ')} at ${mount} not writable (run the worker as root)` };
    // CPU accounting, for what a sandbox used: its own hierarchy, or the cpu one when they are mounted together.
    const cpuacct = path.join(mount, 'cpuacct');
    const separate =
      fs.existsSync(path.join(cpuacct, 'cpuacct.usage')) &&
      !fs.existsSync(path.join(roots.cpu, 'cpuacct.usage')) &&
      writable(cpuacct);
    // The freezer, to stop (pause, kill) every process at once: a forking loop cannot outrun it.
    const freezer = path.join(mount, 'freezer');
    const hasFreezer = fs.existsSync(path.join(freezer, 'cgroup.procs')) && writable(freezer);
    return {
      layout: { version: 1, roots: { ...roots, ...(separate ? { cpuacct } : {}), ...(hasFreezer ? { freezer } : {}) } },
    };
  } catch (e) {
    return { why: `cgroups at ${mount} unreadable: ${(e as Error).message}` };
  }
}

/** Every hierarchy's directory of `parent` (the sandboxes' cgroups are below it). */
export function parentDirs(layout: CgroupLayout, parent: string): string[] {
  return (layout.version === 2 ? [layout.root] : Object.values(layout.roots)).map((r) => path.join(r, parent));
}
