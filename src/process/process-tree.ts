/**
 * Linux process facts read from /proc: a process's state and start time (so a recycled pid is never
 * mistaken for the process we started), and its descendants (a runtime's commands run in sessions of
 * their own, so signalling the runtime's process group alone would miss them).
 */
import fs from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';

export interface ProcStat {
  pid: number;
  /** R running, S sleeping, T stopped, Z zombie, ... */
  state: string;
  ppid: number;
  /** Start time in clock ticks since boot: with the pid, identifies one process for its whole life. */
  startTicks: string;
}

export function readStat(pid: number): ProcStat | null {
  let text: string;
  try {
    text = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return null;
  }
  return parseStat(pid, text);
}

function parseStat(pid: number, text: string): ProcStat {
  // "pid (comm) state ppid ..."; comm may hold spaces and parentheses, so split after the last ')'.
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
  return { pid, state: fields[0]!, ppid: Number(fields[1]), startTicks: fields[19]! };
}

/** `pid` and every process below it, parents before children. */
export function processTree(pid: number): number[] {
  const children = new Map<number, number[]>();
  for (const [p, text] of eachProcessFile('stat')) {
    const s = parseStat(p, text);
    const list = children.get(s.ppid) ?? [];
    list.push(s.pid);
    children.set(s.ppid, list);
  }
  const out: number[] = [];
  const queue = [pid];
  while (queue.length > 0) {
    const p = queue.shift()!;
    out.push(p);
    queue.push(...(children.get(p) ?? []));
  }
  return out;
}

/** Sends `signal` to each pid; those already gone are skipped. */
export function signalAll(pids: readonly number[], signal: NodeJS.Signals): void {
  for (const p of pids) {
    try {
      process.kill(p, signal);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ESRCH') throw e;
    }
  }
}

/**
 * The processes whose environment holds `name=value` (read from /proc/<pid>/environ; processes this one
 * may not read are skipped). Finds a process by what it was started with even when no record of its pid
 * survived, and its descendants too, which inherit the variable.
 */
export async function processesWithEnv(name: string, value: string): Promise<number[]> {
  const wanted = Buffer.from(`${name}=${value}`);
  const found: number[] = [];
  // Read off the event loop (a process's environ waits on its memory lock); compared as bytes, as the
  // kernel keeps it (a directory name need not be valid UTF-8 or Latin-1).
  await Promise.all(
    pids().map(async (pid) => {
      const environ = await fs.promises.readFile(`/proc/${pid}/environ`).catch(() => null);
      if (environ && splitNul(environ).some((entry) => entry.equals(wanted))) found.push(pid);
    }),
  );
  return found.sort((a, b) => a - b);
}

function splitNul(buf: Buffer): Buffer[] {
  const parts: Buffer[] = [];
  for (let start = 0; start < buf.length;) {
    const end = buf.indexOf(0, start);
    parts.push(buf.subarray(start, end === -1 ? buf.length : end));
    start = end === -1 ? buf.length : end + 1;
  }
  return parts;
}

const pids = () =>
  fs
    .readdirSync('/proc')
    .filter((e) => /^\d+$/.test(e))
    .map(Number);

/**
 * Each process's `/proc/<pid>/<file>` now, as [pid, text]; a process that exited between the listing
 * and the read, or one this process may not read, is skipped.
 */
export function* eachProcessFile(file: 'stat'): Generator<[number, string]> {
  for (const pid of pids()) {
    let text: string;
    try {
      text = fs.readFileSync(`/proc/${pid}/${file}`, 'utf8');
    } catch {
      continue;
    }
    yield [pid, text];
  }
}

/** Every live process whose real uid is `uid` (from /proc/<pid>/status); zombies, already dead, are left out. */
export async function processesOfUser(uid: number): Promise<number[]> {
  return (await userProcesses(uid)).map((p) => p.pid);
}

/** processesOfUser with each one's state letter (T: stopped). */
async function userProcesses(uid: number): Promise<{ pid: number; state: string }[]> {
  const found: { pid: number; state: string }[] = [];
  await Promise.all(
    pids().map(async (pid) => {
      const status = await fs.promises.readFile(`/proc/${pid}/status`, 'utf8').catch(() => '');
      const state = /^State:\s+(\S)/m.exec(status)?.[1] ?? 'X';
      if (Number(/^Uid:\s+(\d+)/m.exec(status)?.[1]) === uid && state !== 'Z' && state !== 'X')
        found.push({ pid, state });
    }),
  );
  return found.sort((a, b) => a.pid - b.pid);
}

/**
 * Kills every process of a uid, from here (root), without running anything as that uid: each round
 * stops (SIGSTOP) every process the uid has; once a round finds all of them stopped, none can fork or
 * wake another, and they are killed (a process forking in a loop outruns a list read from /proc, but not
 * a list of stopped processes). No helper runs as the uid in the host's namespaces, where the sandbox
 * could reach the host's /tmp or the worker's environment through its /proc entry. Throws (the activity
 * retries) if some survive.
 */
export async function killUserProcesses(uid: number): Promise<void> {
  await stopThenKill(() => processesOfUser(uid), `processes of uid ${uid}`);
}

/**
 * Kills every process `list` names, however they fork: each round stops (SIGSTOP) those still running;
 * once a round finds all of them stopped, none can fork or wake another, and they are killed. A process
 * that never stops (a wait the kernel does not interrupt for SIGSTOP) is killed anyway after some rounds:
 * SIGKILL ends a killable wait. Done only when the list is empty; throws if some survive.
 */
export async function stopThenKill(list: () => number[] | Promise<number[]>, what = 'processes'): Promise<void> {
  const live = async () => (await list()).filter((pid) => !['Z', 'X'].includes(readStat(pid)?.state ?? 'X'));
  for (let round = 0; round < 200; round++) {
    const listed = await list();
    // Done when all it lists are zombies: one that vanished since the listing may have forked first.
    if (listed.every((pid) => readStat(pid)?.state === 'Z')) return;
    const pids = listed.filter((pid) => !['Z', 'X'].includes(readStat(pid)?.state ?? 'X'));
    if (round >= 20 || pids.every((pid) => ['T', 't'].includes(readStat(pid)?.state ?? 'X')))
      signalAll(pids, 'SIGKILL');
    else signalAll(pids, 'SIGSTOP');
    await sleep(round < 20 ? 2 : 20);
  }
  const left = await live();
  if (left.length > 0) throw new Error(`${what} survive SIGKILL: ${left.join(', ')}`);
}
