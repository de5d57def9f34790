/**
 * What the docker provider does that a real engine here cannot be made to show (a pull from a registry:
 * none is reachable), and the remote provider's translation to its service's protocol, against loopback
 * stand-ins that speak them. The docker provider runs on a real engine in test/docker; the process
 * provider in sandboxes.test.ts.
 */
import Docker from 'dockerode';
import type http from 'node:http';
import {
  DockerProvider,
  dockerFromHost,
  publishBinding,
  SANDBOX_LABEL,
} from '../activities/sandbox-providers/docker-provider';
import { ProviderConfigError } from '../activities/sandbox-providers/provider';
import { RemoteProvider } from '../activities/sandbox-providers/remote-provider';
import type { SandboxSpec } from '../src/schemas/sandboxes';
import { DockerEngineStandIn } from './helpers/docker-engine-stand-in';
import { RemoteRuntimeStandIn } from './helpers/remote-runtime-stand-in';

const KEY = 'acp_session_key_for_provider_tests';
const CONTROL_PLANE = 'http://127.0.0.1:9';

interface FakeNetwork {
  Id: string;
  Name: string;
  Created: string;
  Driver: string;
  Labels: Record<string, string>;
}

/** The Engine's words when its address pools are used up. */
const NO_ADDRESS_POOL =
  'could not find an available, non-overlapping IPv4 address pool among the defaults to assign to the network';

/** The stand-in with the Engine's network routes (create, list, remove), its JSON shapes and status codes. */
class NetworkingEngineStandIn extends DockerEngineStandIn {
  readonly networks = new Map<string, FakeNetwork>();
  /** When set, network creation fails as on an engine whose address pools are used up. */
  noAddressPool = false;
  private nextNetwork = 1;

  /** The networks by id or name (names need not be unique: the Engine keys networks by id). */
  findNetworks(idOrName: string): FakeNetwork[] {
    const byId = this.networks.get(idOrName);
    return byId ? [byId] : [...this.networks.values()].filter((n) => n.Name === idOrName);
  }

  /** Adds a network as the Engine makes one (a test's stand-in for another attempt's creation). */
  addNetwork(Name: string, Labels: Record<string, string> = {}): FakeNetwork {
    const i = this.nextNetwork++;
    const n = {
      Id: `n${String(i).padStart(12, '0')}`,
      Name,
      Created: new Date(Date.UTC(2026, 0, 1) + i * 1000).toISOString(),
      Driver: 'bridge',
      Labels,
    };
    this.networks.set(n.Id, n);
    return n;
  }

  protected override async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const url = new URL(req.url!, 'http://x');
    const path = decodeURIComponent(url.pathname.replace(/^\/v\d+\.\d+/, ''));
    if (!path.startsWith('/networks')) return super.handle(req, res);
    const body = await this.readJson(req);
    this.requests.push({ method: req.method!, url: req.url!, path, query: Object.fromEntries(url.searchParams), body });
    const json = (status: number, value?: unknown) => {
      res.writeHead(status, { 'Content-Type': 'application/json' });
      res.end(value === undefined ? '' : JSON.stringify(value));
    };
    let m: RegExpMatchArray | null;
    if (req.method === 'POST' && path === '/networks/create') {
      if (this.noAddressPool) return json(500, { message: NO_ADDRESS_POOL });
      if (body.CheckDuplicate && this.findNetworks(body.Name).length > 0)
        return json(409, { message: `network with name ${body.Name} already exists` });
      return json(201, { Id: this.addNetwork(body.Name, body.Labels ?? {}).Id, Warning: '' });
    }
    if (req.method === 'GET' && path === '/networks') {
      const filters = JSON.parse(url.searchParams.get('filters') ?? '{}') as { label?: string[]; name?: string[] };
      const labelled = (n: FakeNetwork, l: string) => {
        const [k, ...v] = l.split('=');
        return k! in n.Labels && (v.length === 0 || n.Labels[k!] === v.join('='));
      };
      // The Engine's name filter matches a part of the name.
      const matches = (n: FakeNetwork) =>
        (filters.label ?? []).every((l) => labelled(n, l)) && (filters.name ?? []).every((x) => n.Name.includes(x));
      return json(200, [...this.networks.values()].filter(matches));
    }
    if (req.method === 'GET' && (m = path.match(/^\/networks\/([^/]+)$/))) {
      const found = this.findNetworks(m[1]!);
      if (found.length !== 1) return json(404, { message: `network ${m[1]} not found` });
      return json(200, { ...found[0], Containers: {} }); // containers join by NetworkMode here: none is attached later
    }
    if (req.method === 'DELETE' && (m = path.match(/^\/networks\/(.+)$/))) {
      const found = this.findNetworks(m[1]!);
      if (found.length !== 1)
        return json(found.length ? 400 : 404, {
          message: found.length ? `network ${m[1]} is ambiguous` : `No such network: ${m[1]}`,
        });
      const n = found[0]!;
      if ([...this.containers.values()].some((c) => [n.Id, n.Name].includes(c.HostConfig?.NetworkMode))) {
        return json(403, {
          message: `error while removing network: network ${n.Name} id ${n.Id} has active endpoints`,
        });
      }
      this.networks.delete(n.Id);
      return json(204);
    }
    json(404, { message: `page not found: ${req.method} ${path}` });
  }
}

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

