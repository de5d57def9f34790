/**
 * The docker tests' side of the engine the global setup prepared: a client, the images' sandbox specs,
 * and the variables whose api listens where the sandboxes' containers reach it (the host's address on
 * the engine's bridge).
 */
import Docker from 'dockerode';
import fs from 'node:fs';
import path from 'node:path';
import { dockerFromHost, SANDBOX_LABEL } from '../../activities/sandbox-providers/docker-provider';
import type { SandboxSpecInput } from '../../src/schemas/sandboxes';
import { freePort } from '../../src/process/net';
import type { DockerTestEnv } from '../setup/docker';
import { testEnv } from './env';

export const DOCKER_SPEC_ID = 'docker-runtime';

export function dockerEnv(): DockerTestEnv {
  const d = testEnv().docker;
  if (!d)
    throw new Error(
      'the global setup prepared no Docker engine (AGENT_CONTROL_DOCKER_TESTS=off leaves test/docker out)',
    );
  return d;
}

export const dockerClient = (): Docker => dockerFromHost(dockerEnv().host);

/** The runtime image as a sandbox spec, with resource limits. */
export function runtimeSpec(overrides: Partial<SandboxSpecInput> = {}): SandboxSpecInput {
  return {
    id: DOCKER_SPEC_ID,
    provider: 'docker',
    runtime: 'built-in',
    image: dockerEnv().images.runtime,
    command: null,
    working_dir: null,
    initial_env: {},
    memory_mb: 512,
    cpus: 1,
    pids_limit: 512,
    disk_mb: null,
    ...overrides,
  };
}

/** The spec of the real OpenHands agent server's image (the global setup builds it), with room to run. */
export const DOCKER_OPENHANDS_SPEC_ID = 'docker-openhands';
export const openhandsRuntimeSpec = (): SandboxSpecInput =>
  runtimeSpec({
    id: DOCKER_OPENHANDS_SPEC_ID,
    runtime: 'openhands',
    image: dockerEnv().images.openhands,
    memory_mb: 2048,
    pids_limit: 1024,
  });

/**
 * The variables of a docker test file: the api on the bridge's gateway address (the runtimes in containers
 * report events there), the docker spec as the default, published ports on loopback.
 */
export async function dockerServiceEnv(
  dir: string,
  overrides: Record<string, string> = {},
  moreSpecs: SandboxSpecInput[] = [],
): Promise<Record<string, string>> {
  const d = dockerEnv();
  const port = await freePort();
  const specsFile = path.join(dir, 'specs.json');
  fs.writeFileSync(specsFile, JSON.stringify([runtimeSpec(), ...moreSpecs]));
  return {
    DATA_DIR: dir,
    API_HOST: d.gateway,
    API_PORT: String(port),
    SANDBOX_CONTROL_PLANE_URL: `http://${d.gateway}:${port}`,
    SANDBOX_SPECS_FILE: specsFile,
    DEFAULT_SANDBOX_SPEC_ID: DOCKER_SPEC_ID,
    DOCKER_HOST: d.host,
    DOCKER_PUBLISH_HOST: '127.0.0.1',
    SANDBOX_IDLE_TIMEOUT_MS: '0',
    ...overrides,
  };
}

/** Containers (any state) of a sandbox, found by the provider's label. */
export async function containersOf(sandboxId: string): Promise<Docker.ContainerInfo[]> {
  return dockerClient().listContainers({ all: true, filters: { label: [`${SANDBOX_LABEL}=${sandboxId}`] } });
}

export async function volumeExists(name: string): Promise<boolean> {
  try {
    await dockerClient().getVolume(name).inspect();
    return true;
  } catch (e) {
    if ((e as { statusCode?: number }).statusCode === 404) return false;
    throw e;
  }
}

/** Networks of a sandbox (the provider's own per-sandbox network), found by the provider's label. */
export async function networksOf(sandboxId: string): Promise<Docker.NetworkInspectInfo[]> {
  return dockerClient().listNetworks({ filters: { label: [`${SANDBOX_LABEL}=${sandboxId}`] } });
}

/** A sandbox container's address and gateway on its own network (`agent-control-sandbox-<id>`). */
export async function sandboxAddress(sandboxId: string): Promise<{ ip: string; gateway: string; network: string }> {
  const [c, ...more] = await containersOf(sandboxId);
  if (!c || more.length > 0)
    throw new Error(`sandbox ${sandboxId} has ${more.length + (c ? 1 : 0)} containers, not one`);
  const network = `agent-control-sandbox-${sandboxId}`;
  const on = (await dockerClient().getContainer(c.Id).inspect()).NetworkSettings.Networks[network];
  if (!on?.IPAddress || !on.Gateway)
    throw new Error(`the container of sandbox ${sandboxId} has no address on ${network}`);
  return { ip: on.IPAddress, gateway: on.Gateway, network };
}

/** Removes every container, volume and network of the given sandboxes (a test's own clean-up, whatever it left). */
export async function removeSandboxContainers(sandboxIds: Iterable<string>): Promise<void> {
  const docker = dockerClient();
  for (const id of sandboxIds) {
    for (const c of await containersOf(id))
      await docker
        .getContainer(c.Id)
        .remove({ force: true, v: true })
        .catch(() => undefined);
    await docker
      .getVolume(`agent-control-sandbox-${id}`)
      .remove()
      .catch(() => undefined);
    for (const n of await networksOf(id))
      await docker
        .getNetwork(n.Id)
        .remove()
        .catch(() => undefined);
  }
}
