/**
 * CPU time of the benchmark's processes over one phase, read from /proc (Linux): a snapshot before the
 * phase and one after, the difference per process.
 *
 * A process's CPU is utime + stime (fields 14 and 15 of /proc/<pid>/stat, every thread included) plus
 * cutime + cstime (fields 16 and 17: the CPU of its children that have exited and that it has waited
 * for). The second pair keeps what short-lived processes used after they are gone from /proc: a
 * PostgreSQL backend or autovacuum worker reaped by the postmaster, a bash or git of a start reaped by
 * the runtime. Lost only: a process that exits after its parent did (reparented to init), or one whose
 * parent is outside what is counted. All in clock ticks (USER_HZ, 1/100 s).
 *
 * Two ways to say which processes are one row:
 *   - a process group: the processes whose pgrp is the leader's pid (a server spawned detached, and
 *     whatever it forks without leaving the group);
 *   - a process tree: a process and its descendants (by ppid), for processes that share a group with
 *     others (the api and the worker run in this benchmark's own group) or whose children start groups
 *     or sessions of their own (the runtime runs each command detached; PostgreSQL's postmaster forks
 *     every backend and auxiliary process into a session of its own).
 */
import { eachProcessFile } from '../src/process/process-tree';
import fs from 'node:fs';

/** USER_HZ: the unit of /proc's times (`getconf CLK_TCK`); 100 on every Linux architecture Node runs on. */
const TICKS_PER_SECOND = 100;

interface Proc {
  pid: number;
  ppid: number;
  pgrp: number;
  /** utime + stime, in ticks. */
  own: number;
  /** cutime + cstime: children exited and waited for, in ticks. */
  reaped: number;
}

/** Every process now, by pid. */
export function readProcs(): Map<number, Proc> {
  const procs = new Map<number, Proc>();
  for (const [pid, text] of eachProcessFile('stat')) {
    // "pid (comm) state ppid pgrp ..."; comm may hold spaces and parentheses: split after the last ')'.
    // f[0] is field 3 (state), so field n is f[n - 3].
    const f = text.slice(text.lastIndexOf(')') + 2).split(' ');
    const n = (field: number) => Number(f[field - 3]);
    procs.set(pid, { pid, ppid: n(4), pgrp: n(5), own: n(14) + n(15), reaped: n(16) + n(17) });
  }
  return procs;
}

/** One row: a name, how its processes are chosen, and the choice made on a snapshot. */
export interface CpuScope {
  name: string;
  /** How it is counted, for the table: "process group 123", "pid 456 and descendants". */
  how: string;
  pids(procs: Map<number, Proc>): number[];
}

/** The processes of the group `pgid` leads. */
export function processGroup(name: string, pgid: number): CpuScope {
  return {
    name,
    how: `process group ${pgid}`,
    pids: (procs) => [...procs.values()].filter((p) => p.pgrp === pgid).map((p) => p.pid),
  };
}

/** `pid` and its descendants, leaving out the subtrees of the processes `exclude` names (counted in rows of their own). */
export function processTree(
  name: string,
  pid: number,
  exclude: (procs: Map<number, Proc>) => number[] = () => [],
  how = `pid ${pid} and descendants`,
): CpuScope {
  return {
    name,
    how,
    pids: (procs) => descendants(procs, [pid], new Set(exclude(procs))),
  };
}

function descendants(procs: Map<number, Proc>, roots: number[], exclude: Set<number>): number[] {
  const children = new Map<number, number[]>();
  for (const p of procs.values()) children.set(p.ppid, [...(children.get(p.ppid) ?? []), p.pid]);
  const out: number[] = [];
  const queue = roots.filter((r) => procs.has(r) && !exclude.has(r));
  while (queue.length > 0) {
    const p = queue.shift()!;
    out.push(p);
    queue.push(...(children.get(p) ?? []).filter((c) => !exclude.has(c)));
  }
  return out;
}

/** The children of `parent` that lead a process group of their own (spawned detached). */
export const detachedChildren = (procs: Map<number, Proc>, parent: number): number[] =>
  [...procs.values()].filter((p) => p.ppid === parent && p.pgrp === p.pid).map((p) => p.pid);

