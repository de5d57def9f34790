/**
 * What a provider needs to find its sandbox's runtime again, persisted with the sandbox so any worker can.
 * One shape per provider (activities/sandbox-providers/), told apart by `provider`; each provider writes
 * and reads only its own. Defined here, below the providers, because the store keeps them.
 */

/** A child process of a worker: its pid, and its start time that tells it from a later process given the same pid. */
export interface ProcessRuntimeHandle {
  provider: 'process';
  pid: number;
  startTicks: string;
  port: number;
  dir: string;
  /** The runtime's working directory (absolute); absent in handles recorded before it was kept. */
  workspace?: string;
}

export interface DockerRuntimeHandle {
  provider: 'docker';
  containerId: string;
  container: string;
  volume: string;
  /** The runtime's working directory in the container; absent in handles recorded before it was kept. */
  workspace?: string;
}

export interface RemoteRuntimeHandle {
  provider: 'remote';
  sessionId: string;
  runtimeId: string;
  url: string;
}

export type RuntimeHandle = ProcessRuntimeHandle | DockerRuntimeHandle | RemoteRuntimeHandle;
