/**
 * The remote provider's translation to its service's protocol, against a loopback stand-in that speaks
 * it: start with the spec, a repeated start, pause, resume, inspect and stop by runtime id, keys the
 * service issues or not, and a wrong API key.
 */
import { ProviderConfigError } from '../activities/sandbox-providers/provider';
import { RemoteProvider } from '../activities/sandbox-providers/remote-provider';
import type { SandboxSpec } from '../src/schemas/sandboxes';
import { CONTROL_PLANE, KEY } from './helpers/provider-start';
import { RemoteRuntimeStandIn } from './helpers/remote-runtime-stand-in';

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
