/**
 * Keeps the launcher's children running: a child that dies is started again after a backoff (doubling
 * up to a cap, back to the first step once a child has stayed up a while), with the reason and the log
 * file to read logged each time. A child that keeps failing to come back makes the supervisor give up,
 * so the caller can stop everything. The spawn functions are passed in: this file owns only the policy.
 *
 * Alive is not enough: a child with a liveness probe (a real round trip: a query, a health call) is
 * probed on a timer, each probe bounded in time, and one that fails its probes N times in a row while the
 * children it depends on pass theirs is killed (SIGKILL to its process group: a frozen process does not
 * act on SIGTERM) and restarted like a crash. A stalled dependency is not its dependents' fault: their
 * failures are not counted while one of their dependencies fails its own probes.
 */
import { processTree, signalAll } from '../../src/process/process-tree';
import type { Child } from './child';

export interface SupervisorLog {
  info(message: string): void;
  warn(message: string): void;
}

export interface SupervisorOptions {
  /** Wait before the first restart after a crash. @default 500 */
  initialBackoffMs?: number;
  /** The wait doubles with each quick failure in a row, up to this. @default 30_000 */
  maxBackoffMs?: number;
  /** A child up this long is healthy again: its next crash waits `initialBackoffMs` and counts from zero. @default 60_000 */
  stableAfterMs?: number;
  /** Failed restarts in a row (did not become ready, or died before `stableAfterMs`) before giving up. @default 5 */
  maxFailedRestarts?: number;
  log: SupervisorLog;
  /** Called once when a child keeps failing, with why; nothing more is restarted and the caller stops all. */
  onGiveUp: (name: string, reason: string) => void;
  /** How often a running child's liveness probe runs. @default 5000 */
  probeIntervalMs?: number;
  /** A probe that has not answered in this long failed. @default 5000 */
  probeTimeoutMs?: number;
}

/** How one child is supervised beyond its start function. */
export interface SuperviseOptions {
  /**
   * What this one needs: children by name, or a server this supervisor does not run (an operator's
   * PostgreSQL), given as its own probe. While one of them does not answer, or has not answered since it
   * came back, this one's failures do not count: a stalled dependency is not its fault.
   */
  dependsOn?: (string | { name: string; alive: () => Promise<boolean> })[];
  /** Failed probes in a row that get the child killed and restarted. @default 3 */
  probeFailures?: number;
  /**
   * Whether a child killed for its probes takes every process below it along, whatever their process
   * group: for a server whose helpers must not outlive it (PostgreSQL's frozen backends keep its shared
   * memory, and a new server would not start). Not for the worker: the sandbox runtimes it started
   * (process groups of their own) are meant to outlive it, and the next worker takes them over.
   * @default false: its process group only
   */
  killDescendants?: boolean;
}

export const defaultSupervisorOptions = () =>
  ({
    initialBackoffMs: 500,
    maxBackoffMs: 30_000,
    stableAfterMs: 60_000,
    maxFailedRestarts: 5,
    probeIntervalMs: 5000,
    probeTimeoutMs: 5000,
  }) as const;

/** Starts one child and resolves once it is ready; `onSpawn` is called as soon as its process exists. */
export type StartFn<C extends Child = Child> = (onSpawn: (child: Child) => void) => Promise<C>;

type State = 'starting' | 'running' | 'backoff' | 'stopped';

interface Entry {
  name: string;
  start: StartFn;
  state: State;
  /** The latest spawned process (possibly not ready yet): what `stop` stops. */
  current?: Child;
  /** The start in progress, settled before `stop` returns. */
  pending?: Promise<unknown>;
  timer?: NodeJS.Timeout;
  readyAt: number;
  /** Quick failures in a row: the crash that began the series, then each failed restart. */
  failures: number;
  restarts: number;
  opts: SuperviseOptions;
  /** The latest probe's outcome (null: not probed yet, or not probed at all). */
  probeOk: boolean | null;
  /** Failed probes in a row that counted. */
  probeFailures: number;
  probeTimer?: NodeJS.Timeout;
}

/** How a process ended, for a log line: an exit code, a signal, or a spawn error. */
export function describeExit(how: number | string): string {
  if (typeof how === 'number') return `exit code ${how}`;
  return how.startsWith('SIG') ? `signal ${how}` : how;
}

export class Supervisor {
  private readonly o: Required<Omit<SupervisorOptions, 'log' | 'onGiveUp'>> &
    Pick<SupervisorOptions, 'log' | 'onGiveUp'>;
  private readonly entries: Entry[] = [];
  private stopping = false;
  private stopGraceMs = 10_000;

