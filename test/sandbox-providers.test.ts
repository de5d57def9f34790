/**
 * What the docker provider does that a real engine here cannot be made to show (a pull from a registry:
 * none is reachable), against a loopback stand-in that speaks the Engine's API: the container, its
 * network, volume and published port, a network made twice, an engine out of address pools, a shared
 * network, publish hosts and DOCKER_HOST forms. The docker provider runs on a real engine in
 * test/docker; the remote provider is in sandbox-providers-remote.test.ts, the process provider in
 * sandboxes.test.ts.
 */
import Docker from 'dockerode';
import {
  DockerProvider,
  dockerFromHost,
  publishBinding,
  SANDBOX_LABEL,
} from '../activities/sandbox-providers/docker-provider';
import { ProviderConfigError } from '../activities/sandbox-providers/provider';
import type { SandboxSpec } from '../src/schemas/sandboxes';
import { NetworkingEngineStandIn, NO_ADDRESS_POOL } from './helpers/networking-engine-stand-in';
import { CONTROL_PLANE, KEY } from './helpers/provider-start';

describe('docker provider', () => {
  let engine: NetworkingEngineStandIn;
  let provider: DockerProvider;
  const spec: SandboxSpec = {
    id: 'img',
    provider: 'docker',
    runtime: 'built-in',
    image: 'example/runtime:1',
    command: null,
    working_dir: null,
    initial_env: { FOO: 'bar' },
    memory_mb: null,
    cpus: null,
    pids_limit: null,
    disk_mb: null,
  };

  beforeAll(async () => {
    engine = await new NetworkingEngineStandIn().start();
    provider = new DockerProvider({ docker: dockerFromHost(engine.url), publishHost: '127.0.0.1' });
  });
  afterAll(() => engine.close());

  const requestsSince = (n: number) => engine.requests.slice(n).map((r) => `${r.method} ${r.path}`);

  it('pulls a missing image, creates the container with its network, volume, env and published port, starts it', async () => {
    const started = await provider.start({
      sandboxId: 'sb1',
      spec,
      sessionApiKey: KEY,
      controlPlaneUrl: CONTROL_PLANE,
    });
    const id = engine.find('agent-control-sandbox-sb1')!.Id;
    expect(requestsSince(0)).toEqual([
      'GET /containers/agent-control-sandbox-sb1/json',
      'GET /images/example/runtime:1/json',
      'POST /images/create',
      'POST /networks/create',
      'GET /networks',
      'POST /volumes/create',
      'POST /containers/create',
      `GET /containers/${id}/json`,
      `POST /containers/${id}/start`,
      `GET /containers/${id}/json`,
    ]);
    const pull = engine.requests.find((r) => r.path === '/images/create')!;
    expect(pull.query).toEqual({ fromImage: 'example/runtime', tag: '1' });
    const [network, ...others] = engine.findNetworks('agent-control-sandbox-sb1');
    expect(others).toEqual([]);
    expect(network).toMatchObject({ Driver: 'bridge', Labels: { [SANDBOX_LABEL]: 'sb1' } });
    const create = engine.requests.find((r) => r.path === '/containers/create')!;
    expect(create.query.name).toBe('agent-control-sandbox-sb1'); // docker-modem repeats the options in the query; the Engine reads only name
    expect(create.body).toMatchObject({
      Image: 'example/runtime:1',
      WorkingDir: '/workspace',
      Labels: { 'agent-control.sandbox-id': 'sb1' },
      ExposedPorts: { '8000/tcp': {} },
    });
    expect(create.body.HostConfig).toEqual({
      Init: true,
      Privileged: false,
      CapDrop: ['ALL'],
      SecurityOpt: ['no-new-privileges'],
      NetworkMode: network!.Id,
      PortBindings: { '8000/tcp': [{ HostIp: '127.0.0.1', HostPort: '' }] },
      Binds: ['agent-control-sandbox-sb1:/workspace'],
    });
    expect(create.body.Cmd).toBeUndefined();
    expect(create.body.Env).toEqual(
      expect.arrayContaining([
        'FOO=bar',
        `SESSION_API_KEY=${KEY}`,
        'RUNTIME_PORT=8000',
        'RUNTIME_HOST=0.0.0.0',
        'RUNTIME_WORKING_DIR=/workspace',
        `CONTROL_PLANE_URL=${CONTROL_PLANE}`,
      ]),
    );
    expect(engine.volumes.has('agent-control-sandbox-sb1')).toBe(true);

    const container = engine.find('agent-control-sandbox-sb1')!;
    const hostPort = Number(container.hostPorts['8000/tcp']);
    expect(started.exposedUrls).toEqual([
      { name: 'AGENT_SERVER', url: `http://127.0.0.1:${hostPort}`, port: hostPort },
    ]);
    expect(started.handle).toMatchObject({
      provider: 'docker',
      containerId: container.Id,
      volume: 'agent-control-sandbox-sb1',
    });
    expect(started.sessionApiKey).toBeUndefined();
  });

  it('refuses a spec without an image as a configuration error', async () => {
    await expect(
      provider.start({
        sandboxId: 'sb6',
        spec: { ...spec, image: null },
        sessionApiKey: KEY,
        controlPlaneUrl: CONTROL_PLANE,
      }),
    ).rejects.toBeInstanceOf(ProviderConfigError);
  });

  it('works through a client that puts the API version in the path, heartbeating through the pull', async () => {
    const versioned = new Docker({ host: '127.0.0.1', port: Number(new URL(engine.url).port), version: 'v1.45' });
    const p = new DockerProvider({ docker: versioned, publishHost: '127.0.0.1' });
    const n = engine.requests.length;
    let progress = 0;
    const started = await p.start({
      sandboxId: 'sb8',
      spec: { ...spec, image: 'example/runtime:8' },
      sessionApiKey: KEY,
      controlPlaneUrl: CONTROL_PLANE,
      progress: () => progress++,
    });
    const sent = engine.requests.slice(n);
    expect(sent.filter((r) => !r.url.startsWith('/v1.45/'))).toEqual([]);
    expect(sent.find((r) => r.path === '/images/create')?.query).toEqual({ fromImage: 'example/runtime', tag: '8' });
    expect(progress).toBe(2); // one call per line of the stand-in's progress stream
    const container = engine.find('agent-control-sandbox-sb8')!;
    expect(started.exposedUrls).toEqual([
      {
        name: 'AGENT_SERVER',
        url: `http://127.0.0.1:${container.hostPorts['8000/tcp']}`,
        port: Number(container.hostPorts['8000/tcp']),
      },
    ]);
    expect(await p.inspect(started.handle)).toEqual({ state: 'running' });
    await p.delete('sb8', started.handle);
    expect(engine.find('agent-control-sandbox-sb8')).toBeUndefined();
    expect(engine.volumes.has('agent-control-sandbox-sb8')).toBe(false);
    expect(engine.findNetworks('agent-control-sandbox-sb8')).toEqual([]);
  });

  it('a start that finds its network (an earlier attempt, or a concurrent one that made a second) settles on the oldest', async () => {
    const earlier = engine.addNetwork('agent-control-sandbox-sb2', { [SANDBOX_LABEL]: 'sb2' });
    const concurrent = engine.addNetwork('agent-control-sandbox-sb2', { [SANDBOX_LABEL]: 'sb2' });
    const other = engine.addNetwork('agent-control-sandbox-sb2x', { [SANDBOX_LABEL]: 'sb2x' }); // a longer name the Engine's filter also matches
    const n = engine.requests.length;
    const started = await provider.start({
      sandboxId: 'sb2',
      spec,
      sessionApiKey: KEY,
      controlPlaneUrl: CONTROL_PLANE,
    });
    expect(requestsSince(n).slice(2, 6)).toEqual([
      'POST /networks/create',
      'GET /networks',
      `GET /networks/${concurrent.Id}`,
      `DELETE /networks/${concurrent.Id}`,
    ]);
    expect(engine.find('agent-control-sandbox-sb2')!.HostConfig.NetworkMode).toBe(earlier.Id);
    expect(engine.findNetworks('agent-control-sandbox-sb2')).toEqual([earlier]);

    await provider.delete('sb2', started.handle);
    expect(engine.findNetworks('agent-control-sandbox-sb2')).toEqual([]);
    expect(engine.findNetworks('agent-control-sandbox-sb2x')).toEqual([other]);
    await expect(provider.delete('sb2', started.handle)).resolves.toBeUndefined(); // nothing left: not an error
  });

  it('an engine out of address pools is a configuration error that says what to change, and leaves nothing behind', async () => {
    engine.noAddressPool = true;
    try {
      const err = await provider
        .start({ sandboxId: 'sb3', spec, sessionApiKey: KEY, controlPlaneUrl: CONTROL_PLANE })
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ProviderConfigError);
      expect((err as Error).message).toBe(
        `cannot create the sandbox network agent-control-sandbox-sb3: the Docker engine has no address range left (${NO_ADDRESS_POOL}); give dockerd larger default-address-pools, or delete sandboxes`,
      );
      expect(engine.find('agent-control-sandbox-sb3')).toBeUndefined();
      expect(engine.volumes.has('agent-control-sandbox-sb3')).toBe(false);
      expect(engine.findNetworks('agent-control-sandbox-sb3')).toEqual([]);
    } finally {
      engine.noAddressPool = false;
    }
  });

  it('with a network set, containers join it unpublished and get no network of their own', async () => {
    const shared = engine.addNetwork('project_default');
    const p = new DockerProvider({
      docker: dockerFromHost(engine.url),
      publishHost: '127.0.0.1',
      network: 'project_default',
    });
    const started = await p.start({ sandboxId: 'sb4', spec, sessionApiKey: KEY, controlPlaneUrl: CONTROL_PLANE });
    const container = engine.find('agent-control-sandbox-sb4')!;
    expect(container.HostConfig).toEqual({
      Init: true,
      Privileged: false,
      CapDrop: ['ALL'],
      SecurityOpt: ['no-new-privileges'],
      NetworkMode: 'project_default',
      Binds: ['agent-control-sandbox-sb4:/workspace'],
    });
    expect(started.exposedUrls).toEqual([
      { name: 'AGENT_SERVER', url: 'http://agent-control-sandbox-sb4:8000', port: 8000 },
    ]);
    expect(engine.findNetworks('agent-control-sandbox-sb4')).toEqual([]);
    await p.delete('sb4', started.handle);
    expect(engine.findNetworks('project_default')).toEqual([shared]);
  });

  it('publishes on the publish host when it is an address, on loopback for localhost, everywhere for other names', () => {
    expect(publishBinding('127.0.0.1')).toBe('127.0.0.1');
    expect(publishBinding('127.0.0.2')).toBe('127.0.0.2');
    expect(publishBinding('localhost')).toBe('127.0.0.1');
    expect(publishBinding('[::1]')).toBe('::1');
    expect(publishBinding('10.1.2.3')).toBe('10.1.2.3');
    expect(publishBinding('sandboxes.example.com')).toBe('');
  });

  it('reads DOCKER_HOST forms', () => {
    expect((dockerFromHost('unix:///var/run/docker.sock').modem as any).socketPath).toBe('/var/run/docker.sock');
    const tcp = dockerFromHost('tcp://10.0.0.5:2376').modem as any;
    expect([tcp.host, tcp.port, tcp.protocol]).toEqual(['10.0.0.5', 2376, 'http']);
  });
});
