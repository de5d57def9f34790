/**
 * A deadline for a piece of work as an AbortSignal: aborted with a TimeoutError (as AbortSignal.timeout's)
 * after `ms`, or with the reason of the first of `signals` that aborts.
 *
 * Not AbortSignal.any([AbortSignal.timeout(ms), ...]): on Node 20 a timeout signal that only any() refers to
 * is garbage collected with its timer (nodejs/node#57736), and the bound silently goes; here the timer holds
 * the signal. `clear()` ends the timer and lets go of `signals`; call it once the work is over, the answer's
 * body read included.
 */
export interface Deadline {
  signal: AbortSignal;
  /** True once the time ran out (not when one of `signals` ended the work first). */
  expired(): boolean;
  /** Gives the work `ms` again from now (a wait between two pieces of an answer); nothing once aborted or cleared. */
  restart(): void;
  clear(): void;
}

/** setTimeout's longest wait; a longer one fires at once. */
const MAX_TIMER_MS = 2 ** 31 - 1;

export function deadline(ms: number, ...signals: (AbortSignal | undefined)[]): Deadline {
  const controller = new AbortController();
  const parents = signals.filter((s): s is AbortSignal => s !== undefined);
  const follow = (s: AbortSignal) => controller.abort(s.reason);
  const listeners = parents.map((s) => [s, () => follow(s)] as const);
  let expired = false;
  const expire = () => {
    expired = !controller.signal.aborted;
    controller.abort(new DOMException(`no end within ${ms} ms`, 'TimeoutError'));
  };
  const wait = Math.min(Math.max(ms, 0), MAX_TIMER_MS);
  let timer = setTimeout(expire, wait);
  timer.unref();
  let cleared = false;
  const restart = () => {
    if (controller.signal.aborted || cleared) return;
    clearTimeout(timer);
    timer = setTimeout(expire, wait);
    timer.unref();
  };
  const clear = () => {
    cleared = true;
    clearTimeout(timer);
    for (const [s, listener] of listeners) s.removeEventListener('abort', listener);
  };
  controller.signal.addEventListener('abort', clear, { once: true });
  for (const [s, listener] of listeners) {
    if (s.aborted) {
      follow(s); // clears the listeners added so far; none is added after
      break;
    }
    s.addEventListener('abort', listener, { once: true });
  }
  return { signal: controller.signal, expired: () => expired, restart, clear };
}
