/**
 * The deadline of a command spawned as its own process group (detached): the whole group is killed when
 * its time runs out or when the signal aborts (an interrupted agent step), including a signal that was
 * aborted before the command started. Shared by the bash endpoint, the terminal tool and hooks.
 */
import type { ChildProcess } from 'node:child_process';

export interface GroupDeadline {
  readonly timedOut: boolean;
  readonly aborted: boolean;
  /** Call when the command has ended: stops the timer and the abort listener. */
  clear(): void;
}

export function groupDeadline(child: ChildProcess, timeoutMs: number, signal?: AbortSignal): GroupDeadline {
  const state = { timedOut: false, aborted: false };
  const kill = () => {
    try {
      process.kill(-child.pid!, 'SIGKILL');
    } catch {
      // already gone
    }
  };
  const timer = setTimeout(() => {
    state.timedOut = true;
    kill();
  }, timeoutMs);
  const onAbort = () => {
    state.aborted = true;
    kill();
  };
  if (signal?.aborted)
    onAbort(); // a listener added now would never fire
  else signal?.addEventListener('abort', onAbort, { once: true });
  return {
    get timedOut() {
      return state.timedOut;
    },
    get aborted() {
      return state.aborted;
    },
    clear() {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
    },
  };
}
