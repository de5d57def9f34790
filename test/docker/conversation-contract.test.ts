/**
 * The conversation contract (test/helpers/conversation-contract.ts) on docker sandboxes, for each
 * runtime: the project's runtime image and the OpenHands image (the same lock as the process install),
 * both built by the global setup. The scripted LLM and a public git host listen on the bridge's gateway,
 * where the containers reach the host.
 */
import { RUNTIME_KINDS } from '../../src/schemas/sandboxes';
import { conversationContract } from '../helpers/conversation-contract';
import {
  containersOf,
  dockerClient,
  dockerEnv,
  DOCKER_OPENHANDS_SPEC_ID,
  dockerServiceEnv,
  openhandsRuntimeSpec,
  removeSandboxContainers,
} from '../helpers/docker';
import { GitHttpsServer } from '../helpers/git-https-server';

describe.each(RUNTIME_KINDS)('the conversation contract on the %s runtime in a docker sandbox', (runtime) => {
  conversationContract({
    runtime,
    host: dockerEnv().gateway,
    env: (dir) =>
      dockerServiceEnv(
        dir,
        {
          SANDBOX_START_TIMEOUT_MS: '120000',
          SANDBOX_HEALTH_INTERVAL_MS: '2000',
          ...(runtime === 'openhands' ? { DEFAULT_SANDBOX_SPEC_ID: DOCKER_OPENHANDS_SPEC_ID } : {}),
        },
        [openhandsRuntimeSpec()],
      ),
    repository: async (dir) => {
      const host = await new GitHttpsServer(dir, null, dockerEnv().gateway).start();
      return { url: `${host.url}/demo.git`, close: () => host.close() };
    },
    frozen: async (handle) =>
      (
        await dockerClient()
          .getContainer(handle.containerId as string)
          .inspect()
      ).State.Paused,
    kill: async (handle) =>
      void (await dockerClient()
        .getContainer(handle.containerId as string)
        .kill({ signal: 'SIGKILL' })),
    running: async (sandboxId) => (await containersOf(sandboxId)).length > 0,
    cleanup: (ids) => removeSandboxContainers(ids),
  });
});
