/**
 * The supervisor's liveness probe, what needs none of its state: one probe bounded in time, and the
 * SIGKILL that ends a child that failed its probes (a frozen process does not act on SIGTERM).
 */
import { processTree, signalAll } from '../../src/process/process-tree';
import type { Child } from './child';
import { formatMs } from './supervisor-log-text';

/** A probe run within `timeoutMs`: null when it answered alive, else why not. */
export async function boundedProbe(alive: () => Promise<boolean>, timeoutMs: number): Promise<string | null> {
  let timer: NodeJS.Timeout | undefined;
  const why = await Promise.race([
    alive().then(
      (ok) => (ok ? null : 'the probe answered not alive'),
      (e: Error) => `the probe failed: ${e.message.split('\n')[0]}`,
    ),
    new Promise<string>(
      (resolve) =>
        (timer = setTimeout(() => resolve(`the probe did not answer within ${formatMs(timeoutMs)}`), timeoutMs)),
    ),
  ]);
  clearTimeout(timer);
  return why;
}

/** SIGKILL to a child and its process group (it was started as a group leader); with `descendants`, to every process below it too. */
export function killGroup(child: Child, descendants: boolean): void {
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
