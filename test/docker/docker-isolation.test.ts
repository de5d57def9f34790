/**
 * Issue 17 for the docker provider: a sandbox reaches nothing that is not its own. Two users, A and B,
 * each with a RUNNING docker sandbox (test/helpers/docker-sandbox-pair.ts); everything B's runtime runs
 * (commands through its own bash endpoint, and its agent's terminal tool) tries A's runtime, A's files, the
 * test run's DATA_DIR and engine, the database and Temporal, and fails, while the same probes reach what B
 * may reach (its own runtime, the api at its control-plane URL): the probes work, so their failures mean
 * something. A shared network with peers: docker-isolation-peers.test.ts.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { Config } from '../../src/config';
import { ScriptedLlm } from '../../src/llm/scripted-llm';
import { RUNTIME_KINDS } from '../../src/schemas/sandboxes';
import { loggedEvents } from '../helpers/agent';
import type { TestApi } from '../helpers/api';
import { containersOf, dockerClient, dockerEnv } from '../helpers/docker';
import { startDockerSandboxPair, type DockerSandboxPair, type Side } from '../helpers/docker-sandbox-pair';
import { TEST_SECRETS_KEY, testEnv } from '../helpers/env';
import { eventually } from '../helpers/eventually';
import { runtimeGet } from '../helpers/sandboxes';
import { waitForStartTask } from '../helpers/start-tasks';
import { hostConnects, parseProbe, portOf, probeCommand } from '../helpers/tcp-probes';

describe.each(RUNTIME_KINDS)('a docker sandbox on the %s runtime reaches nothing that is not its own', (runtime) => {
  let pair: DockerSandboxPair | undefined;
  let t: TestApi;
  let dir: string;
  let config: Config;
  let a: Side;
  let b: Side;
  const marker = `a-marker-${randomBytes(6).toString('hex')}`;

  /** A command in the side's sandbox, through the control plane's client of its runtime (either one). */
  const bash = (side: Side, command: string) => pair!.bash(side, command);
  const probe = async (side: Side, targets: string[]): Promise<Record<string, string>> => {
    const r = await bash(side, probeCommand(targets));
    expect(r.exit_code).toBe(0);
    const results = parseProbe(r.output);
    expect(Object.keys(results).sort()).toEqual([...targets].sort());
    return results;
  };

  beforeAll(async () => {
    pair = await startDockerSandboxPair(runtime);
    ({ t, dataDir: dir, config, a, b } = pair);
    expect(a.user.userId).not.toBe(b.user.userId);
    expect(await bash(a, `echo secret-of-a > /workspace/${marker}`)).toEqual({
      exit_code: 0,
      output: '',
      timed_out: false,
    });
  }, 240_000);

  afterAll(async () => {
    await pair?.close();
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
