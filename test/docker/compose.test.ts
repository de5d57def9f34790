/**
 * docker-compose.yml in its production shape, for real, on the test run's engine, scaled to two apis and
 * two workers: PostgreSQL, the real Temporal server with its schema and namespace jobs and its UI (the
 * registry's images replaced by stand-ins built from the same versions), the document store (FerretDB,
 * test/docker/compose.override.yml), the gateway in front of the apis, the api and worker images from the
 * Dockerfile on the test run's Node base, the workers starting docker sandboxes on the project's network.
 * Up, /ready through the gateway, the UI, health checks that see a frozen process, an operator's user and
 * key from the admin CLI, a start to READY; then, under a small load (starts through the gateway, a
 * websocket subscriber, an ingest), one api and one worker killed (-9): every start READY with each status
 * once and in order, no acknowledged event lost or doubled, the subscriber resumed with `after_id` without
 * gap or repeat, the sandboxes still acted on; the killed containers restarted by docker. Down: nothing
 * of the project left on the engine.
 */
import { execFile } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { MongoClient } from 'mongodb';
import { SANDBOX_LABEL } from '../../activities/sandbox-providers/docker-provider';
import { buildProductionImages, type ProductionImages } from '../../scripts/docker/production-images';
import { requirePostgresBinDir } from '../../scripts/servers/postgres-server';
import { COMPOSE_PROJECT_PREFIX } from '../setup/docker';
import { containersOf, dockerClient, dockerEnv, DOCKER_SPEC_ID, runtimeSpec, volumeExists } from '../helpers/docker';
import { testEnv } from '../helpers/env';
import { eventually } from '../helpers/eventually';
import { expectStatusesOnceInOrder } from '../helpers/start-tasks';
import { expectStoredLogIntact, steadyIngest } from '../helpers/service-under-faults';
import { connect } from '../helpers/ws-client';
import { setTimeout as sleep } from 'node:timers/promises';

const root = path.resolve(__dirname, '..', '..');
const project = `${COMPOSE_PROJECT_PREFIX}${randomBytes(4).toString('hex')}`;
const network = `${project}_default`;
const PROJECT_LABEL = `com.docker.compose.project=${project}`;
/** Starts sent through the gateway while an api and a worker are killed. */
const STARTS_UNDER_FAULTS = 6;

interface Output {
  stdout: string;
  stderr: string;
}

