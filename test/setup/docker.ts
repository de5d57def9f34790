/**
 * The Docker side of the test run: an engine (the developer's, or one the run installs and starts as
 * root), the docker-compose command, and the images the docker tests run, built on this machine.
 * AGENT_CONTROL_DOCKER_TESTS=off leaves all of it out (jest.config.js then runs no file of test/docker).
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { engineGet, ensureDockerEngine, type DockerEngine } from '../../scripts/docker/engine';
import { ensureCommands } from '../../scripts/host-packages';
import {
  buildOpenHandsImage,
  buildProjectImages,
  buildServerImages,
  ensureBaseImage,
  type ProjectImages,
  type ServerImages,
} from '../../scripts/docker/images';
import type { AgentServerEnv } from '../../src/process/agent-server-env';
import type { ServerBinaries } from '../../scripts/servers/obtain';
import { dockerFromHost, SANDBOX_LABEL } from '../../activities/sandbox-providers/docker-provider';

const run = promisify(execFile);

export interface DockerTestEnv {
  /** DOCKER_HOST of the engine the tests use. */
  host: string;
  version: string;
  /** `openhands`: the real OpenHands agent server's image (buildOpenHandsImage). */
  images: ProjectImages & ServerImages & { openhands: string };
  /** The host's address on the engine's default bridge: where containers reach what a test serves. */
  gateway: string;
}

/** Label of every compose project a test starts (`docker-compose -p <COMPOSE_PROJECT_PREFIX>...`). */
export const COMPOSE_PROJECT_PREFIX = 'agent-control-test-';

export const dockerTestsEnabled = () => process.env.AGENT_CONTROL_DOCKER_TESTS !== 'off';

/** The IPv4 address of a local interface (`ip`, since Node lists no interface that is down, as an idle bridge is). */
async function bridgeAddress(name: string): Promise<string | undefined> {
  const out = await run('ip', ['-4', '-o', 'addr', 'show', 'dev', name]).catch(() => ({ stdout: '' }));
  return /\binet (\d+\.\d+\.\d+\.\d+)\//.exec(out.stdout)?.[1];
}

export async function prepareDocker(
  binaries: Promise<ServerBinaries>,
  agentServer: Promise<AgentServerEnv>,
  say: (l: string) => void,
): Promise<{ env: DockerTestEnv; engine: DockerEngine }> {
  const started = Date.now();
  const engine = await ensureDockerEngine({ say }).catch((e: Error) => {
    throw new Error(
      `${e.message}. The docker provider's tests need one: start Docker, run the tests as root (they install Debian's docker.io), or set AGENT_CONTROL_DOCKER_TESTS=off to leave them out.`,
    );
  });
  try {
    // The CLI builds the images; docker-compose runs test/docker/compose.test.ts.
    await ensureCommands(
      { docker: 'docker.io', 'docker-compose': 'docker-compose' },
      'the docker tests (or AGENT_CONTROL_DOCKER_TESTS=off)',
      say,
    );
    const base = await ensureBaseImage(engine.host, say);
    const project = await buildProjectImages(engine.host, base, say);
    const servers = await buildServerImages(engine.host, base, await binaries, say);
    const openhands = await buildOpenHandsImage(engine.host, base, await agentServer, say);
    const bridge = JSON.parse((await engineGet(engine.host, '/networks/bridge')).body) as {
      IPAM?: { Config?: { Gateway?: string }[] };
      Options?: Record<string, string>;
    };
    // The engine names the gateway only when it chose it; else it is the bridge interface's own address.
    const bridgeName = bridge.Options?.['com.docker.network.bridge.name'] ?? 'docker0';
    const gateway = bridge.IPAM?.Config?.[0]?.Gateway ?? (await bridgeAddress(bridgeName));
    if (!gateway) throw new Error(`the engine at ${engine.host} reports no gateway for its bridge network`);
    say(
      `Docker ${engine.version} at ${engine.host}${engine.own ? ' (started by this run)' : ''}, images ready in ${Date.now() - started} ms`,
    );
    return {
      env: { host: engine.host, version: engine.version, images: { ...project, ...servers, openhands }, gateway },
      engine,
    };
  } catch (e) {
    await engine.stop();
    throw e;
  }
}

/**
 * Removes what tests left on the engine (sandbox containers and volumes, compose projects) and says what
 * it found: every test cleans up after itself, so anything here is a defect to look at.
 */
export async function cleanUpDocker(host: string): Promise<string[]> {
  const docker = dockerFromHost(host);
  const found: string[] = [];
  const ours = (labels: Record<string, string> | undefined | null) =>
    !!labels &&
    (SANDBOX_LABEL in labels || (labels['com.docker.compose.project'] ?? '').startsWith(COMPOSE_PROJECT_PREFIX));
  for (const c of await docker.listContainers({ all: true })) {
    if (!ours(c.Labels)) continue;
    found.push(`container ${c.Names.join(',')}`);
    await docker
      .getContainer(c.Id)
      .remove({ force: true, v: true })
      .catch(() => undefined);
  }
  for (const v of (await docker.listVolumes()).Volumes ?? []) {
    if (!ours(v.Labels)) continue;
    found.push(`volume ${v.Name}`);
    await docker
      .getVolume(v.Name)
      .remove()
      .catch(() => undefined);
  }
  for (const n of await docker.listNetworks()) {
    if (!ours(n.Labels)) continue;
    found.push(`network ${n.Name}`);
    await docker
      .getNetwork(n.Id)
      .remove()
      .catch(() => undefined);
  }
  return found;
}
