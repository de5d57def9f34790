/**
 * Process sandboxes live on one host (sandbox-workflow.ts): two worker processes as two hosts (WORKER_HOST
 * host-a and host-b, a DATA_DIR each), one api, one shared task queue. A sandbox made while only host A
 * polls is placed there, and its provider calls go to host A's task queue; with host A's worker killed,
 * host B serves its own sandboxes (made, paused, resumed there) while host A's turn ERROR once
 * SANDBOX_HOST_LOST_MS has passed without a check taken, and one of them can be deleted without its host;
 * a worker that comes back as host-a removes what that one left there, picks the other one up again
 * (RUNNING, the same runtime), and pauses it on its host.
 */
import { Client, Connection } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { hostTaskQueue, sandboxWorkflowId } from '../src/temporal/shared';
import { startTestApi, type TestApi } from './helpers/api';
import { testConfig, testEnv } from './helpers/env';
import { eventually } from './helpers/eventually';
import {
  agentUrl,
  killRuntimesUnder,
  runtimeGet,
  runtimesUnder,
  waitForSandbox,
  waitForStatus,
} from './helpers/sandboxes';
import { startWorkerProcess } from './helpers/worker';

const HOST_LOST_MS = 4000;

describe('process sandboxes on the host that holds them', () => {
  let t: TestApi;
  let dir: string;
  let connection: Connection;
  let client: Client;
  const workers: ChildProcess[] = [];
  const hostDir = (host: string) => path.join(dir, host);

  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sandbox-hosts-'));
    t = await startTestApi(
      testConfig({
        DATA_DIR: path.join(dir, 'api'),
        SANDBOX_HEALTH_INTERVAL_MS: '300',
        SANDBOX_IDLE_TIMEOUT_MS: '0',
        SANDBOX_HOST_LOST_MS: String(HOST_LOST_MS),
      }),
    );
    connection = await Connection.connect({ address: testEnv().temporalAddress });
    client = new Client({ connection, namespace: t.config.temporal.namespace });
  });

  afterAll(async () => {
    for (const w of workers) if (w.exitCode === null && w.signalCode === null) w.kill('SIGKILL');
    await t?.close();
    await connection?.close();
    killRuntimesUnder(dir);
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const startHost = async (host: string) => {
    const w = startWorkerProcess(t.config, hostDir(host), { WORKER_HOST: host });
    workers.push(w.child);
    await w.ready;
    return w.child;
  };
  const queueOf = (host: string) => hostTaskQueue(t.config.temporal.taskQueue, host);
  const recordOf = (id: string) =>
    t.database.db.collection<{ _id: string; host_queue?: string | null }>('sandboxes').findOne({ _id: id });
  /** The task queue each provider call of the sandbox's workflow went to, by its summary. */
  const providerQueues = async (id: string) =>
    ((await client.workflow.getHandle(sandboxWorkflowId(id)).fetchHistory()).events ?? [])
      .filter((e) => e.activityTaskScheduledEventAttributes)
      .map(
        (e) =>
          `${JSON.parse(Buffer.from(e.userMetadata!.summary!.data!).toString('utf8'))} @ ${e.activityTaskScheduledEventAttributes!.taskQueue!.name}`,
      );

  it('acts on each sandbox on its own host, survives the loss of one, and picks its sandboxes up when it comes back', async () => {
    const u = await t.newUser();
    const create = async () => (await t.request('POST', '/api/v1/sandboxes', { key: u.key })).body;

    // Only host A polls: its sandboxes are placed there, and started through its queue.
    const hostA = await startHost('host-a');
    const [a1, a2] = await Promise.all(
      [create(), create()].map(async (c) => waitForStatus(t, u.key, (await c).id, 'RUNNING')),
    );
    for (const s of [a1, a2]) {
      expect((await recordOf(s.id))?.host_queue).toBe(queueOf('host-a'));
      expect(runtimesUnder(path.join(hostDir('host-a'), 'sandboxes', s.id))).toHaveLength(1);
      expect(await providerQueues(s.id)).toEqual([`start the runtime @ ${queueOf('host-a')}`]);
    }

    // Host B comes, host A goes (kill -9): B's worker now runs every workflow, A's sandboxes included.
    await startHost('host-b');
    hostA.kill('SIGKILL');
    await new Promise((r) => hostA.once('exit', r));
    const b1 = await waitForStatus(t, u.key, (await create()).id, 'RUNNING');
    expect((await recordOf(b1.id))?.host_queue).toBe(queueOf('host-b'));
    expect(runtimesUnder(path.join(hostDir('host-b'), 'sandboxes', b1.id))).toHaveLength(1);
    expect((await t.request('POST', `/api/v1/sandboxes/${b1.id}/pause`, { key: u.key })).body.status).toBe('PAUSED');
    expect((await t.request('POST', `/api/v1/sandboxes/${b1.id}/resume`, { key: u.key })).body.status).toBe('RUNNING');
    expect(await providerQueues(b1.id)).toEqual(
      ['start the runtime', 'pause the runtime', 'resume the runtime'].map((c) => `${c} @ ${queueOf('host-b')}`),
    );

    // A's sandboxes: no worker of their host takes a check; past SANDBOX_HOST_LOST_MS they are ERROR,
    // saying why. (Their runtimes still run on host A, out of the service's reach.)
    const lost = await Promise.all(
      [a1, a2].map((s) => waitForSandbox(t, u.key, s.id, (x) => x.status === 'ERROR', 60_000)),
    );
    for (const s of lost)
      expect(s.status_detail).toContain(`no worker of its host (task queue ${queueOf('host-a')}) takes its calls`);
    // One of them deleted without its host: DELETED, saying what stays behind there until then.
    const deleted = await t.request('DELETE', `/api/v1/sandboxes/${a2.id}`, { key: u.key });
    expect(deleted.status).toBe(200);
    expect(deleted.body.status).toBe('DELETED');
    const gone = (await t.stores.sandboxes.get(a2.id))!;
    expect(gone.status_detail).toMatch(/so its runtime and files there are removed when a worker of that host runs$/);
    expect(gone.runtime).not.toBeNull();
    expect(runtimesUnder(path.join(hostDir('host-a'), 'sandboxes', a2.id))).toHaveLength(1);

    // Host A comes back: it removes what the deleted one left, and picks the other up again, with the
    // runtime it had.
    await startHost('host-a');
    await eventually(async () => expect((await t.stores.sandboxes.get(a2.id))!.runtime).toBeNull(), {
      timeoutMs: 30_000,
      what: "host A's sweep of the deleted sandbox",
    });
    expect(runtimesUnder(path.join(hostDir('host-a'), 'sandboxes', a2.id))).toEqual([]);
    expect(fs.existsSync(path.join(hostDir('host-a'), 'sandboxes', a2.id))).toBe(false);
    const back = await waitForStatus(t, u.key, a1.id, 'RUNNING', 60_000);
    expect(back.session_api_key).toBe(a1.session_api_key);
    expect((await runtimeGet(agentUrl(back), '/health', back.session_api_key))!.status).toBe(200);
    expect(runtimesUnder(path.join(hostDir('host-a'), 'sandboxes', a1.id))).toHaveLength(1);
    const paused = await t.request('POST', `/api/v1/sandboxes/${a1.id}/pause`, { key: u.key });
    expect(paused.body.status).toBe('PAUSED');
    expect(await runtimeGet(agentUrl(back), '/alive', undefined, 700)).toBeNull(); // stopped on host A
    // (A paused sandbox is still checked, so a check may follow: the last provider call is the pause.)
    expect((await providerQueues(a1.id)).filter((c) => !c.startsWith('health check')).at(-1)).toBe(
      `pause the runtime @ ${queueOf('host-a')}`,
    );
    // B's sandbox never left B.
    expect((await t.request('GET', `/api/v1/sandboxes?id=${b1.id}`, { key: u.key })).body[0].status).toBe('RUNNING');
    // RECORD_FIXTURES=1 keeps this life (placed, started on its host, checked there and from elsewhere,
    // lost, back, paused) for the replay suite.
    if (process.env.RECORD_FIXTURES) {
      const history = await client.workflow.getHandle(sandboxWorkflowId(a1.id)).fetchHistory();
      fs.writeFileSync(
        path.join(__dirname, 'fixtures', 'sandbox-history-hosts.binpb'),
        temporal.api.history.v1.History.encode(history).finish(),
      );
    }
  }, 180_000);
});
