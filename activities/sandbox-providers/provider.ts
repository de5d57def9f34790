/**
 * The one interface every sandbox provider implements (process, docker, remote; one file each beside
 * this one). Providers are called only from the sandbox activities; each call is safe to repeat, since
 * activities are retried.
 */
import type { ExposedUrl, RuntimeKind, SandboxProviderName, SandboxSpec } from '../../src/schemas/sandboxes';
import type { RuntimeHandle } from '../../src/store/runtime-handle';
import { Unavailable } from '../../src/errors';

export interface RuntimeStartRequest {
  sandboxId: string;
  spec: SandboxSpec;
  /** The key the runtime must accept (its X-Session-API-Key). */
  sessionApiKey: string;
  /** The control plane's api as the runtime must reach it, to report conversation events (CONTROL_PLANE_URL). */
  controlPlaneUrl: string;
  /** Called while a long start makes progress (an image pull), so the activity can heartbeat. */
  progress?: () => void;
}

export interface StartedRuntime {
  /** Persisted with the sandbox: how to find the runtime again, from any worker. */
  handle: RuntimeHandle;
  /** AGENT_SERVER first; whatever else the provider offers. */
  exposedUrls: ExposedUrl[];
  /** Set when the provider issued the runtime's key itself (remote runtimes do). */
  sessionApiKey?: string;
}

export type RuntimeState = { state: 'running' } | { state: 'paused' } | { state: 'missing'; detail: string };

export interface SandboxProvider {
  readonly name: SandboxProviderName;
  start(req: RuntimeStartRequest): Promise<StartedRuntime>;
  pause(handle: RuntimeHandle): Promise<void>;
  resume(handle: RuntimeHandle): Promise<void>;
  /** Removes the runtime and its storage; a runtime already gone is not an error. */
  delete(sandboxId: string, handle: RuntimeHandle | null): Promise<void>;
  inspect(handle: RuntimeHandle): Promise<RuntimeState>;
  /**
   * Why this provider, as this worker configured it, cannot start a runtime of `runtime` at all (null: it
   * may). A fact of the configuration, not of the moment: a backend that is down is not one.
   */
  unrunnable(runtime: RuntimeKind): string | null;
}

/**
 * Refuses a handle another provider wrote: a sandbox keeps the provider of its spec for its whole life,
 * so this is a damaged record, which no retry repairs.
 */
export function wrongHandle(provider: SandboxProviderName, handle: RuntimeHandle): never {
  throw new ProviderConfigError(
    `the ${provider} provider was given a runtime handle of the ${handle.provider} provider`,
  );
}

/**
 * A provider that cannot work as configured (not set up, bad spec): a domain error that only the
 * operator's change helps (Unavailable without a retry time), so it leaves an activity non-retryable.
 */
export class ProviderConfigError extends Unavailable {}

/** What a sandbox's processes may use together: memory (MiB, swap included), cores, processes and threads, disk (MiB); null: no limit. */
export interface SandboxLimits {
  memoryMb: number | null;
  cpus: number | null;
  pidsLimit: number | null;
  diskMb: number | null;
}

/** A spec's limits, its nulls filled with the operator's defaults (SANDBOX_DEFAULT_*). */
export function limitsOf(
  spec: { memory_mb?: number | null; cpus?: number | null; pids_limit?: number | null; disk_mb?: number | null },
  defaults?: SandboxLimits,
): SandboxLimits {
  return {
    memoryMb: spec.memory_mb ?? defaults?.memoryMb ?? null,
    cpus: spec.cpus ?? defaults?.cpus ?? null,
    pidsLimit: spec.pids_limit ?? defaults?.pidsLimit ?? null,
    diskMb: spec.disk_mb ?? defaults?.diskMb ?? null,
  };
}
