/**
 * kill -9 of the worker while it starts containers: a new worker finishes each start with exactly one
 * container per sandbox (the container's name is the sandbox's, so a retried start finds what the killed
 * attempt made, whether it was created, started, or not yet there).
 */
import type { ChildProcess } from 'node:child_process';
import type { TestApi } from '../helpers/api';
import { containersOf, DOCKER_SPEC_ID, dockerServiceEnv, removeSandboxContainers } from '../helpers/docker';
import { agentUrl, runtimeGet, waitForStatus } from '../helpers/sandboxes';
import { startServiceUnderTest, type ServiceUnderTest } from '../helpers/service';
import { startWorkerProcess } from '../helpers/worker';

describe('docker sandboxes across a worker crash', () => {
  let service: ServiceUnderTest;
  let t: TestApi;
  let dir: string;
  const workers: ChildProcess[] = [];
  const started = new Set<string>();

  beforeAll(async () => {
    // No worker of the fixture's: the test's own run as processes it kills.
    service = await startServiceUnderTest(
      'docker-restart-',
      (dataDir) => dockerServiceEnv(dataDir, { SANDBOX_HEALTH_INTERVAL_MS: '500' }),
      { worker: false, beforeRemove: () => removeSandboxContainers(started) },
    );
    ({ t, dataDir: dir } = service);
  });

  afterAll(async () => {
    for (const w of workers) if (w.exitCode === null) w.kill('SIGKILL');
    await service?.close();
  });

  const workerEnv = () => ({
    DOCKER_HOST: t.config.sandboxes.dockerHost,
    DOCKER_PUBLISH_HOST: t.config.sandboxes.dockerPublishHost,
    SANDBOX_CONTROL_PLANE_URL: t.config.sandboxes.controlPlaneUrl,
    SANDBOX_IDLE_TIMEOUT_MS: '0',
  });

  it('leaves exactly one container per sandbox whose start a killed worker interrupted', async () => {
    const u = await t.newUser();
    const first = startWorkerProcess(t.config, dir, workerEnv());
    workers.push(first.child);
    await first.ready;

    // Starts at staggered moments, so the kill lands before, during and after container creation.
    const ids: string[] = [];
    for (const wait of [0, 150, 300, 450]) {
      const r = await t.request('POST', '/api/v1/sandboxes', { key: u.key, body: { sandbox_spec_id: DOCKER_SPEC_ID } });
      expect(r.status).toBe(200);
      ids.push(r.body.id);
      started.add(r.body.id);
      await new Promise((res) => setTimeout(res, wait));
    }
    first.child.kill('SIGKILL');
    await new Promise((r) => first.child.once('exit', r));

    const second = startWorkerProcess(t.config, dir, workerEnv());
    workers.push(second.child);
    await second.ready;

    for (const id of ids) {
      const s = await waitForStatus(t, u.key, id, 'RUNNING', 90_000);
      expect((await runtimeGet(agentUrl(s), '/health', s.session_api_key))!.status).toBe(200);
      const containers = await containersOf(id);
      expect(containers.map((c) => c.State)).toEqual(['running']);
    }

    second.child.kill('SIGTERM');
    expect(await new Promise((r) => second.child.once('exit', r))).toBe(0);
  }, 180_000);
});
