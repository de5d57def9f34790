/** Waits with a bound of the test's own, and work under steady garbage collection, for tests of time bounds. */
import v8 from 'node:v8';
import vm from 'node:vm';

/** `work`, or a failure that says so when it is still running after `ms` (rather than jest's own timeout). */
export function within<T>(ms: number, work: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`still running after ${ms} ms`)), ms);
  });
  return Promise.race([work, late]).finally(() => clearTimeout(timer));
}

/**
 * Runs `work` while full collections run every 50 ms, as they would under memory pressure: a bound whose
 * timer only a weak reference holds is lost. The flag that gives `gc` is set back at once.
 */
export async function whileCollecting<T>(work: () => Promise<T>): Promise<T> {
  v8.setFlagsFromString('--expose-gc');
  const gc = vm.runInNewContext('gc') as () => void;
  v8.setFlagsFromString('--no-expose-gc');
  const collecting = setInterval(gc, 50);
  try {
    return await work();
  } finally {
    clearInterval(collecting);
  }
}