describe('remote provider', () => {
  const API_KEY = 'remote-api-key';
  let api: RemoteRuntimeStandIn;
  let provider: RemoteProvider;
  const spec: SandboxSpec = {
    id: 'remote',
    provider: 'remote',
    runtime: 'built-in',
    image: 'example/runtime:2',
    command: ['serve'],
    working_dir: '/work',
    initial_env: { A: '1' },
    memory_mb: null,
    cpus: null,
    pids_limit: null,
    disk_mb: null,
  };

  beforeAll(async () => {
    api = await new RemoteRuntimeStandIn(API_KEY).start();
    provider = new RemoteProvider({ baseUrl: api.url, apiKey: API_KEY });
  });
  afterAll(() => api.close());

  it('starts a runtime with the spec and takes the URL and key the API issued', async () => {
    const started = await provider.start({ sandboxId: 'r1', spec, sessionApiKey: KEY, controlPlaneUrl: CONTROL_PLANE });
    const start = api.requests.find((r) => r.path === '/start')!;
    expect(start).toEqual({
      method: 'POST',
      path: '/start',
      apiKey: API_KEY,
      body: {
        image: 'example/runtime:2',
        command: ['serve'],
        working_dir: '/work',
        environment: { A: '1', CONTROL_PLANE_URL: CONTROL_PLANE },
        session_id: 'r1',
        session_api_key: KEY,
      },
    });
    expect(started.exposedUrls).toEqual([{ name: 'AGENT_SERVER', url: 'https://rt-1.runtimes.example', port: 443 }]);
    expect(started.sessionApiKey).toBe('remote-issued-key-1');
    expect(started.handle).toEqual({
      provider: 'remote',
      sessionId: 'r1',
      runtimeId: 'rt-1',
      url: 'https://rt-1.runtimes.example',
    });
  });

  it('a repeated start finds the session instead of starting a second runtime', async () => {
    const n = api.requests.length;
    const again = await provider.start({ sandboxId: 'r1', spec, sessionApiKey: KEY, controlPlaneUrl: CONTROL_PLANE });
    expect(api.requests.slice(n).map((r) => `${r.method} ${r.path}`)).toEqual(['GET /sessions/r1']);
    expect((again.handle as any).runtimeId).toBe('rt-1');
  });

  it('pauses, resumes, inspects and stops by runtime id', async () => {
    const { handle } = await provider.start({
      sandboxId: 'r2',
      spec,
      sessionApiKey: KEY,
      controlPlaneUrl: CONTROL_PLANE,
    });
    const n = api.requests.length;
    await provider.pause(handle);
    expect(await provider.inspect(handle)).toEqual({ state: 'paused' });
    await provider.resume(handle);
    expect(await provider.inspect(handle)).toEqual({ state: 'running' });
    await provider.delete('r2', handle);
    expect(await provider.inspect(handle)).toEqual({ state: 'missing', detail: 'the remote runtime rt-2 is stopped' });
    const posts = api.requests.slice(n).filter((r) => r.method === 'POST');
    expect(posts.map((r) => [r.path, r.body])).toEqual([
      ['/pause', { runtime_id: 'rt-2' }],
      ['/resume', { runtime_id: 'rt-2' }],
      ['/stop', { runtime_id: 'rt-2' }],
    ]);
    api.sessions.delete('r2');
    expect(await provider.inspect(handle)).toEqual({
      state: 'missing',
      detail: 'the remote runtime rt-2 no longer exists',
    });
    await expect(provider.delete('r2', null)).resolves.toBeUndefined();
  });

  it('leaves the session key alone when the API issues none', async () => {
    api.issueKeys = false;
    try {
      const started = await provider.start({
        sandboxId: 'r4',
        spec,
        sessionApiKey: KEY,
        controlPlaneUrl: CONTROL_PLANE,
      });
      const session = api.sessions.get('r4')!;
      expect(session.session_api_key).toBeNull();
      expect(started.sessionApiKey).toBeUndefined();
      expect(started.exposedUrls).toEqual([{ name: 'AGENT_SERVER', url: session.url, port: 443 }]);
    } finally {
      api.issueKeys = true;
    }
  });

  it('a start that finds its session paused resumes it instead of starting another', async () => {
    const { handle } = await provider.start({
      sandboxId: 'r5',
      spec,
      sessionApiKey: KEY,
      controlPlaneUrl: CONTROL_PLANE,
    });
    await provider.pause(handle);
    const n = api.requests.length;
    const again = await provider.start({ sandboxId: 'r5', spec, sessionApiKey: KEY, controlPlaneUrl: CONTROL_PLANE });
    expect(api.requests.slice(n).map((r) => [`${r.method} ${r.path}`, r.body])).toEqual([
      ['GET /sessions/r5', undefined],
      ['POST /resume', { runtime_id: (handle as any).runtimeId }],
    ]);
    expect(api.sessions.get('r5')!.status).toBe('running');
    expect(again.handle).toEqual(handle);
  });

  it('deleting a runtime the API no longer knows is not an error', async () => {
    const gone = {
      provider: 'remote' as const,
      sessionId: 'r-gone',
      runtimeId: 'rt-gone',
      url: 'https://rt-gone.runtimes.example',
    };
    const n = api.requests.length;
    await expect(provider.delete('r-gone', gone)).resolves.toBeUndefined();
    await expect(provider.delete('r-gone', null)).resolves.toBeUndefined();
    expect(api.requests.slice(n).map((r) => `${r.method} ${r.path}`)).toEqual(['POST /stop', 'GET /sessions/r-gone']);
  });

  it('a wrong API key is a configuration error naming the variable', async () => {
    const wrong = new RemoteProvider({ baseUrl: api.url, apiKey: 'wrong' });
    const err = await wrong
      .start({ sandboxId: 'r3', spec, sessionApiKey: KEY, controlPlaneUrl: CONTROL_PLANE })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ProviderConfigError);
    expect((err as Error).message).toContain('REMOTE_RUNTIME_API_KEY');
    expect(api.sessions.has('r3')).toBe(false);
  });
});
