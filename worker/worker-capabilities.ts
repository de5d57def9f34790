/**
 * A worker tells the api what its host cannot run (worker-hosts-store.ts): when it starts, then every
 * WORKER_REPORT_EVERY_MS until it stops. A report that fails is logged and made again at the next turn.
 */
import { unrunnableWith, type ProviderRegistry } from '../activities/sandbox-providers';
import { repeatWhileRunning } from '../src/process/repeat-while-running';
import { WORKER_REPORT_EVERY_MS, type WorkerHostsStore } from '../src/store/worker-hosts-store';

export interface CapabilityReportDeps {
  workerHosts: Pick<WorkerHostsStore, 'report'>;
  providers: ProviderRegistry;
  /** This worker's host task queue: the host as the api knows it. */
  hostQueue: string;
  log: { warn: (message: string, meta: object) => void };
}

/** Reports now and every `everyMs` until the returned stop() (which waits for a report under way). */
export function reportCapabilitiesWhileRunning(
  deps: CapabilityReportDeps,
  everyMs = WORKER_REPORT_EVERY_MS,
): () => Promise<void> {
  return repeatWhileRunning(
    () => deps.workerHosts.report(deps.hostQueue, unrunnableWith(deps.providers)),
    everyMs,
    (e) => deps.log.warn('telling the api what this host can run failed; it is told again later', { error: e.message }),
  );
}
