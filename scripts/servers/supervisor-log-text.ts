/**
 * How the supervisor's log lines word a process's end and a duration.
 */

/** How a process ended, for a log line: an exit code, a signal, or a spawn error. */
export function describeExit(how: number | string): string {
  if (typeof how === 'number') return `exit code ${how}`;
  return how.startsWith('SIG') ? `signal ${how}` : how;
}

export const formatMs = (ms: number) =>
  ms < 1000 ? `${ms} ms` : ms < 10_000 ? `${(ms / 1000).toFixed(1)} s` : `${Math.round(ms / 1000)} s`;
