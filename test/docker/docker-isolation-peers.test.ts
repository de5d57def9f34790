/**
 * Issue 17 for the docker provider with a shared network (compose's DOCKER_NETWORK) and peers: the peers
 * (the api) join the sandbox's own network, so the sandbox reaches the api by its service name and nothing
 * else of the project (not mongodb), the api reaches the sandbox by its container name, and delete takes
 * the api off the sandbox's network again. Two users' sandboxes: docker-isolation.test.ts.
 */
import { randomBytes } from 'node:crypto';
import { PassThrough } from 'node:stream';
import type Docker from 'dockerode';
import { DockerProvider } from '../../activities/sandbox-providers/docker-provider';
import type { SandboxSpec } from '../../src/schemas/sandboxes';
import { runtimeCall, type Runtime } from '../helpers/agent';
import {
  containersOf,
  dockerClient,
  dockerEnv,
  networksOf,
  removeSandboxContainers,
  runtimeSpec,
  sandboxAddress,
} from '../helpers/docker';
import { eventually } from '../helpers/eventually';
import { runtimeGet } from '../helpers/sandboxes';
import { parseProbe, PROBE_JS, probeCommand } from '../helpers/tcp-probes';
import { COMPOSE_PROJECT_PREFIX } from '../setup/docker';

/** Runs a command in a container (docker exec); its output, stdout and stderr together, and exit code. */
async function execIn(
  container: Docker.Container,
  cmd: string[],
): Promise<{ exitCode: number | null; output: string }> {
  const exec = await container.exec({ Cmd: cmd, AttachStdout: true, AttachStderr: true });
  const stream = await exec.start({ hijack: true, stdin: false });
  const out = new PassThrough();
  let output = '';
  out.on('data', (d: Buffer) => (output += d.toString('utf8')));
  dockerClient().modem.demuxStream(stream, out, out);
  await new Promise<void>((resolve, reject) => {
    stream.on('end', () => resolve());
    stream.on('error', reject);
  });
  return { exitCode: (await exec.inspect()).ExitCode, output };
}

