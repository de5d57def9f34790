/**
 * What a test file of the conversation contract (test/helpers/conversation-contract.ts) gives it: the
 * runtime, the service's variables, and what its sandbox provider does its own way.
 */
import type { ServiceEnv } from './service';
import type { RuntimeKind } from '../../src/schemas/sandboxes';

/** The runtime's handle as the sandbox record keeps it: where its workspace is, whichever provider. */
export interface ContractHandle {
  workspace: string;
  [key: string]: unknown;
}

export interface ContractTarget {
  runtime: RuntimeKind;
  /** The test file's variables over the test defaults: its spec (`runtime` above) the default. */
  env: ServiceEnv;
  /** The address the scripted LLM and the git host listen on: one the sandbox reaches. */
  host: string;
  /** A URL or path a start clones `bare` (a bare repository under `dir`) from. */
  repository(dir: string, bare: string): Promise<{ url: string; close(): Promise<void> }>;
  /** Whether every process of the sandbox's runtime is stopped; null when none is found (neither answer holds then). */
  frozen(handle: ContractHandle): Promise<boolean | null>;
  /** The runtime dies as in a crash (SIGKILL): nothing of it runs any more. */
  kill(handle: ContractHandle): Promise<void>;
  /** Whether anything of the sandbox still runs. */
  running(sandboxId: string, dir: string): Promise<boolean>;
  /** What a test file leaves behind besides `dir` (containers, volumes). */
  cleanup(sandboxIds: string[], dir: string): Promise<void>;
}
