/**
 * Keeps the launcher's children running: a child that dies is started again after a backoff (doubling
 * up to a cap, back to the first step once a child has stayed up a while), with the reason and the log
 * file to read logged each time. A child that keeps failing to come back makes the supervisor give up,
 * so the caller can stop everything. The spawn functions are passed in: this file owns only the policy
 * (its options are in supervisor-options.ts).
 *
 * Alive is not enough: a child with a liveness probe (a real round trip: a query, a health call) is
 * probed on a timer, each probe bounded in time, and one that fails its probes N times in a row while the
 * children it depends on pass theirs is killed (SIGKILL to its process group: a frozen process does not
 * act on SIGTERM) and restarted like a crash. A stalled dependency is not its dependents' fault: their
 * failures are not counted while one of their dependencies fails its own probes.
 */
import type { Child } from './child';
import { boundedProbe, killGroup } from './liveness-probe';
import {
  defaultSupervisorOptions,
  type StartFn,
  type SuperviseOptions,
  type SupervisorOptions,
} from './supervisor-options';
import { describeExit, formatMs } from './supervisor-log-text';

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

  /**
   * The dependencies of `entry` that do not answer: a supervised one that is not running, failed its last
   * probe, or has not been probed since it (re)started; an external one whose own probe fails now.
   */
  private async failingDependencies(entry: Entry): Promise<string[]> {
    const failing: string[] = [];
    for (const dep of entry.opts.dependsOn ?? []) {
      if (typeof dep !== 'string') {
        if ((await boundedProbe(dep.alive, this.o.probeTimeoutMs)) !== null) failing.push(dep.name);
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
    const why = await boundedProbe(child.alive!, this.o.probeTimeoutMs);
    if (this.stopping || entry.current !== child || entry.state !== 'running') return;
    entry.probeOk = why === null;
    if (why === null) {
      if (entry.probeFailures > 0) this.o.log.info(`${entry.name} answers its probe again`);
      entry.probeFailures = 0;
    } else if (await this.probeFailed(entry, child, why)) {
      this.killForProbes(entry, child);
      return;
    }
    this.scheduleProbe(entry, child);
  }

  /**
   * Counts a failed probe, unless a dependency does not answer either (then the count starts over).
   * Answers whether the child has now failed enough probes in a row to be killed.
   */
  private async probeFailed(entry: Entry, child: Child, why: string): Promise<boolean> {
    const failing = await this.failingDependencies(entry);
    if (failing.length > 0) {
      entry.probeFailures = 0; // what it failed before its dependency did is not held against it either
      this.o.log.warn(
        `${entry.name} does not answer (${why}) while ${failing.join(', ')} does not either: waiting for ${failing.length > 1 ? 'them' : 'it'}`,
      );
      return false;
    }
    entry.probeFailures++;
    const limit = probeLimit(entry);
    this.o.log.warn(
      `${entry.name} (pid ${child.process.pid}) does not answer: ${why} (${entry.probeFailures} of ${limit})`,
    );
    return entry.probeFailures >= limit;
  }

  /** Kills a child that failed its probes; its exit schedules the restart, like a crash's. */
  private killForProbes(entry: Entry, child: Child): void {
    this.o.log.warn(
      `${entry.name} (pid ${child.process.pid}) failed ${probeLimit(entry)} liveness probes in a row: killing it (SIGKILL to its process group) to restart it`,
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

/** Failed probes in a row that get `entry`'s child killed (SuperviseOptions.probeFailures). */
const probeLimit = (entry: Entry) => entry.opts.probeFailures ?? 3;
