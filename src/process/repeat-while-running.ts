/**
 * Background bookkeeping of a long-lived process (a worker's sweeps and reports): `task` now, then
 * `everyMs` after each run ends, until the returned stop() (which waits for a run under way). A run that
 * fails goes to `failed` and the next one comes at its time; the timer never keeps the process alive.
 */
export function repeatWhileRunning(
  task: () => Promise<unknown>,
  everyMs: number,
  failed: (e: Error) => void,
): () => Promise<void> {
  let stopped = false;
  let current: Promise<unknown> = Promise.resolve();
  let timer: NodeJS.Timeout | undefined;
  const once = () => {
    current = Promise.resolve()
      .then(task)
      .catch((e: Error) => failed(e))
      .finally(() => {
        if (!stopped) timer = setTimeout(once, everyMs).unref();
      });
  };
  once();
  return async () => {
    stopped = true;
    clearTimeout(timer);
    await current;
  };
}