  constructor(options: SupervisorOptions) {
    this.o = { ...defaultSupervisorOptions(), ...options };
  }

  /** Restarts of `name` so far (tests and logs). */
  restarts(name: string): number {
    return this.entries.find((e) => e.name === name)?.restarts ?? 0;
  }

  /**
   * Starts a child and supervises it from then on. A first start that fails is not retried: the error
   * is the caller's (a wrong binary or a taken port will not fix itself). Stop order is the reverse of
   * the order of these calls.
   */
  async start<C extends Child>(name: string, start: StartFn<C>, opts: SuperviseOptions = {}): Promise<C> {
    if (this.stopping) throw new Error(`${name} not started: stopping`);
    if (this.entries.some((e) => e.name === name)) throw new Error(`${name} is already supervised`);
    const entry: Entry = {
      name,
      start,
      state: 'starting',
      readyAt: 0,
      failures: 0,
      restarts: 0,
      opts,
      probeOk: null,
      probeFailures: 0,
    };
    this.entries.push(entry);
    const pending = start((c) => this.spawned(entry, c));
    entry.pending = pending;
    const child = await pending.finally(() => (entry.pending = undefined));
    this.running(entry, child);
    return child;
  }

  /** Stops every child, the last started first; cancels waiting restarts and waits for starts in progress. */
  async stop(graceMs = 10_000): Promise<void> {
    this.stopping = true;
    this.stopGraceMs = graceMs;
    for (const e of this.entries) {
      clearTimeout(e.timer);
      clearTimeout(e.probeTimer);
    }
    for (const e of [...this.entries].reverse()) {
      e.state = 'stopped';
      await e.current?.stop(graceMs).catch(() => undefined);
      await e.pending?.catch(() => undefined);
      // A process the start in progress spawned meanwhile was told to stop: wait until it has.
      await e.current?.stop(graceMs).catch(() => undefined);
    }
  }

  private spawned(entry: Entry, child: Child): void {
    entry.current = child;
    // A process that appears once stopping began (a restart already past its backoff) is stopped at once.
    if (this.stopping) void child.stop(this.stopGraceMs).catch(() => undefined);
  }

  private running(entry: Entry, child: Child): void {
    entry.state = 'running';
    entry.current = child;
    entry.readyAt = Date.now();
    entry.probeOk = null;
    entry.probeFailures = 0;
    void child.exited.then((how) => {
      clearTimeout(entry.probeTimer);
      this.exited(entry, child, how);
    });
    if (child.alive) this.scheduleProbe(entry, child);
  }

  private scheduleProbe(entry: Entry, child: Child): void {
    entry.probeTimer = setTimeout(() => void this.probe(entry, child), this.o.probeIntervalMs);
  }

  /** A probe run with the supervisor's time bound: null when it answered alive, else why not. */
  private async bounded(alive: () => Promise<boolean>): Promise<string | null> {
    let timer: NodeJS.Timeout | undefined;
    const why = await Promise.race([
      alive().then(
        (ok) => (ok ? null : 'the probe answered not alive'),
        (e: Error) => `the probe failed: ${e.message.split('\n')[0]}`,
      ),
      new Promise<string>(
        (resolve) =>
          (timer = setTimeout(
            () => resolve(`the probe did not answer within ${formatMs(this.o.probeTimeoutMs)}`),
            this.o.probeTimeoutMs,
          )),
      ),
    ]);
    clearTimeout(timer);
    return why;
  }

  /**
   * The dependencies of `entry` that do not answer: a supervised one that is not running, failed its last
   * probe, or has not been probed since it (re)started; an external one whose own probe fails now.
   */
  private async failingDependencies(entry: Entry): Promise<string[]> {
    const failing: string[] = [];
    for (const dep of entry.opts.dependsOn ?? []) {
      if (typeof dep !== 'string') {
        if ((await this.bounded(dep.alive)) !== null) failing.push(dep.name);
        continue;
      }
      const e = this.entries.find((x) => x.name === dep);
      if (!e) continue;
      const probed = e.current?.alive !== undefined;
      if (e.state !== 'running' || (probed && e.probeOk !== true)) failing.push(dep);
    }
    return failing;
  }

