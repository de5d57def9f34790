/**
 * Issue 17 for the docker provider: a sandbox reaches nothing that is not its own. Two users, A and B,
 * each with a RUNNING docker sandbox; everything B's runtime runs (commands through its own bash
 * endpoint, and its agent's terminal tool) tries A's runtime, A's files, the test run's DATA_DIR and
 * engine, the database and Temporal, and fails, while the same probes reach what B may reach (its own
 * runtime, the api at its control-plane URL): the probes work, so their failures mean something.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import type Docker from 'dockerode';
import { DockerProvider } from '../../activities/sandbox-providers/docker-provider';
import type { Config } from '../../src/config';
import type { SandboxSpec } from '../../src/schemas/sandboxes';
import { ScriptedLlm } from '../../src/llm/scripted-llm';
import { loggedEvents, runtimeCall, runtimeOf, type Runtime } from '../helpers/agent';
import { waitForStartTask } from '../helpers/start-tasks';
import { runtimeClient } from '../../src/sandboxes/runtime-clients';
import { RUNTIME_KINDS } from '../../src/schemas/sandboxes';
import type { TestApi } from '../helpers/api';
import {
  containersOf,
  dockerClient,
  dockerEnv,
  DOCKER_OPENHANDS_SPEC_ID,
  DOCKER_SPEC_ID,
  dockerServiceEnv,
  networksOf,
  openhandsRuntimeSpec,
  removeSandboxContainers,
  runtimeSpec,
  sandboxAddress,
} from '../helpers/docker';
import { TEST_SECRETS_KEY, testEnv } from '../helpers/env';
import { eventually } from '../helpers/eventually';
import { agentUrl, runtimeGet, waitForStatus } from '../helpers/sandboxes';
import { startServiceUnderTest, type ServiceUnderTest } from '../helpers/service';
import { COMPOSE_PROJECT_PREFIX } from '../setup/docker';

/** How long a probe waits for a TCP connection before it calls the target silent. */
const PROBE_MS = 2500;

/**
 * TCP connections from inside a sandbox, with the image's node (it has no curl): one line per target,
 * `host:port connected|timeout|<errno code>`, all tried at once.
 */
const PROBE_JS =
  'const net=require("net");' +
  'Promise.all(process.argv.slice(1).map((t)=>new Promise((r)=>{' +
  'const i=t.lastIndexOf(":");const s=net.connect({host:t.slice(0,i),port:Number(t.slice(i+1))});' +
  `const done=(v)=>{clearTimeout(k);s.destroy();r(t+" "+v)};const k=setTimeout(()=>done("timeout"),${PROBE_MS});` +
  's.on("connect",()=>done("connected"));s.on("error",(e)=>done(e.code))' +
  '}))).then((lines)=>console.log(lines.join("\\n")))';
const probeCommand = (targets: string[]) => `timeout 10 node -e '${PROBE_JS}' ${targets.join(' ')}`;
const parseProbe = (output: string): Record<string, string> =>
  Object.fromEntries(
    output
      .trim()
      .split('\n')
      .map((l) => l.split(' ') as [string, string]),
  );

const portOf = (address: string) => Number(new URL(address.includes('://') ? address : `tcp://${address}`).port);

/** A TCP connection from the test process itself (the host). */
const hostConnects = (host: string, port: number) =>
  new Promise<boolean>((resolve) => {
    const s = net.connect({ host, port });
    const done = (ok: boolean) => {
      s.destroy();
      resolve(ok);
    };
    s.setTimeout(PROBE_MS, () => done(false));
    s.on('connect', () => done(true));
    s.on('error', () => done(false));
  });

interface Side {
  user: { userId: string; key: string };
  sandbox: any;
  /** The container's address and its gateway (the host's address) on the sandbox's own network. */
  ip: string;
  gateway: string;
  /** The host port where the runtime is published (on 127.0.0.1). */
  publishedPort: number;
  runtime: Runtime;
}

