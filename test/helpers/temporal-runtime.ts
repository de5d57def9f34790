import { DefaultLogger, Runtime } from '@temporalio/worker';

/** Keeps the in-process workers of a test file quiet: warnings and errors only. Call before creating one. */
export function quietTemporalRuntime(): void {
  try {
    Runtime.install({ logger: new DefaultLogger('WARN') });
  } catch {
    // already installed in this process
  }
}
