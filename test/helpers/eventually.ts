/** Retrying an assertion or a predicate until it passes, for tests that wait on something asynchronous. */
import { setTimeout as sleep } from 'node:timers/promises';

export interface EventuallyOptions {
  /**
   * How long to keep trying. A last try starts at most `intervalMs` after it has run out.
   * @default 10000
   */
  timeoutMs?: number;
  /**
   * The wait between two tries.
   * @default 50
   */
  intervalMs?: number;
  /** What is awaited, for the error when a predicate is still false at the end. */
  what?: string;
}

/** The default options of `eventually`. */
export const defaultEventuallyOptions = (): Required<Omit<EventuallyOptions, 'what'>> => ({
  timeoutMs: 10_000,
  intervalMs: 50,
});

/**
 * Runs `check` until it passes: it passes when it neither throws (an `expect` that fails throws) nor
 * answers `false`; its value is the result. When the time runs out it fails with the last try's error,
 * so the report is the assertion's own, or with "`what` not within N ms" for a predicate still false.
 */
export async function eventually<T>(
  check: () => T | Promise<T>,
  options: EventuallyOptions = {},
): Promise<Exclude<Awaited<T>, false>> {
  const { timeoutMs, intervalMs } = { ...defaultEventuallyOptions(), ...options };
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    let failure: unknown;
    try {
      const value = await check();
      if (value !== false) return value as Exclude<Awaited<T>, false>;
      failure = new Error(`${options.what ?? 'the condition'}: not within ${timeoutMs} ms`);
    } catch (e) {
      failure = e;
    }
    if (Date.now() >= deadline) throw failure;
    await sleep(intervalMs);
  }
}