  /** One bounded probe; a run of failures that counts kills the child (its exit restarts it). */
  private async probe(entry: Entry, child: Child): Promise<void> {
    if (this.stopping || entry.current !== child || entry.state !== 'running') return;
    const why = await this.bounded(child.alive!);
    if (this.stopping || entry.current !== child || entry.state !== 'running') return;
    entry.probeOk = why === null;
    if (why === null) {
      if (entry.probeFailures > 0) this.o.log.info(`${entry.name} answers its probe again`);
      entry.probeFailures = 0;
    } else {
      const failing = await this.failingDependencies(entry);
      if (failing.length > 0) {
        entry.probeFailures = 0; // what it failed before its dependency did is not held against it either
        this.o.log.warn(
          `${entry.name} does not answer (${why}) while ${failing.join(', ')} does not either: waiting for ${failing.length > 1 ? 'them' : 'it'}`,
        );
      } else {
        entry.probeFailures++;
        const limit = entry.opts.probeFailures ?? 3;
        this.o.log.warn(
          `${entry.name} (pid ${child.process.pid}) does not answer: ${why} (${entry.probeFailures} of ${limit})`,
        );
        if (entry.probeFailures >= limit) {
          this.o.log.warn(
            `${entry.name} (pid ${child.process.pid}) failed ${limit} liveness probes in a row: killing it (SIGKILL to its process group) to restart it`,
          );
          try {
            killGroup(child, entry.opts.killDescendants ?? false);
          } catch (e) {
            this.o.log.warn(`${entry.name} (pid ${child.process.pid}) could not be killed: ${(e as Error).message}`);
          }
          // Its exit schedules the restart; one that does not come (a process stuck in the kernel) is said.
          const stuck = setTimeout(
            () => this.o.log.warn(`${entry.name} (pid ${child.process.pid}) has not exited 30 s after SIGKILL`),
            30_000,
          );
          void child.exited.then(() => clearTimeout(stuck));
          return;
        }
      }
    }
    this.scheduleProbe(entry, child);
  }

  private exited(entry: Entry, child: Child, how: number | string): void {
    // Only the exit of the process in charge counts, once: a restart is never scheduled twice.
    if (this.stopping || entry.state !== 'running' || entry.current !== child) return;
    entry.probeOk = false; // its dependents wait for it rather than count against themselves
    const upMs = Date.now() - entry.readyAt;
    if (upMs >= this.o.stableAfterMs) entry.failures = 0;
    entry.failures++;
    const why = `${entry.name} (pid ${child.process.pid}) exited unexpectedly with ${describeExit(how)} after ${formatMs(upMs)} up; see ${child.logFile}`;
    this.failed(entry, why);
  }

  /** Counts a quick failure and schedules the next start, or gives up. */
  private failed(entry: Entry, why: string): void {
    const failedRestarts = entry.failures - 1;
    if (failedRestarts >= this.o.maxFailedRestarts) {
      entry.state = 'stopped';
      this.o.onGiveUp(entry.name, `${entry.name} failed ${failedRestarts} restarts in a row (last: ${why})`);
      return;
    }
    const delay = Math.min(this.o.maxBackoffMs, this.o.initialBackoffMs * 2 ** (entry.failures - 1));
    this.o.log.warn(`${why}; restarting in ${formatMs(delay)}`);
    entry.state = 'backoff';
    entry.timer = setTimeout(() => this.restart(entry), delay);
  }

  private restart(entry: Entry): void {
    entry.timer = undefined;
    if (this.stopping || entry.state !== 'backoff') return;
    entry.state = 'starting';
    entry.restarts++;
    const began = Date.now();
    const pending = entry.start((c) => this.spawned(entry, c));
    entry.pending = pending;
    void pending.then(
      (child) => {
        entry.pending = undefined;
        if (this.stopping) return;
        this.o.log.info(`${entry.name} restarted (pid ${child.process.pid}), ready in ${formatMs(Date.now() - began)}`);
        this.running(entry, child);
      },
      (e: Error) => {
        entry.pending = undefined;
        if (this.stopping) return;
        entry.failures++;
        // The error's first line and the last line of the output it quotes (a log tail): why, in one line.
        const [first, ...rest] = e.message.split('\n');
        const last = rest.filter((l) => l.trim()).at(-1);
        this.failed(
          entry,
          `restart of ${entry.name} failed: ${first!.replace(/:$/, '')}${last ? `, ending: ${last.slice(-300)}` : ''}`,
        );
      },
    );
  }
}

/** SIGKILL to a child and its process group (it was started as a group leader); with `descendants`, to every process below it too. */
function killGroup(child: Child, descendants: boolean): void {
  const pid = child.process.pid;
  if (pid === undefined) return;
  const tree = descendants ? processTree(pid) : [];
  try {
    process.kill(-pid, 'SIGKILL');
  } catch {
    // not a group leader after all
  }
  signalAll(tree, 'SIGKILL');
}

const formatMs = (ms: number) =>
  ms < 1000 ? `${ms} ms` : ms < 10_000 ? `${(ms / 1000).toFixed(1)} s` : `${Math.round(ms / 1000)} s`;