/** Several roots and their descendants as one row. */
export function processTrees(name: string, roots: number[]): CpuScope {
  return {
    name,
    how: `pid ${roots.join(', ')} and descendants`,
    pids: (procs) => descendants(procs, roots, new Set()),
  };
}

export interface CpuSnapshot {
  /** performance.now() when taken. */
  at: number;
  /** Per scope: ticks, and how many processes it counted. */
  rows: { ticks: number; processes: number }[];
  /** This process's own CPU (process.cpuUsage), in µs. */
  self: number;
  /** The whole machine from /proc/stat: busy ticks, summed over cores. */
  machineBusy: number;
  cores: number;
}

function machine(): { busy: number; cores: number } {
  const lines = fs.readFileSync('/proc/stat', 'utf8').split('\n');
  // cpu user nice system idle iowait irq softirq steal guest guest_nice (guest is inside user already)
  const t = lines[0]!.trim().split(/\s+/).slice(1).map(Number);
  const busy = t[0]! + t[1]! + t[2]! + t[5]! + t[6]! + (t[7] ?? 0);
  return { busy, cores: lines.filter((l) => /^cpu\d+ /.test(l)).length };
}

export function cpuSnapshot(scopes: CpuScope[]): CpuSnapshot {
  const procs = readProcs();
  const u = process.cpuUsage();
  const m = machine();
  return {
    at: performance.now(),
    rows: scopes.map((s) => {
      const pids = s.pids(procs);
      return {
        ticks: pids.reduce((sum, pid) => sum + procs.get(pid)!.own + procs.get(pid)!.reaped, 0),
        processes: pids.length,
      };
    }),
    self: u.user + u.system,
    machineBusy: m.busy,
    cores: m.cores,
  };
}

/** CPU seconds per scope between two snapshots. */
export const cpuSeconds = (before: CpuSnapshot, after: CpuSnapshot): number[] =>
  after.rows.map((r, i) => (r.ticks - before.rows[i]!.ticks) / TICKS_PER_SECOND);

/**
 * The table rows (header first) for printTable: process, CPU s, ms per start, share of the rows' total;
 * then the total, this benchmark process (the load, not in the total) and the whole machine.
 */
export function cpuRows(scopes: CpuScope[], before: CpuSnapshot, after: CpuSnapshot, starts: number): string[][] {
  const secs = cpuSeconds(before, after);
  const total = secs.reduce((a, b) => a + b, 0);
  const wall = (after.at - before.at) / 1000;
  const self = (after.self - before.self) / 1e6;
  const busy = (after.machineBusy - before.machineBusy) / TICKS_PER_SECOND;
  const row = (name: string, s: number, share: string) => [name, s.toFixed(2), ((s * 1000) / starts).toFixed(1), share];
  const pctOf = (s: number, of: number) => (of > 0 ? `${((s / of) * 100).toFixed(0)}%` : '-');
  return [
    ['process (counted as)', 'CPU s', 'CPU ms / start', 'share'],
    ...scopes.map((s, i) =>
      row(`${s.name} (${s.how}: ${after.rows[i]!.processes} now)`, secs[i]!, pctOf(secs[i]!, total)),
    ),
    row('total of the processes above', total, '100%'),
    row('this benchmark process (the load; not in the total)', self, '-'),
    // Other programs on the machine are in it: no per-start figure.
    [
      `whole machine, /proc/stat (${after.cores} cores x ${wall.toFixed(1)} s = ${(after.cores * wall).toFixed(1)} CPU s)`,
      busy.toFixed(2),
      '-',
      `${pctOf(busy, after.cores * wall)} busy`,
    ],
  ];
}

/** "name 0.12 s, ..." for a short window (idle or a tail), largest first. */
export function cpuLine(scopes: CpuScope[], before: CpuSnapshot, after: CpuSnapshot): string {
  const secs = cpuSeconds(before, after);
  const total = secs.reduce((a, b) => a + b, 0);
  const parts = scopes.map((s, i) => [s.name, secs[i]!] as const).sort((a, b) => b[1] - a[1]);
  return `${total.toFixed(2)} CPU s (${parts.map(([n, s]) => `${n} ${s.toFixed(2)}`).join(', ')})`;
}