describe('docker-compose.yml, production shape, scaled to two apis and two workers', () => {
  let dir: string;
  let env: NodeJS.ProcessEnv;
  let images: ProductionImages;
  /** The gateway's published address: the api as clients reach it. */
  let api: string;
  let key: string;
  let orgId: string;
  /** Sandboxes made by the starts, once they have them. */
  const sandboxIds = new Set<string>();
  /** Whatever runs in the background, stopped in afterAll whatever failed. */
  const running: (() => unknown)[] = [];

  /** docker-compose on this project, bounded; rejects with its output when it fails. */
  const compose = (args: string[], timeoutMs = 60_000): Promise<Output> =>
    new Promise((resolve, reject) => {
      const files = [
        '-f',
        path.join(root, 'docker-compose.yml'),
        '-f',
        path.join(root, 'test/docker/compose.override.yml'),
      ];
      execFile(
        'docker-compose',
        ['-p', project, '--project-directory', root, ...files, ...args],
        { env, timeout: timeoutMs, killSignal: 'SIGKILL', maxBuffer: 64 << 20 },
        (err, stdout, stderr) => {
          if (err)
            reject(
              new Error(
                `docker-compose ${args.join(' ')} failed (${err.message.split('\n')[0]}):\n${stdout}\n${stderr}`.trim(),
              ),
            );
          else resolve({ stdout, stderr });
        },
      );
    });

  /** The end of every service's log, for a failure's message. */
  const logs = async () =>
    (await compose(['logs', '--no-color', '--tail=40']).catch((e: Error) => ({ stdout: e.message }))).stdout;

  /** `what` within `timeoutMs`, or a failure carrying the services' logs. */
  const waitFor = async <T>(
    what: string,
    timeoutMs: number,
    check: () => Promise<T>,
  ): Promise<Exclude<Awaited<T>, false>> => {
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
      signal: AbortSignal.timeout(30_000),
    });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : undefined };
  };
  /** GET `url` on a connection of its own (none kept alive), within 3 s: its status, or 0. */
  const statusOnNewConnection = (url: string) =>
    new Promise<number>((resolve) => {
      const req = http.get(url, { agent: false, timeout: 3000 }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      req.on('timeout', () => req.destroy());
      req.on('error', () => resolve(0));
    });
  const taskOf = async (id: string) =>
    (await request('GET', `/api/v1/app-conversations/start-tasks?ids=${id}`)).body?.[0];
  const ended = (id: string, timeoutMs = 240_000) =>
    waitFor(`start ${id} to end`, timeoutMs, async () => {
      const task = await taskOf(id);
      return task && (task.status === 'READY' || task.status === 'ERROR') ? task : false;
    });

  const admin = async (...args: string[]) =>
    JSON.parse((await compose(['exec', '-T', 'api', 'node', 'dist/src/cli/admin.js', '--json', ...args])).stdout);
  /** A service's port published on loopback. */
  const published = async (service: string, port: number) =>
    (await compose(['port', service, String(port)])).stdout.trim();

  /** The project's containers by service (several for a scaled one), running or not. */
  const containersByService = async () => {
    const all = await dockerClient().listContainers({ all: true, filters: { label: [PROJECT_LABEL] } });
    const out = new Map<string, typeof all>();
    for (const c of all.sort((a, b) => a.Names[0]!.localeCompare(b.Names[0]!))) {
      const service = c.Labels['com.docker.compose.service']!;
      out.set(service, [...(out.get(service) ?? []), c]);
    }
    return out;
  };
  /** Every long-running container's health, by name. */
  const health = async () => {
    const docker = dockerClient();
    const all = await docker.listContainers({ filters: { label: [PROJECT_LABEL] } });
    return Object.fromEntries(
      await Promise.all(
        all.map(
          async (c) =>
            [
              c.Names[0]!.replace(/^\//, ''),
              (await docker.getContainer(c.Id).inspect()).State.Health?.Status ?? 'none',
            ] as const,
        ),
      ),
    );
  };

  const projectObjects = async () => {
    const docker = dockerClient();
    return {
      containers: (await docker.listContainers({ all: true, filters: { label: [PROJECT_LABEL] } })).map((c) =>
        c.Names.join(','),
      ),
      volumes: ((await docker.listVolumes({ filters: { label: [PROJECT_LABEL] } })).Volumes ?? []).map((v) => v.Name),
      networks: (await docker.listNetworks({ filters: { label: [PROJECT_LABEL] } })).map((n) => n.Name),
    };
  };

  /** Sandbox containers on the project's network (the provider's label), whatever a failed step left. */
  const sandboxContainersOnNetwork = async () =>
    dockerClient().listContainers({ all: true, filters: { label: [SANDBOX_LABEL], network: [network] } });

  beforeAll(async () => {
    const d = dockerEnv();
    const t = testEnv();
    images = await buildProductionImages(d.host, d.images.base, {
      postgresNative: path.dirname(requirePostgresBinDir()),
      temporalServer: t.binaries.temporalServer,
      temporalSqlTool: t.binaries.temporalSqlTool,
      temporalCli: t.binaries.temporal,
      temporalUi: t.binaries.temporalUi,
    });
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'compose-'));
    const specs = path.join(dir, 'sandbox-specs.json');
    fs.writeFileSync(specs, JSON.stringify([runtimeSpec()]));
    fs.chmodSync(specs, 0o644);
    if (!d.host.startsWith('unix://'))
      throw new Error(`the compose test mounts the engine's socket into the workers; the engine is at ${d.host}`);
    const socket = d.host.slice('unix://'.length);
    env = {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      DOCKER_HOST: d.host,
      COMPOSE_DOCKER_CLI_BUILD: '0',
      DOCKER_BUILDKIT: '0',
      // docker-compose.yml's variables: published on loopback only, on ports the engine picks.
      SECRETS_KEY: randomBytes(32).toString('base64'),
      TEMPORAL_DB_PASSWORD: randomBytes(18).toString('hex'),
      // Fewer shards than the default: a faster first start on a test machine.
      TEMPORAL_HISTORY_SHARDS: '4',
      API_PUBLISH: '127.0.0.1:',
      TEMPORAL_UI_PUBLISH: '127.0.0.1:',
      POSTGRES_IMAGE: images.postgres,
      TEMPORAL_SERVER_IMAGE: images.temporalServer,
      TEMPORAL_ADMIN_TOOLS_IMAGE: images.temporalAdminTools,
      TEMPORAL_UI_IMAGE: images.temporalUi,
      // The override's.
      NODE_IMAGE: d.images.base,
      APP_IMAGE: d.images.app,
      FERRETDB_IMAGE: d.images.ferretdb,
      DOCKER_SOCKET: socket,
      DOCKER_SOCKET_GID: String(fs.statSync(socket).gid),
      DOCKER_NETWORK: network,
      SANDBOX_SPECS_PATH: specs,
      DEFAULT_SANDBOX_SPEC_ID: DOCKER_SPEC_ID,
    };
  }, 600_000);

  afterAll(async () => {
    for (const stop of running.splice(0)) await Promise.resolve(stop()).catch(() => undefined);
    // Sandboxes first (a failed step's): the project's network cannot go while their containers are on it.
    const docker = dockerClient();
    const left = new Set(sandboxIds);
    for (const c of await sandboxContainersOnNetwork().catch(() => [])) {
      left.add(c.Labels[SANDBOX_LABEL]!);
      await docker
        .getContainer(c.Id)
        .remove({ force: true, v: true })
        .catch(() => undefined);
    }
    for (const id of left)
      await docker
        .getVolume(`agent-control-sandbox-${id}`)
        .remove()
        .catch(() => undefined);
    if (dir) {
      await compose(['down', '-v', '--remove-orphans', '--timeout', '5'], 120_000).catch((e: Error) =>
        console.error(e.message),
      );
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }, 180_000);

  it('up --build --scale api=2 --scale worker=2: each service from its image, the jobs done, /ready through the gateway, the UI on the real server', async () => {
    const d = dockerEnv();
    const docker = dockerClient();
    const builtBefore = (await docker.getImage(d.images.app).inspect()).Id;
    const t0 = Date.now();
    await compose(['up', '-d', '--build', '--scale', 'api=2', '--scale', 'worker=2'], 600_000);
    // Every build step came from the cache: the same image the global setup built.
    expect((await docker.getImage(d.images.app).inspect()).Id).toBe(builtBefore);

    const byService = await containersByService();
    const shape = Object.fromEntries([...byService].map(([service, cs]) => [service, cs.map((c) => c.Image)]));
    expect(shape).toEqual({
      postgresql: [images.postgres],
      'temporal-schema': [images.temporalAdminTools],
      temporal: [images.temporalServer],
      'temporal-namespace': [images.temporalAdminTools],
      'temporal-ui': [images.temporalUi],
      mongodb: [d.images.ferretdb],
      api: [d.images.app, d.images.app],
      gateway: [d.images.app],
      worker: [d.images.app, d.images.app],
    });
    // The one-shot jobs ran and succeeded: Temporal's schemas, then its namespace.
    for (const job of ['temporal-schema', 'temporal-namespace']) {
      const [c] = byService.get(job)!;
      expect(
        await waitFor(`${job} done`, 120_000, async () =>
          (await docker.getContainer(c!.Id).inspect()).State.Status === 'exited'
            ? (await docker.getContainer(c!.Id).inspect()).State.ExitCode
            : false,
        ),
      ).toBe(0);
    }

    // Each worker its own host name (kept in its own DATA_DIR), so its own host queue.
    const hosts = await waitFor("each worker's host name", 60_000, () =>
      Promise.all(
        ['1', '2'].map(async (i) =>
          (await compose(['exec', '-T', '--index', i, 'worker', 'cat', '/data/worker-host'])).stdout.trim(),
        ),
      ),
    );
    expect(new Set(hosts).size).toBe(2);

    const gateway = await published('gateway', 8000);
    expect(gateway).toMatch(/^127\.0\.0\.1:\d+$/);
    api = `http://${gateway}`;
    const ready = await waitFor('the api /ready through the gateway', 180_000, async () => {
      const r = await fetch(`${api}/ready`, { signal: AbortSignal.timeout(5000) });
      expect(r.status).toBe(200);
      return r.json();
    });
    expect(ready).toEqual({ ready: true, checks: { mongodb: { ok: true }, temporal: { ok: true } } });
    console.log(
      `compose up (2 apis, 2 workers, the real Temporal server on PostgreSQL): /ready ${((Date.now() - t0) / 1000).toFixed(1)} s after up`,
    );
    // The UI answers through to the real server (its cluster's persistence is PostgreSQL).
    const ui = await published('temporal-ui', 8080);
    expect(ui).toMatch(/^127\.0\.0\.1:\d+$/);
    const info = await waitFor('the Temporal UI', 60_000, async () => {
      const r = await fetch(`http://${ui}/api/v1/cluster-info`, { signal: AbortSignal.timeout(5000) });
      return r.ok ? r.json() : false;
    });
    expect(info).toMatchObject({ persistenceStore: 'postgres12', visibilityStore: 'postgres12' });
  }, 900_000);

  it('health checks are round trips: every service healthy; an api and a worker frozen (SIGSTOP) are unhealthy, and healthy again after SIGCONT', async () => {
    const docker = dockerClient();
    const byService = await containersByService();
    const longRunning = ['postgresql', 'mongodb', 'api', 'gateway', 'worker'].flatMap((s) =>
      byService.get(s)!.map((c) => c.Names[0]!.replace(/^\//, '')),
    );
    const allAre = (status: string) => Object.fromEntries(longRunning.map((n) => [n, status]));
    await waitFor('every service healthy', 120_000, async () =>
      expect(await health()).toMatchObject(allAre('healthy')),
    );

    // One api's and one worker's main process (pid 1, node) stopped: alive, sockets open, answering nothing.
    const frozen = [byService.get('api')![0]!, byService.get('worker')![0]!];
    const names = frozen.map((c) => c.Names[0]!.replace(/^\//, ''));
    // Signalled from the host, as a freeze happens (the engine's kill call would also mark the container
    // stopped by hand, and it would not be restarted after the kill below).
    const pids = await Promise.all(frozen.map(async (c) => (await docker.getContainer(c.Id).inspect()).State.Pid));
    for (const pid of pids) process.kill(pid, 'SIGSTOP');
    try {
      await waitFor('the frozen api and worker unhealthy', 90_000, async () =>
        expect(await health()).toMatchObject({
          ...allAre('healthy'),
          ...Object.fromEntries(names.map((n) => [n, 'unhealthy'])),
        }),
      );
      // Meanwhile the gateway passes the frozen api over (it accepts, but answers no probe): every request
      // through it on a new connection is answered, by the other api. (A connection opened to the frozen
      // api before stays with it: the gateway relays bytes, and a client bounds its own waits.)
      await waitFor('the gateway to pass the frozen api over', 30_000, async () => {
        for (let i = 0; i < 6; i++) expect(await statusOnNewConnection(`${api}/health`)).toBe(200);
        return true;
      });
    } finally {
      for (const pid of pids) process.kill(pid, 'SIGCONT');
    }
    await waitFor('every service healthy after the thaw', 90_000, async () =>
      expect(await health()).toMatchObject(allAre('healthy')),
    );
  }, 360_000);

  it('the admin CLI in an api container makes a user and an API key the apis take', async () => {
    const user = await admin('user', 'create', '--email', 'operator@example.com');
    expect(user).toMatchObject({
      id: expect.any(String),
      email: 'operator@example.com',
      personal_org_id: expect.any(String),
    });
    const created = await admin('key', 'create', '--user', user.id, '--name', 'compose-test');
    expect(created).toMatchObject({ user_id: user.id, key: expect.any(String) });
    key = created.key;
    orgId = user.personal_org_id;
    // Several requests: the gateway spreads them over both apis, and each takes the key.
    for (let i = 0; i < 4; i++) {
      const me = await request('GET', '/api/v1/users/me');
      expect(me).toMatchObject({ status: 200, body: { id: user.id, email: 'operator@example.com' } });
    }
  }, 120_000);

  let taskId: string;
  it('a start reaches READY with a docker sandbox on the project network; both api containers reach it, and it reaches an api', async () => {
    // A start without a message calls no model, but it needs one configured (nothing listens at this one).
    const patched = await request('PATCH', `/api/organizations/${orgId}`, {
      agent_settings: {
        agent_kind: 'platform',
        llm: { model: 'unused-model', base_url: 'http://127.0.0.1:9/v1', api_key: 'sk-unused' },
      },
    });
    expect(patched.status).toBe(200);

    const accepted = await request('POST', '/api/v1/app-conversations', {});
    expect(accepted.status).toBe(200);
    taskId = accepted.body.id;
    const ready = await ended(taskId);
    expect(ready).toMatchObject({ status: 'READY', app_conversation_id: taskId, sandbox_id: expect.any(String) });
    const sandboxId = ready.sandbox_id as string;
    sandboxIds.add(sandboxId);
    const url = `http://agent-control-sandbox-${sandboxId}:8000`;
    expect(ready.agent_server_url).toBe(url);
    const [s] = (await request('GET', `/api/v1/sandboxes?id=${sandboxId}`)).body;
    expect(s).toMatchObject({
      status: 'RUNNING',
      sandbox_spec_id: DOCKER_SPEC_ID,
      exposed_urls: [{ name: 'AGENT_SERVER', url, port: 8000 }],
    });

    // The container: the runtime image, on the project's network only, no port published on the host.
    const [c] = await containersOf(sandboxId);
    const info = await dockerClient().getContainer(c!.Id).inspect();
    expect(info.Config.Image).toBe(dockerEnv().images.runtime);
    expect(Object.keys(info.NetworkSettings.Networks)).toEqual([network]);
    expect(Object.values(info.NetworkSettings.Ports ?? {}).filter((b) => b && b.length > 0)).toEqual([]);

    // Each api container reaches the sandbox at its AGENT_SERVER url.
    for (const index of ['1', '2']) {
      const alive = (
        await compose([
          'exec',
          '-T',
          '--index',
          index,
          'api',
          'node',
          '-e',
          'fetch(process.argv[1] + "/alive", { signal: AbortSignal.timeout(5000) }).then(async (r) => console.log(JSON.stringify({ status: r.status, body: await r.json() })))',
          url,
        ])
      ).stdout;
      expect(JSON.parse(alive)).toEqual({ status: 200, body: { status: 'ok' } });
    }
    // The sandbox reaches an api (through the gateway): the runtime's first events are in the log.
    const kinds = await waitFor("the runtime's events in the log", 30_000, async () => {
      const page = await request('GET', `/api/v1/conversation/${taskId}/events/search`);
      expect(page.status).toBe(200);
      const found = page.body.items.map((e: { kind: string }) => e.kind);
      expect(found).toContain('SystemPromptEvent');
      return found;
    });
    expect(kinds[0]).toBe('SystemPromptEvent');
  }, 300_000);

  it('under load, one api and one worker killed (-9): every start READY, statuses once and in order; no event lost, doubled or skipped by the resumed subscriber', async () => {
    const docker = dockerClient();
    // The load: a subscriber through the gateway, ingest through the gateway with the sandbox's key.
    const [sandbox] = (await request('GET', `/api/v1/sandboxes?id=${[...sandboxIds][0]}`)).body;
    const gatewayPort = Number(new URL(api).port);
    const socket = (query = '') => `${api.replace('http', 'ws')}/api/v1/conversation/${taskId}/events/socket${query}`;
    // It resumes after the log's first event (the runtime's, from the start above): what it is sent is the
    // log from the second on, caught up, then live, then resumed.
    const firstPage = await request('GET', `/api/v1/conversation/${taskId}/events/search?limit=1`);
    const firstId = firstPage.body.items[0].id as string;
    const first = connect(socket(`?after_id=${firstId}`), { 'X-Access-Token': key });
    await first.opened;
    running.push(() => first.ws.terminate());
    const ingest = steadyIngest(gatewayPort, taskId, sandbox.session_api_key, 100);
    running.push(() => ingest.stop());
    await ingest.goesOn(3, 60_000);

    // Starts through the gateway, and while they run, one api and one worker killed from the host (-9).
    // As a client does: a request whose connection broke (kept alive to the api that died) is sent again;
    // the same conversation_id joins the start if the first one was taken.
    const startOne = async () => {
      const id = randomUUID();
      for (let attempt = 1; ; attempt++) {
        const r = await request('POST', '/api/v1/app-conversations', { conversation_id: id }).catch((e: Error) => {
          if (attempt >= 5) throw e;
          return null;
        });
        if (!r) {
          resent++;
          await new Promise((res) => setTimeout(res, 500));
          continue;
        }
        expect(r.status).toBe(200);
        return id;
      }
    };
    let resent = 0;
    const ids: string[] = [];
    for (let i = 0; i < STARTS_UNDER_FAULTS; i++) ids.push(await startOne());
    await sleep(1000);
    // The api killed is the one the subscriber is on (each api says how many it holds), so it must resume.
    const subscribersOn = async (index: number) =>
      Number(
        (
          await compose([
            'exec',
            '-T',
            '--index',
            String(index),
            'api',
            'node',
            '-e',
            "fetch('http://127.0.0.1:9464/metrics').then((r) => r.text()).then((t) => console.log(/^agent_control_websocket_subscribers (\\d+)/m.exec(t)?.[1] ?? 'none'))",
          ])
        ).stdout.trim(),
      );
    const held = [await subscribersOn(1), await subscribersOn(2)];
    expect([...held].sort()).toEqual([0, 1]);
    const byService = await containersByService();
    const victims = [byService.get('api')![held.indexOf(1)]!, byService.get('worker')![0]!];
    const pids = await Promise.all(victims.map(async (c) => (await docker.getContainer(c.Id).inspect()).State.Pid));
    for (const pid of pids) process.kill(pid, 'SIGKILL');
    const killedAt = Date.now();
    // More starts at once: the gateway passes the dead api over.
    for (let i = 0; i < 2; i++) ids.push(await startOne());
    const acceptedAfterMs = Date.now() - killedAt;
    await ingest.goesOn(3, 120_000, 'ingest goes on through the gateway');
    // Shown to go on: stopped now, so the log's length does not grow with how long the starts take under
    // load (the document store of this project's image scans a collection for every query but by _id).
    await ingest.stop();

    const done = await Promise.all(ids.map((id) => ended(id)));
    expect(done.map((t) => [t.id, t.status, t.detail])).toEqual(ids.map((id) => [id, 'READY', null]));
    for (const t of done) sandboxIds.add(t.sandbox_id);
    console.log(
      `compose: an api and a worker killed; the next 2 starts accepted within ${acceptedAfterMs} ms (${resent} sent again after a broken connection); all ${ids.length} READY ${((Date.now() - killedAt) / 1000).toFixed(1)} s after; ingest ${ingest.counts.batches} batches acknowledged, ${ingest.counts.retries} resent`,
    );
    // Docker brought the killed containers back (restart: unless-stopped), healthy.
    await waitFor('the killed containers restarted and healthy', 120_000, async () => {
      const states = await Promise.all(victims.map(async (c) => (await docker.getContainer(c.Id).inspect()).State));
      return states.every((s) => s.Running && s.Health?.Status === 'healthy') ? states : false;
    });

    // Each start's statuses once and in order, as its workflow kept them (the Temporal frontend, published for the test).
    const connection = await Connection.connect({ address: await published('temporal', 7233) });
    running.push(() => connection.close());
    const client = new Client({ connection, namespace: 'default' });
    await expectStatusesOnceInOrder(client, ids);

    // The log, read from the document store (published for the test): every acknowledged event once, seq without a hole.
    const mongo = await MongoClient.connect(`mongodb://${await published('mongodb', 27017)}/?directConnection=true`);
    running.push(() => mongo.close());
    const log = await expectStoredLogIntact(mongo.db('agent_control'), taskId, ingest.acknowledged);
    expect(log[0]).toBe(firstId);
    const stored = log.slice(1);
    // The subscriber (its api killed or not) resumed through the gateway after its last event: each one once, in order.
    // Its api was killed: it was closed, and resumes on the other.
    expect(first.ws.readyState).toBe(first.ws.CLOSED);
    first.ws.terminate();
    const had = first.messages.map((e) => e.id as string);
    expect(had.length).toBeGreaterThan(0);
    // A client resumes after its last event; told to come back later (1013: the log busy under the load of
    // the whole suite), it does so the same way, at most 5 times. Any other close fails the test, named.
    const resumedIds: string[] = [];
    const closes: { code: number; reason: string }[] = [];
    const deadline = Date.now() + 60_000;
    while ((resumedIds.at(-1) ?? had.at(-1)) !== stored.at(-1) && Date.now() < deadline && closes.length <= 5) {
      const resumed = connect(socket(`?after_id=${resumedIds.at(-1) ?? had.at(-1)}`), { 'X-Access-Token': key });
      running.push(() => resumed.ws.terminate());
      let over = false; // the wait below stops with this connection
      const closed = await Promise.race([
        resumed.closed,
        eventually(() => over || resumed.messages.at(-1)?.id === stored.at(-1), {
          timeoutMs: Math.max(0, deadline - Date.now()),
          intervalMs: 200,
        }).then(
          async () => {
            await sleep(300); // nothing more may arrive
            return null;
          },
          () => null,
        ),
      ]);
      over = true;
      resumedIds.push(...resumed.messages.map((e) => e.id as string));
      resumed.ws.close();
      if (closed) closes.push(closed);
    }
    const told = closes.map((c) => `${c.code} ${c.reason}`).join('; ');
    expect({
      at: resumedIds.at(-1) ?? had.at(-1),
      resumed: resumedIds.length,
      closes: closes.filter((c) => c.code !== 1013),
    }).toEqual({
      at: stored.at(-1),
      resumed: stored.length - had.length,
      closes: [],
    });
    const got = [...had, ...resumedIds];
    console.log(
      `compose: the subscriber had ${had.length} events when its api was killed (closed ${(await first.closed).code}), ${resumedIds.length} more resumed${told ? ` (told to come back: ${told})` : ''}; ${stored.length} stored`,
    );
    // Said as what is missing, what is extra, and what is out of order (the lists are long).
    const where = (id: string) => `${id}@${stored.indexOf(id) + 1}`;
    expect({
      missing: stored.filter((id) => !got.includes(id)).map(where),
      extra: got.filter((id) => !stored.includes(id)),
      doubled: got.filter((id, i) => got.indexOf(id) !== i),
      resumedAfter: had.length,
    }).toEqual({ missing: [], extra: [], doubled: [], resumedAfter: had.length });
    expect(got).toEqual(stored);

    // The starts' sandboxes are acted on after the kill: one paused and resumed.
    const one = done[0]!.sandbox_id as string;
    for (const [op, status] of [
      ['pause', 'PAUSED'],
      ['resume', 'RUNNING'],
    ] as const) {
      const r = await request('POST', `/api/v1/sandboxes/${one}/${op}`);
      expect([r.status, r.body.status]).toEqual([200, status]);
    }
  }, 600_000);

  it('deleting the sandboxes through the api removes their containers and volumes', async () => {
    expect(sandboxIds.size).toBe(1 + STARTS_UNDER_FAULTS + 2);
    for (const id of sandboxIds) {
      const deleted = await request('DELETE', `/api/v1/sandboxes/${id}`);
      expect([deleted.status, deleted.body.status]).toEqual([200, 'DELETED']);
      expect(await containersOf(id)).toEqual([]);
      expect(await volumeExists(`agent-control-sandbox-${id}`)).toBe(false);
    }
  }, 180_000);

  it('down -v --remove-orphans leaves no container, volume or network of the project or its sandboxes', async () => {
    const before = await projectObjects();
    expect(before.containers).toHaveLength(11);
    expect(before.networks).toEqual([network]);
    // The named volumes, and each worker's anonymous one.
    expect(before.volumes.filter((v) => v.startsWith(`${project}_`)).sort()).toEqual(
      ['ferretdb-state', 'mongodb-data', 'postgresql-data'].map((v) => `${project}_${v}`).sort(),
    );

    const workers = (await containersByService()).get('worker')!;
    const anonymous = (
      await Promise.all(
        workers.map(async (c) =>
          (await dockerClient().getContainer(c.Id).inspect()).Mounts.filter((m) => m.Destination === '/data').map(
            (m) => m.Name!,
          ),
        ),
      )
    ).flat();
    expect(anonymous).toHaveLength(2);

    await compose(['down', '-v', '--remove-orphans', '--timeout', '10'], 120_000);
    expect(await projectObjects()).toEqual({ containers: [], volumes: [], networks: [] });
    for (const v of anonymous) expect(await volumeExists(v)).toBe(false);
    expect(await sandboxContainersOnNetwork()).toEqual([]);
    for (const id of sandboxIds) {
      expect(await containersOf(id)).toEqual([]);
      expect(
        (await dockerClient().listVolumes({ filters: { label: [`${SANDBOX_LABEL}=${id}`] } })).Volumes ?? [],
      ).toEqual([]);
    }
  }, 180_000);
});
