/**
 * Where the sandbox workflow reaches a sandbox's runtime: the provider calls and health checks, on the
 * shared queue or on the task queue of the host it was placed on, and that placement.
 */
import {
  ActivityFailure,
  ApplicationFailure,
  patched,
  proxyActivities,
  proxyLocalActivities,
  TimeoutFailure,
} from '@temporalio/workflow';
import type { Activities } from '../activities';
import type { RuntimeCheck } from '../activities/sandbox-activities';
import { SANDBOX_ACTIVITY_FAILURES, type SandboxWorkflowSettings } from '../src/temporal/shared';
import { HOST_WAIT_MS, SANDBOX_ACTIVITY_OPTIONS } from './activity-options';
import { DEFAULT_HOST_LOST_MS, type ProviderAction } from './sandbox-lifecycle';
import { HOST_QUEUES } from './sandbox-patches';

const { placeSandbox } = proxyLocalActivities<Activities>(SANDBOX_ACTIVITY_OPTIONS.record);

type Proxied = ReturnType<typeof proxyActivities<Activities>>;

/** The calls that act on the sandbox's runtime: where they run depends on where the sandbox lives. */
export interface RuntimeCalls {
  provider: Record<ProviderAction['call'], Proxied['startSandboxRuntime']>;
  check: () => Promise<RuntimeCheck>;
}

const providerCalls = (p: Proxied): RuntimeCalls['provider'] => ({
  start: p.startSandboxRuntime,
  pause: p.pauseSandboxRuntime,
  resume: p.resumeSandboxRuntime,
  delete: p.deleteSandboxRuntime,
});

const sharedProvider = providerCalls(proxyActivities<Activities>(SANDBOX_ACTIVITY_OPTIONS.provider));
// A local health check is a marker in history; one on another queue is three events and a round trip.
const { checkSandboxRuntime: localCheck } = proxyLocalActivities<Activities>(SANDBOX_ACTIVITY_OPTIONS.check);

/** A sandbox any worker reaches: provider calls on the shared queue, health checks local. */
function anywhere(sandboxId: string): RuntimeCalls {
  return {
    provider: sharedProvider,
    check: () => localCheck.executeWithOptions({ summary: 'health check' }, [sandboxId]),
  };
}

/**
 * A sandbox on one host: provider calls on that host's queue, given up when no worker there takes them in
 * time. Health checks are local while the workflow runs on a worker of that host (the one that placed it,
 * as a rule: tasks stay with their worker); once one ran elsewhere, they go to the host's queue.
 */
function onHost(sandboxId: string, taskQueue: string, hostLostMs: number): RuntimeCalls {
  const there = { taskQueue, scheduleToStartTimeout: Math.min(HOST_WAIT_MS, hostLostMs) };
  const { checkSandboxRuntime: remoteCheck } = proxyActivities<Activities>({
    ...SANDBOX_ACTIVITY_OPTIONS.check,
    ...there,
  });
  let elsewhere = false;
  return {
    provider: providerCalls(proxyActivities<Activities>({ ...SANDBOX_ACTIVITY_OPTIONS.provider, ...there })),
    check: async () => {
      if (!elsewhere) {
        try {
          return await localCheck.executeWithOptions({ summary: 'health check' }, [sandboxId]);
        } catch (e) {
          if (!failedWith(e, SANDBOX_ACTIVITY_FAILURES.onAnotherHost)) throw e;
          elsewhere = true;
        }
      }
      return remoteCheck.executeWithOptions({ summary: 'health check on its host' }, [sandboxId]);
    },
  };
}

/** An activity's failure, of `type` (an ApplicationFailure's type anywhere in its causes). */
function failedWith(e: unknown, type: string): boolean {
  for (let c = e, i = 0; c instanceof Error && i < 5; c = c.cause, i++)
    if (c instanceof ApplicationFailure && c.type === type) return true;
  return false;
}

/** The call waited on its host's queue and no worker took it (that host is down or gone). */
export function neverTaken(e: unknown): boolean {
  return (
    e instanceof ActivityFailure && e.cause instanceof TimeoutFailure && e.cause.timeoutType === 'SCHEDULE_TO_START'
  );
}

/**
 * Where the runtime is acted on, settled the first time it is needed (a continued run knows it).
 * Runs recorded before hosts were placed act on the shared queue; they replay so.
 */
export class SandboxPlacement {
  private placed: Promise<RuntimeCalls> | undefined;

  constructor(
    private readonly sandboxId: string,
    private readonly settings: SandboxWorkflowSettings,
    /** (undefined: not placed yet, or by a run from before; the run it continues as places it then.) */
    private queue: string | null | undefined,
  ) {}

  /** The host task queue (null: the shared one), for the run this one continues as. */
  get hostQueue(): string | null | undefined {
    return this.queue;
  }

  /** (A placement that failed is tried again by the next call that needs it: the failure is that call's.) */
  runtimeCalls(): Promise<RuntimeCalls> {
    return (this.placed ??= this.place().catch((e: unknown) => {
      this.placed = undefined;
      throw e;
    }));
  }

  hostGone(): string {
    return `no worker of its host (task queue ${this.queue}) takes its calls`;
  }

  private async place(): Promise<RuntimeCalls> {
    const { sandboxId, settings } = this;
    if (this.queue === undefined) {
      if (!patched(HOST_QUEUES)) return anywhere(sandboxId);
      this.queue = await placeSandbox.executeWithOptions({ summary: 'place the sandbox on a host' }, [sandboxId]);
    }
    return this.queue
      ? onHost(sandboxId, this.queue, settings.hostLostMs ?? DEFAULT_HOST_LOST_MS)
      : anywhere(sandboxId);
  }
}
