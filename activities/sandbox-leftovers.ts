/**
 * What a deleted sandbox left on its host: a delete its host's worker did not take (that host down, or
 * lost) ends DELETED at once, with its runtime and files still there. A worker of that host removes them:
 * when it starts, and every SWEEP_EVERY_MS while it runs. Not an activity: the host's own bookkeeping.
 */
import { repeatWhileRunning } from '../src/process/repeat-while-running';
import type { SandboxesStore } from '../src/store/sandboxes-store';
import type { ProviderRegistry } from './sandbox-providers';

/** How often a host's worker looks for what deleted sandboxes left on it. */
export const SWEEP_EVERY_MS = 60_000;

export interface LeftoverDeps {
  sandboxes: Pick<SandboxesStore, 'leftOn' | 'setRuntime'>;
  providers: ProviderRegistry;
  /** This worker's host task queue. */
  hostQueue: string;
  log: { info: (message: string, meta: object) => void; warn: (message: string, meta: object) => void };
}

/** Removes what deleted sandboxes left on this host; answers how many were cleared. */
export async function sweepLeftovers(deps: LeftoverDeps): Promise<number> {
  let cleared = 0;
  for (const r of await deps.sandboxes.leftOn(deps.hostQueue)) {
    try {
      await deps.providers(r.spec.provider).delete(r.id, r.runtime);
      await deps.sandboxes.setRuntime(r.id, null, []);
      cleared++;
      deps.log.info('removed what a sandbox deleted without its host left here', { sandboxId: r.id });
    } catch (e) {
      deps.log.warn('could not remove what a deleted sandbox left here; the next sweep tries again', {
        sandboxId: r.id,
        error: (e as Error).message,
      });
    }
  }
  return cleared;
}

/** Sweeps now and every `everyMs` until the returned stop() (which waits for a sweep under way). */
export function sweepLeftoversWhileRunning(deps: LeftoverDeps, everyMs = SWEEP_EVERY_MS): () => Promise<void> {
  return repeatWhileRunning(
    () => sweepLeftovers(deps),
    everyMs,
    (e) => deps.log.warn('the sweep of deleted sandboxes failed; it runs again later', { error: e.message }),
  );
}
