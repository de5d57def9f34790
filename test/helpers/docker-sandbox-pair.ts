/**
 * Two users, A and B, each with a RUNNING docker sandbox on the given runtime, in a service of their own
 * (startServiceUnderTest, the docker provider, the openhands runtime's spec too); close() ends the service
 * and removes the sandboxes' containers. What test/docker/docker-isolation.test.ts tries B against.
 */
import type { Config } from '../../src/config';
import { runtimeClient } from '../../src/sandboxes/runtime-clients';
import type { RuntimeKind } from '../../src/schemas/sandboxes';
import { runtimeOf, type Runtime } from './agent';
import type { TestApi } from './api';
import {
  DOCKER_OPENHANDS_SPEC_ID,
  DOCKER_SPEC_ID,
  dockerServiceEnv,
  openhandsRuntimeSpec,
  removeSandboxContainers,
  sandboxAddress,
} from './docker';
import { agentUrl, waitForStatus } from './sandboxes';
import { startServiceUnderTest } from './service';

export interface Side {
  user: { userId: string; key: string };
  sandbox: any;
  /** The container's address and its gateway (the host's address) on the sandbox's own network. */
  ip: string;
  gateway: string;
  /** The host port where the runtime is published (on 127.0.0.1). */
  publishedPort: number;
  runtime: Runtime;
}

export interface DockerSandboxPair {
  t: TestApi;
  dataDir: string;
  config: Config;
  a: Side;
  b: Side;
  /** A command in the side's sandbox, through the control plane's client of its runtime (either one). */
  bash: (side: Side, command: string) => Promise<{ exit_code: number; output: string; timed_out: boolean }>;
  close: () => Promise<void>;
}

export async function startDockerSandboxPair(runtime: RuntimeKind): Promise<DockerSandboxPair> {
  const started = new Set<string>();
  const service = await startServiceUnderTest(
    'docker-isolation-',
    (dataDir) => dockerServiceEnv(dataDir, {}, [openhandsRuntimeSpec()]),
    { beforeRemove: () => removeSandboxContainers(started) },
  );
  const { t, dataDir, config } = service;

  const startSide = async (): Promise<Side> => {
    const user = await t.newUser();
    const r = await t.request('POST', '/api/v1/sandboxes', {
      key: user.key,
      body: { sandbox_spec_id: runtime === 'openhands' ? DOCKER_OPENHANDS_SPEC_ID : DOCKER_SPEC_ID },
    });
    expect(r.status).toBe(200);
    started.add(r.body.id);
    const sandbox = await waitForStatus(t, user.key, r.body.id, 'RUNNING', 120_000);
    const { ip, gateway } = await sandboxAddress(sandbox.id);
    const publishedPort = Number(new URL(agentUrl(sandbox)).port);
    return {
      user,
      sandbox,
      ip,
      gateway,
      publishedPort,
      runtime: runtimeOf(sandbox),
    };
  };
  const bash = async (
    side: Side,
    command: string,
  ): Promise<{ exit_code: number; output: string; timed_out: boolean }> =>
    runtimeClient((await t.stores.sandboxes.get(side.sandbox.id))!, t.box).bash(command, {
      cwd: '/workspace',
      timeoutS: 30,
    });

  try {
    const [a, b] = await Promise.all([startSide(), startSide()]);
    return { t, dataDir, config, a, b, bash, close: () => service.close() };
  } catch (e) {
    await service.close();
    throw e;
  }
}
