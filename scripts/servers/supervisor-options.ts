/**
 * How the launcher's children are supervised: the supervisor's options (backoff, give-up, probe timing)
 * with their defaults, each child's own (dependencies, probe failures, what a kill takes along), and the
 * start function a child is supervised by.
 */
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
