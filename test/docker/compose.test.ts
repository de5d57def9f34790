/**
 * docker-compose.yml for real, on the test run's engine: its four services with the override
 * test/docker/compose.override.yml (FerretDB and the Temporal dev server built here in place of the
 * registry's images, the api and worker built from the Dockerfile on the test run's Node base, the worker
 * starting docker sandboxes on the project's network). Up, /ready, an operator's user and key from the
 * admin CLI in the api container, a start to READY, the api container reaching the sandbox, the sandbox
 * deleted through the api, down: nothing of the project left on the engine.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { SANDBOX_LABEL } from '../../activities/sandbox-providers/docker-provider';
import { COMPOSE_PROJECT_PREFIX } from '../setup/docker';
import { containersOf, dockerClient, dockerEnv, DOCKER_SPEC_ID, runtimeSpec, volumeExists } from '../helpers/docker';
import { eventually } from '../helpers/eventually';

const root = path.resolve(__dirname, '..', '..');
const project = `${COMPOSE_PROJECT_PREFIX}${randomBytes(4).toString('hex')}`;
const network = `${project}_default`;
const PROJECT_LABEL = `com.docker.compose.project=${project}`;

interface Output {
  stdout: string;
  stderr: string;
}

describe('docker-compose.yml on a real engine', () => {
  let dir: string;
  let env: NodeJS.ProcessEnv;
  let api: string;
  let key: string;
  let orgId: string;
  /** The start's sandbox, once it has one. */
  let sandboxId: string | undefined;

  /** docker-compose on this project, bounded; rejects with its output when it fails. */
  const compose = (args: string[], timeoutMs = 60_000): Promise<Output> =>
    new Promise((resolve, reject) => {
      const files = ['-f', path.join(root, 'docker-compose.yml'), '-f', path.join(root, 'test/docker/compose.override.yml')];
      execFile(
        'docker-compose',
        ['-p', project, '--project-directory', root, ...files, ...args],
        { env, timeout: timeoutMs, killSignal: 'SIGKILL', maxBuffer: 64 << 20 },
        (err, stdout, stderr) => {
          if (err) reject(new Error(`docker-compose ${args.join(' ')} failed (${err.message.split('\n')[0]}):\n${stdout}\n${stderr}`.trim()));
          else resolve({ stdout, stderr });
        },
      );
    });

  /** The end of every service's log, for a failure's message. */
  const logs = async () => (await compose(['logs', '--no-color', '--tail=40']).catch((e: Error) => ({ stdout: e.message }))).stdout;

  /** `what` within `timeoutMs`, or a failure carrying the services' logs. */
  const waitFor = async <T>(what: string, timeoutMs: number, check: () => Promise<T>): Promise<Exclude<Awaited<T>, false>> => {
    try {
      return await eventually(check, { timeoutMs, intervalMs: 500, what });
    } catch (e) {
      throw new Error(`${(e as Error).message}\n--- docker-compose logs ---\n${await logs()}`, { cause: e });
    }
  };

  const request = async (method: string, urlPath: string, body?: unknown): Promise<{ status: number; body: any }> => {
    const res = await fetch(api + urlPath, {
      method,
      headers: { 'X-Access-Token': key, ...(body === undefined ? {} : { 'Content-Type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      signal: AbortSignal.timeout(15_000),
    });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : undefined };
  };

  /** Runs `node -e script ...args` in a service's container; its standard output. */
  const nodeIn = async (service: string, script: string, ...args: string[]) => (await compose(['exec', '-T', service, 'node', '-e', script, ...args])).stdout;
  const admin = async (...args: string[]) => JSON.parse((await compose(['exec', '-T', 'api', 'node', 'dist/src/cli/admin.js', '--json', ...args])).stdout);

  const projectObjects = async () => {
    const docker = dockerClient();
    return {
      containers: (await docker.listContainers({ all: true, filters: { label: [PROJECT_LABEL] } })).map((c) => c.Names.join(',')),
      volumes: ((await docker.listVolumes({ filters: { label: [PROJECT_LABEL] } })).Volumes ?? []).map((v) => v.Name),
      networks: (await docker.listNetworks({ filters: { label: [PROJECT_LABEL] } })).map((n) => n.Name),
    };
  };

  /** Sandbox containers on the project's network (the provider's label), whatever a failed step left. */
  const sandboxContainersOnNetwork = async () =>
    dockerClient().listContainers({ all: true, filters: { label: [SANDBOX_LABEL], network: [network] } });

  beforeAll(() => {
    const d = dockerEnv();
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'compose-'));
    const specs = path.join(dir, 'sandbox-specs.json');
    fs.writeFileSync(specs, JSON.stringify([runtimeSpec()]));
    fs.chmodSync(specs, 0o644);
    if (!d.host.startsWith('unix://')) throw new Error(`the compose test mounts the engine's socket into the worker; the engine is at ${d.host}`);
    const socket = d.host.slice('unix://'.length);
    env = {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      DOCKER_HOST: d.host,
      COMPOSE_DOCKER_CLI_BUILD: '0',
      DOCKER_BUILDKIT: '0',
      // docker-compose.yml's variables: published on loopback only, on ports the engine picks.
      SECRETS_KEY: randomBytes(32).toString('base64'),
      API_PUBLISH: '127.0.0.1:',
      TEMPORAL_UI_PUBLISH: '127.0.0.1:',
      // The override's.
      NODE_IMAGE: d.images.base,
      APP_IMAGE: d.images.app,
      FERRETDB_IMAGE: d.images.ferretdb,
      TEMPORAL_IMAGE: d.images.temporal,
      DOCKER_SOCKET: socket,
      DOCKER_SOCKET_GID: String(fs.statSync(socket).gid),
      DOCKER_NETWORK: network,
      SANDBOX_SPECS_PATH: specs,
      DEFAULT_SANDBOX_SPEC_ID: DOCKER_SPEC_ID,
    };
  });

  afterAll(async () => {
    // Sandboxes first (a failed step's): the project's network cannot go while their containers are on it.
    const docker = dockerClient();
    const left = new Set(sandboxId ? [sandboxId] : []);
    for (const c of await sandboxContainersOnNetwork().catch(() => [])) {
      left.add(c.Labels[SANDBOX_LABEL]!);
      await docker.getContainer(c.Id).remove({ force: true, v: true }).catch(() => undefined);
    }
    for (const id of left) await docker.getVolume(`agent-control-sandbox-${id}`).remove().catch(() => undefined);
    if (dir) {
      await compose(['down', '-v', '--remove-orphans', '--timeout', '5'], 120_000).catch((e: Error) => console.error(e.message));
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }, 180_000);

  it('up --build: the api and worker from the Dockerfile (the global setup\'s image, from the cache), FerretDB and Temporal; /ready on a loopback port', async () => {
    const d = dockerEnv();
    const docker = dockerClient();
    const builtBefore = (await docker.getImage(d.images.app).inspect()).Id;
    await compose(['up', '-d', '--build'], 600_000);
    // Every build step came from the cache: the same image the global setup built.
    expect((await docker.getImage(d.images.app).inspect()).Id).toBe(builtBefore);

    const running = await docker.listContainers({ filters: { label: [PROJECT_LABEL] } });
    const imageOf = Object.fromEntries(running.map((c) => [c.Labels['com.docker.compose.service'], c.Image]));
    expect(imageOf).toEqual({ mongodb: d.images.ferretdb, temporal: d.images.temporal, api: d.images.app, worker: d.images.app });

    const published = (await compose(['port', 'api', '8000'])).stdout.trim();
    expect(published).toMatch(/^127\.0\.0\.1:\d+$/);
    api = `http://${published}`;
    const ready = await waitFor('the api /ready', 180_000, async () => {
      const r = await fetch(`${api}/ready`, { signal: AbortSignal.timeout(5000) });
      expect(r.status).toBe(200);
      return r.json();
    });
    expect(ready).toEqual({ ready: true, checks: { mongodb: { ok: true }, temporal: { ok: true } } });
    expect((await compose(['port', 'temporal', '8233'])).stdout.trim()).toMatch(/^127\.0\.0\.1:\d+$/);
  }, 720_000);

  it('health checks are round trips: every service healthy; an api and a worker frozen (SIGSTOP) are unhealthy, and healthy again after SIGCONT', async () => {
    const docker = dockerClient();
    const containers = Object.fromEntries(
      (await docker.listContainers({ filters: { label: [PROJECT_LABEL] } })).map((c) => [c.Labels['com.docker.compose.service']!, docker.getContainer(c.Id)]),
    );
    const health = async () =>
      Object.fromEntries(await Promise.all(Object.entries(containers).map(async ([name, c]) => [name, (await c.inspect()).State.Health?.Status] as const)));
    const all = (status: string) => ({ mongodb: status, temporal: status, api: status, worker: status });
    await waitFor('every service healthy', 120_000, async () => expect(await health()).toEqual(all('healthy')));

    // Their main process (pid 1, node) stopped: alive, sockets open, answering nothing.
    for (const name of ['api', 'worker']) await containers[name]!.kill({ signal: 'SIGSTOP' });
    try {
      await waitFor('the frozen api and worker unhealthy', 90_000, async () => expect(await health()).toEqual({ ...all('healthy'), api: 'unhealthy', worker: 'unhealthy' }));
    } finally {
      for (const name of ['api', 'worker']) await containers[name]!.kill({ signal: 'SIGCONT' });
    }
    await waitFor('every service healthy after the thaw', 90_000, async () => expect(await health()).toEqual(all('healthy')));
  }, 360_000);

  it('the admin CLI in the api container makes a user and an API key the api takes', async () => {
    const user = await admin('user', 'create', '--email', 'operator@example.com');
    expect(user).toMatchObject({ id: expect.any(String), email: 'operator@example.com', personal_org_id: expect.any(String) });
    const created = await admin('key', 'create', '--user', user.id, '--name', 'compose-test');
    expect(created).toMatchObject({ user_id: user.id, key: expect.any(String) });
    key = created.key;
    orgId = user.personal_org_id;
    const me = await request('GET', '/api/v1/users/me');
    expect(me.status).toBe(200);
    expect(me.body).toMatchObject({ id: user.id, email: 'operator@example.com' });
  }, 120_000);

  it('a start reaches READY with a docker sandbox on the project network; the api container reaches it, and it reaches the api', async () => {
    // A start without a message calls no model, but it needs one configured (nothing listens at this one).
    const patched = await request('PATCH', `/api/organizations/${orgId}`, {
      agent_settings: { agent_kind: 'platform', llm: { model: 'unused-model', base_url: 'http://127.0.0.1:9/v1', api_key: 'sk-unused' } },
    });
    expect(patched.status).toBe(200);

    const accepted = await request('POST', '/api/v1/app-conversations', {});
    expect(accepted.status).toBe(200);
    const taskId: string = accepted.body.id;
    const ready = await waitFor('the start to end', 180_000, async () => {
      const [task] = (await request('GET', `/api/v1/app-conversations/start-tasks?ids=${taskId}`)).body;
      return task.status === 'READY' || task.status === 'ERROR' ? task : false;
    });
    expect(ready).toMatchObject({ status: 'READY', app_conversation_id: taskId, sandbox_id: expect.any(String) });
    sandboxId = ready.sandbox_id as string;
    const url = `http://agent-control-sandbox-${sandboxId}:8000`;
    expect(ready.agent_server_url).toBe(url);
    const [s] = (await request('GET', `/api/v1/sandboxes?id=${ready.sandbox_id}`)).body;
    expect(s).toMatchObject({ status: 'RUNNING', sandbox_spec_id: DOCKER_SPEC_ID, exposed_urls: [{ name: 'AGENT_SERVER', url, port: 8000 }] });

    // The container: the runtime image, on the project's network only, no port published on the host.
    const [c] = await containersOf(ready.sandbox_id);
    const info = await dockerClient().getContainer(c!.Id).inspect();
    expect(info.Config.Image).toBe(dockerEnv().images.runtime);
    expect(Object.keys(info.NetworkSettings.Networks)).toEqual([network]);
    expect(Object.values(info.NetworkSettings.Ports ?? {}).filter((b) => b && b.length > 0)).toEqual([]);

    // The api container reaches the sandbox at its AGENT_SERVER url.
    const alive = await nodeIn(
      'api',
      'fetch(process.argv[1] + "/alive", { signal: AbortSignal.timeout(5000) }).then(async (r) => console.log(JSON.stringify({ status: r.status, body: await r.json() })))',
      url,
    );
    expect(JSON.parse(alive)).toEqual({ status: 200, body: { status: 'ok' } });
    // The sandbox reaches the api (http://api:8000): the runtime's first events are in the log.
    const kinds = await waitFor("the runtime's events in the log", 30_000, async () => {
      const page = await request('GET', `/api/v1/conversation/${taskId}/events/search`);
      expect(page.status).toBe(200);
      const found = page.body.items.map((e: { kind: string }) => e.kind);
      expect(found).toContain('SystemPromptEvent');
      return found;
    });
    expect(kinds[0]).toBe('SystemPromptEvent');
  }, 300_000);

  it('deleting the sandbox through the api removes its container and volume', async () => {
    expect(sandboxId).toBeDefined();
    const deleted = await request('DELETE', `/api/v1/sandboxes/${sandboxId}`);
    expect(deleted.status).toBe(200);
    expect(deleted.body.status).toBe('DELETED');
    expect(await containersOf(sandboxId!)).toEqual([]);
    expect(await volumeExists(`agent-control-sandbox-${sandboxId}`)).toBe(false);
  }, 60_000);

  it('down -v --remove-orphans leaves no container, volume or network of the project or its sandboxes', async () => {
    const before = await projectObjects();
    expect(before.containers).toHaveLength(4);
    expect(before.networks).toEqual([network]);
    expect(before.volumes.sort()).toEqual(['ferretdb-state', 'mongodb-data', 'temporal-data', 'worker-data'].map((v) => `${project}_${v}`).sort());

    await compose(['down', '-v', '--remove-orphans', '--timeout', '10'], 120_000);
    expect(await projectObjects()).toEqual({ containers: [], volumes: [], networks: [] });
    expect(await sandboxContainersOnNetwork()).toEqual([]);
    // The start's sandbox (when an earlier step got that far).
    for (const id of sandboxId ? [sandboxId] : []) {
      expect(await containersOf(id)).toEqual([]);
      expect((await dockerClient().listVolumes({ filters: { label: [`${SANDBOX_LABEL}=${id}`] } })).Volumes ?? []).toEqual([]);
    }
  }, 180_000);
});
