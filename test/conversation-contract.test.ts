/**
 * The conversation contract (test/helpers/conversation-contract.ts) on process sandboxes, for each
 * runtime: the built-in one and the real OpenHands agent server (installed by the global setup from
 * runtimes/openhands/requirements.lock). The containers' run is test/docker/conversation-contract.test.ts.
 */
import path from 'node:path';
import { readStat } from '../src/process/process-tree';
import { RUNTIME_KINDS } from '../src/schemas/sandboxes';
import { conversationContract, type ContractHandle } from './helpers/conversation-contract';
import { killRuntimesUnder, runtimesUnder } from './helpers/sandboxes';

const SPECS = { 'built-in': 'local-process', openhands: 'local-process-openhands' } as const;

/** Every process the sandbox runs (the runtime and what it started carry its directory in their environment). */
const processesOf = (handle: ContractHandle) => runtimesUnder(path.dirname(handle.workspace));

describe.each(RUNTIME_KINDS)('the conversation contract on the %s runtime in a process sandbox', (runtime) => {
  conversationContract({
    runtime,
    host: '127.0.0.1',
    env: {
      DEFAULT_SANDBOX_SPEC_ID: SPECS[runtime],
      SANDBOX_IDLE_TIMEOUT_MS: '0',
      SANDBOX_START_TIMEOUT_MS: '120000',
      SANDBOX_HEALTH_INTERVAL_MS: '2000',
    },
    repository: async (_dir, bare) => ({ url: bare, close: async () => undefined }),
    frozen: async (handle) => {
      const pids = processesOf(handle);
      return pids.length === 0 ? null : pids.every((pid) => readStat(pid)?.state === 'T');
    },
    kill: async (handle) => void process.kill(handle.pid as number, 'SIGKILL'),
    running: async (sandboxId, dir) => runtimesUnder(path.join(dir, 'sandboxes', sandboxId)).length > 0,
    cleanup: async (_ids, dir) => killRuntimesUnder(dir),
  });
});
