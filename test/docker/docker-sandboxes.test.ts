/**
 * The docker provider against a real Docker engine: the api, the real worker, real Temporal and the
 * database, and the project's runtime image in containers. The runtimes report their events to the api
 * on the host's bridge address; the scripted LLM listens there too.
 */
import { ScriptedLlm } from '../../src/llm/scripted-llm';
import { runtimeCall, runtimeOf, settledLog, steps, waitForExecution } from '../helpers/agent';
import type { TestApi } from '../helpers/api';
import {
  containersOf,
  dockerClient,
  dockerEnv,
  DOCKER_SPEC_ID,
  dockerServiceEnv,
  networksOf,
  removeSandboxContainers,
  runtimeSpec,
  volumeExists,
} from '../helpers/docker';
import { agentUrl, runtimeGet, waitForStatus } from '../helpers/sandboxes';
import { startServiceUnderTest, type ServiceUnderTest } from '../helpers/service';

describe('docker sandboxes on a real engine', () => {
  let service: ServiceUnderTest;
  let t: TestApi;
  let user: { userId: string; key: string };
  const started = new Set<string>();

  beforeAll(async () => {
    service = await startServiceUnderTest(
      'docker-sandboxes-',
      (dir) =>
        dockerServiceEnv(dir, { SANDBOX_HEALTH_INTERVAL_MS: '250', SANDBOX_HEALTH_GRACE_MS: '1000' }, [
          runtimeSpec({ id: 'missing-image', image: 'agent-control/no-such-image:1' }),
        ]),
      { beforeRemove: () => removeSandboxContainers(started) },
    );
    t = service.t;
    user = await t.newUser();
  });

  afterAll(async () => {
    await service?.close();
  });

  const running = async () => {
    const r = await t.request('POST', '/api/v1/sandboxes', {
      key: user.key,
      body: { sandbox_spec_id: DOCKER_SPEC_ID },
    });
    expect(r.status).toBe(200);
    started.add(r.body.id);
    return waitForStatus(t, user.key, r.body.id, 'RUNNING', 60_000);
  };
  const bash = (s: any, command: string) =>
    runtimeCall(runtimeOf(s), 'POST', '/api/bash/execute_bash_command', { command });

  it('starts a container: RUNNING, /alive on a loopback port, limits, init, an unprivileged runtime on its volume and its own network', async () => {
    const s = await running();
    expect(s.exposed_urls).toEqual([
      { name: 'AGENT_SERVER', url: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+$/), port: expect.any(Number) },
    ]);
    expect(await runtimeGet(agentUrl(s), '/alive')).toEqual({ status: 200, body: { status: 'ok' } });
    expect((await runtimeGet(agentUrl(s), '/health'))!.status).toBe(401);

    const [c] = await containersOf(s.id);
    const info = await dockerClient().getContainer(c!.Id).inspect();
    expect(info.Name).toBe(`/agent-control-sandbox-${s.id}`);
    expect(info.Config.Image).toBe(dockerEnv().images.runtime);
    const [network, ...others] = await networksOf(s.id);
    expect(others).toEqual([]);
    expect(network).toMatchObject({ Name: `agent-control-sandbox-${s.id}`, Driver: 'bridge', Internal: false });
    expect(info.HostConfig).toMatchObject({
      Init: true,
      Memory: 512 * 1024 * 1024,
      MemorySwap: 512 * 1024 * 1024,
      NanoCpus: 1e9,
      PidsLimit: 512,
      Privileged: false,
      CapDrop: ['ALL'],
      CapAdd: null,
      SecurityOpt: ['no-new-privileges'],
      NetworkMode: network!.Id,
      Binds: [`agent-control-sandbox-${s.id}:/workspace`],
    });
    expect(info.HostConfig.PortBindings).toEqual({ '8000/tcp': [{ HostIp: '127.0.0.1', HostPort: '' }] });
    expect(info.HostConfig.Devices ?? []).toEqual([]);
    expect(Object.keys(info.NetworkSettings.Networks)).toEqual([`agent-control-sandbox-${s.id}`]);
    expect(info.Mounts).toEqual([
      expect.objectContaining({ Type: 'volume', Name: `agent-control-sandbox-${s.id}`, Destination: '/workspace' }),
    ]);

    const whoami = await bash(s, 'id -un; pwd; cat /proc/1/comm');
    expect(whoami.status).toBe(200);
    expect(whoami.body.exit_code).toBe(0);
    expect(whoami.body.output.split('\n').slice(0, 3)).toEqual(['node', '/workspace', 'docker-init']);

    // Without a capability the runtime still does its work: a repository cloned, files edited, bash.
    const work = await bash(
      s,
      'set -e; git init -q origin && cd origin && echo one > f && git add f && git -c user.email=a@b -c user.name=a commit -qm one && cd .. && ' +
        'git clone -q origin copy && sed -i s/one/two/ copy/f && cat copy/f && mkdir -p d/e && ln -s ../../copy/f d/e/link && cat d/e/link',
    );
    expect(work.body).toMatchObject({ exit_code: 0, output: 'two\ntwo\n' });
  });

  it('runs an agent conversation with the scripted LLM; its events reach the log through the api', async () => {
    const s = await running();
    const rt = runtimeOf(s);
    const llm = await new ScriptedLlm([
      {
        content: 'Writing the file.',
        tool_calls: [{ name: 'terminal', arguments: { command: 'echo from-the-agent > note.txt && cat note.txt' } }],
      },
      { tool_calls: [{ name: 'finish', arguments: { message: 'Done.' } }] },
    ]).start(0, dockerEnv().gateway);
    try {
      const c = await t.conversations.create({
        userId: user.userId,
        sandboxId: s.id,
        sessionApiKey: s.session_api_key,
      });
      const created = await runtimeCall(rt, 'POST', '/api/conversations', {
        conversation_id: c.id,
        agent: { llm: { model: 'scripted-model', base_url: llm.url, api_key: 'sk-test' } },
        initial_message: { content: [{ text: 'Write a note.' }], run: true },
      });
      expect(created.status).toBe(201);
      const conversation = { id: c.id, llm, runtime: rt };
      await waitForExecution(conversation, 'finished', 30_000);
      const log = await settledLog(t, user.key, conversation, 30_000);
      expect(steps(log)).toEqual([
        'SystemPromptEvent',
        'MessageEvent',
        'ActionEvent',
        'ObservationEvent',
        'ActionEvent',
        'ObservationEvent',
      ]);
      const observation = log.find((e) => e.kind === 'ObservationEvent');
      expect(JSON.stringify(observation)).toContain('from-the-agent');
      expect((await bash(s, 'cat /workspace/note.txt')).body.output.trim()).toBe('from-the-agent');
    } finally {
      await llm.close();
    }
  });

  it('pause freezes the container (its port is silent), resume thaws the same one', async () => {
    const s = await running();
    const [c] = await containersOf(s.id);
    const paused = await t.request('POST', `/api/v1/sandboxes/${s.id}/pause`, { key: user.key });
    expect(paused.body).toMatchObject({ status: 'PAUSED', exposed_urls: [] });
    expect((await dockerClient().getContainer(c!.Id).inspect()).State.Paused).toBe(true);
    expect(await runtimeGet(agentUrl(s), '/alive', undefined, 700)).toBeNull();

    const resumed = await t.request('POST', `/api/v1/sandboxes/${s.id}/resume`, { key: user.key });
    expect(resumed.body).toMatchObject({ status: 'RUNNING', session_api_key: s.session_api_key });
    expect(await runtimeGet(agentUrl(resumed.body), '/alive')).toEqual({ status: 200, body: { status: 'ok' } });
    expect((await containersOf(s.id)).map((x) => x.Id)).toEqual([c!.Id]);
  });

  it('a container killed from outside is ERROR (the provider reports it gone); resume starts a new one on the same volume', async () => {
    const s = await running();
    expect((await bash(s, 'echo kept > /workspace/marker')).body.exit_code).toBe(0);
    const [c] = await containersOf(s.id);
    await dockerClient().getContainer(c!.Id).kill();

    const failed = await waitForStatus(t, user.key, s.id, 'ERROR', 15_000);
    expect(failed.status_detail).toMatch(/exited|no longer exists|did not answer/);

    const resumed = await t.request('POST', `/api/v1/sandboxes/${s.id}/resume`, { key: user.key });
    expect([200, 202]).toContain(resumed.status); // 202: a new container still starting at the answer deadline
    const back = await waitForStatus(t, user.key, s.id, 'RUNNING', 60_000);
    const now = await containersOf(s.id);
    expect(now).toHaveLength(1);
    expect(now[0]!.Id).not.toBe(c!.Id);
    const networks = await networksOf(s.id);
    expect(networks).toHaveLength(1); // the same network, joined again
    expect((await dockerClient().getContainer(now[0]!.Id).inspect()).HostConfig.NetworkMode).toBe(networks[0]!.Id);
    expect((await bash(back, 'cat /workspace/marker')).body.output.trim()).toBe('kept');
  });

  it('an image the engine lacks and no registry serves: ERROR saying so, nothing left behind', async () => {
    const r = await t.request('POST', '/api/v1/sandboxes', {
      key: user.key,
      body: { sandbox_spec_id: 'missing-image' },
    });
    started.add(r.body.id);
    const failed = await waitForStatus(t, user.key, r.body.id, 'ERROR', 60_000);
    expect(failed.status_detail).toContain(
      'the image agent-control/no-such-image:1 is not on the Docker engine and pulling it failed',
    );
    expect(await containersOf(r.body.id)).toEqual([]);
    expect(await volumeExists(`agent-control-sandbox-${r.body.id}`)).toBe(false);
    expect(await networksOf(r.body.id)).toEqual([]);
  });

  it('delete removes the container, its volume and its network', async () => {
    const s = await running();
    expect(await networksOf(s.id)).toHaveLength(1);
    const deleted = await t.request('DELETE', `/api/v1/sandboxes/${s.id}`, { key: user.key });
    expect(deleted.body.status).toBe('DELETED');
    expect(await containersOf(s.id)).toEqual([]);
    expect(await volumeExists(`agent-control-sandbox-${s.id}`)).toBe(false);
    expect(await networksOf(s.id)).toEqual([]);
    expect(await runtimeGet(agentUrl(s), '/alive', undefined, 700)).toBeNull();
  });
});
