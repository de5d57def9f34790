import { DefaultLogger, Runtime } from '@temporalio/worker';
import { isHostPollerNotice } from '../../worker/worker';

/** Keeps the in-process workers of a test file quiet: warnings and errors only. Call before creating one. */
export function quietTemporalRuntime(): void {
  try {
    Runtime.install({
      logger: new DefaultLogger('WARN', (entry) => {
        if (!isHostPollerNotice(entry.message))
          console.error(
            `${new Date(Number(entry.timestampNanos / 1_000_000n)).toISOString()} [${entry.level}] ${entry.message}`,
            entry.meta ?? '',
          );
      }),
    });
  } catch {
    // already installed in this process
  }
}