describe.each(RUNTIME_KINDS)('a docker sandbox on the %s runtime reaches nothing that is not its own', (runtime) => {
  let service: ServiceUnderTest;
  let t: TestApi;
  let dir: string;
  let config: Config;
  let a: Side;
  let b: Side;
  const marker = `a-marker-${randomBytes(6).toString('hex')}`;
  const started = new Set<string>();

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
  /** A command in the side's sandbox, through the control plane's client of its runtime (either one). */
  const bash = async (
    side: Side,
    command: string,
  ): Promise<{ exit_code: number; output: string; timed_out: boolean }> =>
    runtimeClient((await t.stores.sandboxes.get(side.sandbox.id))!, t.box).bash(command, {
      cwd: '/workspace',
      timeoutS: 30,
    });
  const probe = async (side: Side, targets: string[]): Promise<Record<string, string>> => {
    const r = await bash(side, probeCommand(targets));
    expect(r.exit_code).toBe(0);
    const results = parseProbe(r.output);
    expect(Object.keys(results).sort()).toEqual([...targets].sort());
    return results;
  };

  beforeAll(async () => {
    service = await startServiceUnderTest(
      'docker-isolation-',
      (dataDir) => dockerServiceEnv(dataDir, {}, [openhandsRuntimeSpec()]),
      { beforeRemove: () => removeSandboxContainers(started) },
    );
    ({ t, dataDir: dir, config } = service);
    [a, b] = await Promise.all([startSide(), startSide()]);
    expect(a.user.userId).not.toBe(b.user.userId);
    expect(await bash(a, `echo secret-of-a > /workspace/${marker}`)).toEqual({
      exit_code: 0,
      output: '',
      timed_out: false,
    });
  }, 240_000);

  afterAll(async () => {
    await service?.close();
  });

  it("B reaches its own runtime and the api, but not A's runtime: not on A's network, not through A's published port", async () => {
    const bridge = dockerEnv().gateway; // the engine's default bridge: the api listens there
    const apiPort = config.api.port;
    expect(a.ip).not.toBe(b.ip);
    expect(a.gateway).not.toBe(b.gateway);
    expect([a.gateway, b.gateway]).not.toContain(bridge);
    // From the host, A's runtime answers at both addresses the probes try.
    expect(await runtimeGet(`http://${a.ip}:8000`, '/alive')).toEqual({ status: 200, body: { status: 'ok' } });
    expect(await runtimeGet(`http://127.0.0.1:${a.publishedPort}`, '/alive')).toEqual({
      status: 200,
      body: { status: 'ok' },
    });

    const results = await probe(b, [
      `127.0.0.1:8000`,
      `${b.ip}:8000`,
      `${bridge}:${apiPort}`,
      `${a.ip}:8000`,
      `127.0.0.1:${a.publishedPort}`,
      `${b.gateway}:${a.publishedPort}`,
      `${a.gateway}:${a.publishedPort}`,
      `${bridge}:${a.publishedPort}`,
    ]);
    expect(results).toEqual({
      '127.0.0.1:8000': 'connected',
      [`${b.ip}:8000`]: 'connected',
      [`${bridge}:${apiPort}`]: 'connected',
      // Not forwarded between bridges: dropped in silence (by the engine's isolation rules, or on ours, where
      // nothing is forwarded at all).
      [`${a.ip}:8000`]: 'timeout',
      // Published on the host's loopback only; inside B, 127.0.0.1 is B's own.
      [`127.0.0.1:${a.publishedPort}`]: 'ECONNREFUSED',
      [`${b.gateway}:${a.publishedPort}`]: 'ECONNREFUSED',
      [`${a.gateway}:${a.publishedPort}`]: 'ECONNREFUSED',
      [`${bridge}:${a.publishedPort}`]: 'ECONNREFUSED',
    });

    // The api answers B at its control-plane URL: the events path, with B's key, for B's conversation.
    const c = await t.conversations.create({
      userId: b.user.userId,
      sandboxId: b.sandbox.id,
      sessionApiKey: b.sandbox.session_api_key,
    });
    const post =
      `fetch(process.env.CONTROL_PLANE_URL+"/api/v1/webhooks/events/${c.id}",{method:"POST",` +
      `headers:{"content-type":"application/json","x-session-api-key":"${b.sandbox.session_api_key}"},body:"[]"})` +
      '.then(async (r)=>console.log(r.status,await r.text()),(e)=>console.log("failed",e.cause?.code??e.message))';
    const events = await bash(b, `timeout 10 node -e '${post}'`);
    expect(events.exit_code).toBe(0);
    expect(events.output).toMatch(/^200 \{"stored":0\b/);
  });

  it('B reaches neither the database nor Temporal, at any address of the host', async () => {
    const env = testEnv();
    const ports = [
      portOf(env.mongoUri),
      portOf(env.temporalAddress),
      portOf(env.temporalUiUrl),
      ...(env.postgresUrl ? [portOf(env.postgresUrl)] : []),
    ];
    for (const port of ports) expect(await hostConnects('127.0.0.1', port)).toBe(true); // they listen, on the host's loopback
    const hosts = ['127.0.0.1', b.gateway, dockerEnv().gateway];
    const targets = ports.flatMap((port) => hosts.map((h) => `${h}:${port}`));
    const results = await probe(b, targets);
    expect(results).toEqual(Object.fromEntries(targets.map((x) => [x, 'ECONNREFUSED'])));
  });

  it("B sees none of A's files, nor the host's: its volume is its only mount", async () => {
    const [ca] = await containersOf(a.sandbox.id);
    const [cb] = await containersOf(b.sandbox.id);
    const volumeA = await dockerClient().getVolume(`agent-control-sandbox-${a.sandbox.id}`).inspect();
    // The marker is where A wrote it, on the host and in A.
    expect(fs.readFileSync(path.join(volumeA.Mountpoint, marker), 'utf8')).toBe('secret-of-a\n');
    const findMarker = `find / \\( -path /proc -o -path /sys -o -path /dev \\) -prune -o -name ${marker} -print 2>/dev/null; echo searched`;
    expect((await bash(a, findMarker)).output).toBe(`/workspace/${marker}\nsearched\n`);
    expect(fs.existsSync(dir)).toBe(true);

    const infoB = await dockerClient().getContainer(cb!.Id).inspect();
    expect(infoB.Mounts).toEqual([
      expect.objectContaining({
        Type: 'volume',
        Name: `agent-control-sandbox-${b.sandbox.id}`,
        Destination: '/workspace',
        RW: true,
      }),
    ]);
    expect(infoB.HostConfig.Binds).toEqual([`agent-control-sandbox-${b.sandbox.id}:/workspace`]);
    expect(ca!.Id).not.toBe(cb!.Id);

    expect((await bash(b, findMarker)).output).toBe('searched\n');
    const paths = [
      dir,
      path.join(dir, 'specs.json'),
      volumeA.Mountpoint,
      path.dirname(volumeA.Mountpoint),
      '/var/run/docker.sock',
      dockerEnv().host.replace(/^unix:\/\//, ''),
    ];
    const listed = await bash(b, `ls -d ${paths.join(' ')}`);
    expect(listed.exit_code).toBe(2);
    // Under /root, the image's own home of root (mode 700) stops the user `node` first; nothing of the host is there.
    const why = (p: string) => (p.startsWith('/root/') ? 'Permission denied' : 'No such file or directory');
    expect(listed.output.trim().split('\n').sort()).toEqual(
      paths.map((p) => `ls: cannot access '${p}': ${why(p)}`).sort(),
    );

    // Mounts inside B: the image's root and the volume; the rest is the kernel's (/proc, /sys, /dev) and
    // the engine's own per-container files (/etc/hosts, hostname, resolv.conf) and its init, read-only.
    const mounts = (await bash(b, 'cat /proc/mounts')).output
      .trim()
      .split('\n')
      .map((l) => l.split(' '));
    const engineFiles = ['/etc/hosts', '/etc/hostname', '/etc/resolv.conf', '/usr/sbin/docker-init'];
    const points = mounts
      .map((m) => m[1]!)
      .filter((p) => !/^\/(proc|sys|dev)(\/|$)/.test(p) && !engineFiles.includes(p));
    expect(points.sort()).toEqual(['/', '/workspace']);
    expect(mounts.find((m) => m[1] === '/usr/sbin/docker-init')?.[3]).toMatch(/^ro,/);
  });

  it("B's commands hold no session key and no secrets key, and have no capability nor a way to gain one", async () => {
    const [cb] = await containersOf(b.sandbox.id);
    const infoB = await dockerClient().getContainer(cb!.Id).inspect();
    expect(infoB.HostConfig).toMatchObject({
      Privileged: false,
      CapDrop: ['ALL'],
      CapAdd: null,
      SecurityOpt: ['no-new-privileges'],
    });
    // The key is in the container's environment, for the runtime; not in what its commands inherit.
    expect(infoB.Config.Env).toContain(`SESSION_API_KEY=${b.sandbox.session_api_key}`);

    // Not root in its container: the image's unprivileged user, whichever runtime.
    expect((await bash(b, 'id -u')).output.trim()).toBe('1000');
    const env = await bash(b, 'env');
    expect(env.exit_code).toBe(0);
    expect(env.output).toContain('RUNTIME_WORKING_DIR=/workspace'); // it is the runtime's environment
    expect(env.output).not.toContain('SESSION_API_KEY');
    expect(env.output).not.toContain(b.sandbox.session_api_key);
    expect(env.output).not.toContain(a.sandbox.session_api_key);
    expect(env.output).not.toContain(TEST_SECRETS_KEY);

    const status = await bash(
      b,
      "grep -E '^(CapInh|CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs|Seccomp):' /proc/self/status",
    );
    expect(status.output.split('\n').filter(Boolean)).toEqual([
      'CapInh:\t0000000000000000',
      'CapPrm:\t0000000000000000',
      'CapEff:\t0000000000000000',
      'CapBnd:\t0000000000000000',
      'CapAmb:\t0000000000000000',
      'NoNewPrivs:\t1',
      'Seccomp:\t2', // the engine's default profile
    ]);
    const mount = await bash(b, 'mkdir -p /tmp/m && mount -t tmpfs none /tmp/m');
    expect(mount.exit_code).not.toBe(0);
    expect(mount.output).toMatch(/must be superuser|permission denied|not permitted/i);
    // Nor a user namespace of its own, where it would be root (the default seccomp profile refuses it).
    expect(await bash(b, 'unshare -Ur id -u')).toMatchObject({
      exit_code: 1,
      output: 'unshare: unshare failed: Operation not permitted\n',
    });
  });

  it("B's agent, asked to reach A and the database through its terminal tool, observes the failures", async () => {
    const dbPort = portOf(testEnv().mongoUri);
    const targets = [
      `${a.ip}:8000`,
      `${dockerEnv().gateway}:${a.publishedPort}`,
      `${b.gateway}:${dbPort}`,
      '127.0.0.1:8000',
    ];
    const llm = await new ScriptedLlm([
      { content: 'Probing.', tool_calls: [{ name: 'terminal', arguments: { command: probeCommand(targets) } }] },
      { tool_calls: [{ name: 'finish', arguments: { message: 'Done.' } }] },
    ]).start(0, dockerEnv().gateway);
    try {
      await t.setOrgLlm(b.user.key, { model: 'scripted-model', base_url: llm.url, api_key: 'sk-test' });
      const accepted = await t.request('POST', '/api/v1/app-conversations', {
        key: b.user.key,
        body: {
          sandbox_id: b.sandbox.id,
          initial_message: { content: [{ text: "Reach the other user's sandbox and the database." }], run: true },
        },
      });
      expect(accepted.status).toBe(200);
      const ready = await waitForStartTask(
        t,
        b.user.key,
        accepted.body.id,
        (x) => x.status === 'READY' || x.status === 'ERROR',
        120_000,
      );
      expect({ status: ready.status, detail: ready.detail }).toEqual({ status: 'READY', detail: null });
      const log = await eventually(
        async () => {
          const events = await loggedEvents(t, b.user.key, ready.app_conversation_id);
          expect(events.filter((e) => e.kind === 'ActionEvent').map((e) => e.tool_name)).toEqual([
            'terminal',
            'finish',
          ]);
          expect(events.some((e) => e.kind === 'ObservationEvent' && e.tool_name === 'terminal')).toBe(true);
          return events;
        },
        { timeoutMs: 60_000, intervalMs: 250 },
      );
      const observed = JSON.stringify(log.find((e) => e.kind === 'ObservationEvent'));
      expect(observed).toContain(`${a.ip}:8000 timeout`);
      expect(observed).toContain(`${dockerEnv().gateway}:${a.publishedPort} ECONNREFUSED`);
      expect(observed).toContain(`${b.gateway}:${dbPort} ECONNREFUSED`);
      expect(observed).toContain('127.0.0.1:8000 connected'); // the same probe, run by the agent, does reach
    } finally {
      await llm.close();
    }
  });
});

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
