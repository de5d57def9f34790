/**
 * The processes of one process sandbox: all of them found (the runtime's tree, its cgroup, its uid or
 * its environment), stopped together for a pause, or killed (what an earlier start left, its cgroup).
 */
import fs from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  processesOfUser,
  processesWithEnv,
  processTree,
  readStat,
  signalAll,
  stopThenKill,
} from '../../src/process/process-tree';
import type { ProcessRuntimeHandle as ProcessHandle } from '../../src/store/runtime-handle';
import type { SandboxCgroups } from './process-cgroups';
import type { ProcessIsolation } from './process-isolation';
import { RUNTIME_FILE } from './process-runtime-spawn';

/** Freeze, stop, thaw: how many times before falling back to rounds of SIGSTOP. */
const FREEZE_ATTEMPTS = 10;

export class SandboxProcesses {
  constructor(
    private readonly isolation: ProcessIsolation | undefined,
    private readonly cgroups: SandboxCgroups | undefined,
  ) {}

  /**
   * A start that died after spawning (a worker killed mid-start) left a runtime behind: the file
   * written beside it names it, and it is stopped here before another is spawned.
   */
  async killEarlierRuntime(dir: string): Promise<void> {
    let recorded: number[] | null = null;
    try {
      recorded = this.tree(JSON.parse(fs.readFileSync(path.join(dir, RUNTIME_FILE), 'utf8')) as ProcessHandle);
    } catch {
      // no file, or one cut short
    }
    if (recorded) signalAll(recorded, 'SIGKILL');
    // What the earlier runtime left in the sandbox's cgroup (its commands, a tmux server) would count against the new one's limits.
    if (this.cgroups) return this.killCgroup(path.basename(dir));
    if (recorded) return;
    // No live runtime on file, yet one was spawned here before (its log exists; it is opened before the
    // fork): a worker killed in the instant between the fork and the write, or a file removed by hand,
    // left one that only its environment names. The runtime and what it ran inherit the variable.
    if (fs.existsSync(path.join(dir, 'runtime.log')))
      signalAll(await processesWithEnv('RUNTIME_SANDBOX_DIR', dir), 'SIGKILL');
  }

  /** The pids of the runtime and its descendants, or null when the runtime process is no longer ours. */
  tree(h: ProcessHandle): number[] | null {
    const stat = readStat(h.pid);
    if (!stat || stat.startTicks !== h.startTicks || stat.state === 'Z' || stat.state === 'X') return null;
    return processTree(h.pid);
  }

  /**
   * Every process of the sandbox: the runtime's tree, and what left it (a daemon, a tmux server): with
   * isolation every process of its uid, without it every process that carries its directory in its
   * environment (best effort: a process may clear its environment).
   */
  async members(h: ProcessHandle): Promise<number[]> {
    const uid = this.uidOf(h.dir);
    const cgroup = this.cgroups?.members(path.basename(h.dir)) ?? [];
    const more = uid
      ? await processesOfUser(uid)
      : cgroup.length > 0
        ? []
        : await processesWithEnv('RUNTIME_SANDBOX_DIR', h.dir);
    return [...new Set([...(this.tree(h) ?? []), ...cgroup, ...more])];
  }

  uidOf(dir: string): number | undefined {
    return (this.isolation && fs.statSync(path.join(dir, 'home'), { throwIfNoEntry: false })?.uid) || undefined;
  }

  /**
   * Stops every process of the sandbox. With a cgroup freezer: all frozen at once, each sent SIGSTOP, then
   * thawed (each handles the SIGSTOP before anything else), so nothing forks away. Without: rounds of
   * SIGSTOP until a fresh listing finds them all stopped; if that never happens, all are continued again
   * and the pause fails.
   */
  async stopAll(h: ProcessHandle): Promise<void> {
    const stopped = (pids: number[]) => pids.every((pid) => ['T', 't', 'Z'].includes(readStat(pid)?.state ?? 'X'));
    // A process frozen in the middle of a fork can leave a child that no SIGSTOP reached (it was not in
    // the listing yet): the next freeze finds it, while the ones already stopped stay so. A few attempts.
    for (let attempt = 0; attempt < FREEZE_ATTEMPTS && this.cgroups; attempt++) {
      if (!(await this.cgroups.whileFrozen(path.basename(h.dir), (pids) => signalAll(pids, 'SIGSTOP')))) break;
      // Thawed, each handles its SIGSTOP when next scheduled: done once every one shows stopped.
      for (const deadline = Date.now() + 1000; Date.now() < deadline; await sleep(5)) {
        if (stopped(await this.members(h))) return;
      }
    }
    for (let round = 0; round < 200; round++) {
      const listed = await this.members(h);
      if (stopped(listed)) return;
      signalAll(listed, 'SIGSTOP');
      await sleep(round < 20 ? 2 : 20);
    }
    signalAll(await this.members(h), 'SIGCONT');
    throw new Error(`the processes of sandbox ${path.basename(h.dir)} could not all be stopped`);
  }

  /** Ends every process in the sandbox's cgroup: frozen, killed, thawed (without a freezer, stopped then killed). */
  async killCgroup(sandboxId: string): Promise<void> {
    const cgroups = this.cgroups!;
    if (await cgroups.whileFrozen(sandboxId, (pids) => signalAll(pids, 'SIGKILL'))) {
      for (
        const deadline = Date.now() + 10_000;
        cgroups.members(sandboxId).some((pid) => readStat(pid)?.state !== 'Z');
      ) {
        if (Date.now() > deadline)
          throw new Error(
            `processes of sandbox ${sandboxId} survive SIGKILL: ${cgroups.members(sandboxId).join(', ')}`,
          );
        await sleep(10);
      }
      return;
    }
    await stopThenKill(() => cgroups.members(sandboxId), `processes of sandbox ${sandboxId}`);
  }
}