describe("with a shared network (compose's DOCKER_NETWORK) and peers, a docker sandbox reaches only the peers", () => {
  const docker = dockerClient();
  const project = `${COMPOSE_PROJECT_PREFIX}peers-${randomBytes(4).toString('hex')}`;
  const network = `${project}_default`;
  const sandboxId = `peers-${randomBytes(4).toString('hex')}`;
  const key = `acp_${randomBytes(16).toString('hex')}`;
  const services: Record<string, Docker.Container> = {};
  let provider: DockerProvider;

  /** A container of the compose project that serves one TCP port (the api on 8000, mongodb on 27017). */
  const service = async (name: string, port: number) => {
    const c = await docker.createContainer({
      name: `${project}-${name}-1`,
      Image: dockerEnv().images.runtime,
      Cmd: ['node', '-e', `require("http").createServer((q, s) => s.end("${name}")).listen(${port})`],
      Labels: { 'com.docker.compose.project': project, 'com.docker.compose.service': name },
      HostConfig: { NetworkMode: network, Init: true },
      NetworkingConfig: { EndpointsConfig: { [network]: { Aliases: [name] } } },
    });
    await c.start();
    services[name] = c;
  };
  const addressOn = async (c: Docker.Container, net: string) =>
    (await c.inspect()).NetworkSettings.Networks[net]?.IPAddress;

  beforeAll(async () => {
    await docker.createNetwork({
      Name: network,
      Driver: 'bridge',
      CheckDuplicate: true,
      Labels: { 'com.docker.compose.project': project, 'com.docker.compose.network': 'default' },
    });
    await Promise.all([service('api', 8000), service('mongodb', 27017)]);
    provider = new DockerProvider({ docker, publishHost: '127.0.0.1', network, peers: ['api'] });
  });

  afterAll(async () => {
    for (const c of Object.values(services)) await c.remove({ force: true }).catch(() => undefined); // first: the api may be on the sandbox's network
    await removeSandboxContainers([sandboxId]);
    await docker
      .getNetwork(network)
      .remove()
      .catch(() => undefined);
  });

  it('the peers join the sandbox network: the sandbox reaches the api by its service name, not mongodb; delete takes the api off again', async () => {
    const spec: SandboxSpec = runtimeSpec();
    const started = await provider.start({ sandboxId, spec, sessionApiKey: key, controlPlaneUrl: 'http://api:8000' });
    const own = `agent-control-sandbox-${sandboxId}`;
    expect(started.exposedUrls).toEqual([{ name: 'AGENT_SERVER', url: `http://${own}:8000`, port: 8000 }]);
    const [c] = await containersOf(sandboxId);
    const info = await docker.getContainer(c!.Id).inspect();
    expect(Object.keys(info.NetworkSettings.Networks)).toEqual([own]); // not the project's network
    expect(info.HostConfig.PortBindings ?? {}).toEqual({}); // nothing published
    expect(Object.keys((await services.api!.inspect()).NetworkSettings.Networks).sort()).toEqual([network, own].sort());
    expect(Object.keys((await services.mongodb!.inspect()).NetworkSettings.Networks)).toEqual([network]);

    // The host is on the sandbox's network too: its runtime, by its address there.
    const { ip } = await sandboxAddress(sandboxId);
    const rt: Runtime = { url: `http://${ip}:8000`, key, sandboxId };
    await eventually(
      async () => expect(await runtimeGet(rt.url, '/alive')).toEqual({ status: 200, body: { status: 'ok' } }),
      { timeoutMs: 30_000, intervalMs: 200 },
    );
    const mongodbIp = await addressOn(services.mongodb!, network);
    const apiIp = await addressOn(services.api!, network);
    const run = async (command: string) =>
      (await runtimeCall(rt, 'POST', '/api/bash/execute_bash_command', { command, timeout: 30 })).body;
    const probed = await run(probeCommand(['api:8000', `${apiIp}:8000`, `${mongodbIp}:27017`]));
    expect(parseProbe(probed.output)).toEqual({
      'api:8000': 'connected', // the api's alias on the sandbox's network
      [`${apiIp}:8000`]: 'timeout', // the api's address on the project's network: another bridge
      [`${mongodbIp}:27017`]: 'timeout',
    });
    // No such name on the sandbox's network: not found (the engine asks the host's resolvers, which here do not answer).
    const byName = await run('timeout 3 getent hosts mongodb; echo "exit $?"');
    expect(['exit 2\n', 'exit 124\n']).toContain(byName.output);
    expect(
      (
        await run(
          "timeout 10 node -e 'fetch(process.env.CONTROL_PLANE_URL).then(async (r)=>console.log(await r.text()))'",
        )
      ).output,
    ).toBe('api\n');

    // The api reaches the sandbox by its container name (what its AGENT_SERVER says); mongodb does not.
    const fromApi = await execIn(services.api!, ['node', '-e', PROBE_JS, `${own}:8000`]);
    expect(parseProbe(fromApi.output)).toEqual({ [`${own}:8000`]: 'connected' });
    const fromMongodb = await execIn(services.mongodb!, ['node', '-e', PROBE_JS, `${ip}:8000`]);
    expect(parseProbe(fromMongodb.output)).toEqual({ [`${ip}:8000`]: 'timeout' });

    // A start of the running sandbox attaches an api container that is new (compose recreated it).
    await docker
      .getNetwork((await networksOf(sandboxId))[0]!.Id)
      .disconnect({ Container: (await services.api!.inspect()).Id, Force: true });
    await provider.start({ sandboxId, spec, sessionApiKey: key, controlPlaneUrl: 'http://api:8000' });
    expect(Object.keys((await services.api!.inspect()).NetworkSettings.Networks).sort()).toEqual([network, own].sort());

    await provider.delete(sandboxId, started.handle);
    expect(await containersOf(sandboxId)).toEqual([]);
    expect(await networksOf(sandboxId)).toEqual([]);
    const api = await services.api!.inspect();
    expect(api.State.Running).toBe(true);
    expect(Object.keys(api.NetworkSettings.Networks)).toEqual([network]);
  });
});
