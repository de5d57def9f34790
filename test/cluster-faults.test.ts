/**
 * The production shape under faults, on loopback: a real two-node Temporal cluster on PostgreSQL, the
 * document store, two apis and two workers as on two hosts (host A: node A, an api process, a worker;
 * host B: node B, an api, a worker). Under a bounded load (starts spread over both apis, a websocket
 * subscriber on api A while events are ingested through api B), api A, worker A and node A are killed
 * (-9) at once; worker A comes back (as a supervisor would restart it), on node B.
 *
 * Every start ends READY with each status once and in order (WAITING_FOR_SANDBOX again only with its
 * place in the user's line); the subscriber, reconnecting to api B with
 * `after_id`, has every stored event once and in order; no acknowledged event is lost or doubled; host
 * B's sandboxes go on working, and host A's work again once its worker is back. The histories the
 * cluster recorded replay with the workflow code.
 */
import { Client, Connection } from '@temporalio/client';
import { Worker } from '@temporalio/worker';
import type { ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePort } from '../src/process/net';
import { hostTaskQueue, sandboxWorkflowId, startTaskWorkflowId } from '../src/temporal/shared';
import { startTestApi, type TestApi } from './helpers/api';
import { testConfig, testEnv, uniqueName } from './helpers/env';
import { killRuntimesUnder, waitForStatus } from './helpers/sandboxes';
import { expectStoredLogIntact, steadyIngest } from './helpers/service-under-faults';
import { expectStatusesOnceInOrder, waitForStartTask } from './helpers/start-tasks';
import { runningTemporalCluster, type TemporalCluster } from './helpers/temporal-cluster';
import { quietTemporalRuntime } from './helpers/temporal-runtime';
import { startServiceProcess, startWorkerProcess } from './helpers/worker';
import { connect, type Recorder } from './helpers/ws-client';
import { setTimeout as sleep } from 'node:timers/promises';

const STARTS_PER_WAVE = 4;

describe('the production shape: two hosts, one lost under load', () => {
  let dir: string;
  let cluster: TemporalCluster;
  let apiB: TestApi;
  const children: ChildProcess[] = [];
  let connection: Connection | undefined;
  /** What keeps running until stopped (the ingest loop, sockets), stopped by afterAll whatever failed. */
  const running: (() => unknown)[] = [];

  beforeAll(async () => {
    quietTemporalRuntime();
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cluster-faults-'));
    cluster = await runningTemporalCluster(dir, 2);
  }, 180_000);

  afterAll(async () => {
    for (const stop of running) await stop();
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    await apiB?.close();
    await connection?.close();
    await cluster?.stop();
    killRuntimesUnder(dir);
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const spawned = <T extends { child: ChildProcess; ready: Promise<void> }>(p: T): T => {
    children.push(p.child);
    return p;
  };
  const killed = async (c: ChildProcess) => {
    const gone = new Promise((r) => c.once('exit', r));
    c.kill('SIGKILL');
    await gone;
  };

  it('keeps every start, every acknowledged event and every sandbox through the loss of a host', async () => {
    const [nodeA, nodeB] = cluster.nodes as [TemporalCluster['nodes'][number], TemporalCluster['nodes'][number]];
    const shared = {
      MONGODB_DB: uniqueName('cluster'),
      TEMPORAL_TASK_QUEUE: uniqueName('tq'),
      START_TASK_RECONCILE_AFTER_MS: '5000',
      SANDBOX_HEALTH_INTERVAL_MS: '1000',
      SANDBOX_IDLE_TIMEOUT_MS: '0',
      // Host A's worker is back well within it: its sandboxes never turn ERROR.
      SANDBOX_HOST_LOST_MS: '120000',
      // The sandboxes made to find one on host A, beside the starts' own: no room to wait for.
      USER_MAX_RUNNING_SANDBOXES: '0',
    };
    // Each host's runtimes on an address of its own, as on two machines (what listens on the other
    // host's 127.0.0.1 is not theirs).
    const hostA = {
      ...shared,
      TEMPORAL_ADDRESS: nodeA.address,
      WORKER_HOST: 'host-a',
      SANDBOX_PROCESS_HOST: '127.0.0.2',
      DATA_DIR: path.join(dir, 'host-a'),
    };
    const hostB = {
      ...shared,
      TEMPORAL_ADDRESS: nodeB.address,
      WORKER_HOST: 'host-b',
      SANDBOX_PROCESS_HOST: '127.0.0.3',
      DATA_DIR: path.join(dir, 'host-b'),
    };
    // (The processes get what their config says through their environment: the shared settings too.)
    const hostEnv = (h: typeof hostA) => ({
      ...shared,
      WORKER_HOST: h.WORKER_HOST,
      SANDBOX_PROCESS_HOST: h.SANDBOX_PROCESS_HOST,
    });
    const configA = testConfig({ ...hostA, API_PORT: String(await freePort()) });
    const configB = testConfig(hostB);
    const workerA = spawned(startWorkerProcess(configA, hostA.DATA_DIR, hostEnv(hostA)));
    const workerB = spawned(startWorkerProcess(configB, hostB.DATA_DIR, hostEnv(hostB)));
    const apiA = spawned(
      startServiceProcess(['src', 'api', 'main.js'], 'api listening', configA, path.join(dir, 'api-a'), shared),
    );
    apiB = await startTestApi(configB);
    await Promise.all([workerA.ready, workerB.ready, apiA.ready]);
    const urlA = `http://127.0.0.1:${configA.api.port}`;

    const user = await apiB.newUser();
    // Starts send no message: the LLM is never called.
    await apiB.setOrgLlm(user.key, { model: 'unused-model', base_url: 'http://127.0.0.1:9/v1' });
    const startVia = async (url: string) => {
      const id = randomUUID();
      const r = await fetch(`${url}/api/v1/app-conversations`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', 'X-Access-Token': user.key },
        body: JSON.stringify({ conversation_id: id }),
        signal: AbortSignal.timeout(30_000),
      });
      expect(r.status).toBe(200);
      return id;
    };

    // The live load: a subscriber on api A, ingest through api B, resent until acknowledged.
    const c = await apiB.newConversation(user.userId);
    const socket = (base: string, query = '') =>
      `${base.replace('http', 'ws')}/api/v1/conversation/${c.conversationId}/events/socket${query}`;
    const first: Recorder = connect(socket(urlA), { 'X-Access-Token': user.key });
    await first.opened;
    running.push(() => first.ws.terminate());
    // Paced (a batch of 20 every 200 ms): the log stays a few thousand events over a run of minutes, which
    // the resumed subscriber reads back within its bound also on a loaded machine.
    const ingest = steadyIngest(Number(new URL(apiB.url).port), c.conversationId, c.sessionKey, 200);
    running.push(() => ingest.stop());
    await ingest.goesOn(3, 30_000);
    await first.waitFor(40, 30_000);

    // A sandbox on each host (a sandbox is placed on the host whose worker runs its workflow first:
    // made until each host has one), to be acted on after the loss, host A's once its worker is back.
    const recordOf = (id: string) =>
      apiB.database.db.collection<{ _id: string; host_queue?: string | null }>('sandboxes').findOne({ _id: id });
    const queueOf = (host: string) => hostTaskQueue(shared.TEMPORAL_TASK_QUEUE, host);
    const placed = new Map<string, string>();
    for (let i = 0; i < 16 && placed.size < 2; i++) {
      const made = await apiB.request('POST', '/api/v1/sandboxes', { key: user.key });
      expect(made.status).toBe(200);
      await waitForStatus(apiB, user.key, made.body.id, 'RUNNING');
      const queue = (await recordOf(made.body.id))?.host_queue;
      if (queue && !placed.has(queue)) placed.set(queue, made.body.id);
    }
    expect([...placed.keys()].sort()).toEqual([queueOf('host-a'), queueOf('host-b')]);

    // Wave 1 through both apis, and host A lost while those starts run.
    const wave1 = await Promise.all(
      Array.from({ length: STARTS_PER_WAVE }, (_, i) => startVia(i % 2 ? apiB.url : urlA)),
    );
    await sleep(1000);
    await Promise.all([killed(apiA.child), killed(workerA.child), killed(nodeA.process)]);
    const lostAt = Date.now();
    // Wave 2 through the api that is left, at once.
    const wave2 = await Promise.all(Array.from({ length: STARTS_PER_WAVE }, () => startVia(apiB.url)));
    const acceptedAfterMs = Date.now() - lostAt;
    // Host A's worker restarted, on the node that is left.
    const workerA2 = spawned(
      startWorkerProcess(
        { ...configA, temporal: { ...configA.temporal, address: nodeB.address } },
        hostA.DATA_DIR,
        hostEnv(hostA),
      ),
    );
    await workerA2.ready;
    await ingest.goesOn(3, 60_000, 'ingest goes on through api B');

    // Every start READY, its statuses once each and in order (the workflow's own list).
    const ids = [...wave1, ...wave2];
    const ended = await Promise.all(
      ids.map((id) =>
        waitForStartTask(apiB, user.key, id, (s) => s.status === 'READY' || s.status === 'ERROR', 180_000),
      ),
    );
    expect(ended.map((s) => [s.id, s.status, s.detail])).toEqual(ids.map((id) => [id, 'READY', null]));
    console.log(
      `host A lost: the next ${STARTS_PER_WAVE} starts accepted by api B within ${acceptedAfterMs} ms, all ${ids.length} READY ${((Date.now() - lostAt) / 1000).toFixed(1)} s after the loss; ingest: ${ingest.counts.batches} batches acknowledged, ${ingest.counts.retries} resent`,
    );
    connection = await Connection.connect({ address: nodeB.address });
    const client = new Client({ connection, namespace: 'default' });
    // (Told again only as a place in the user's line: 8 starts over USER_MAX_CONCURRENT_STARTS=5.)
    await expectStatusesOnceInOrder(client, ids);

    // The log: every acknowledged event once, seq without a hole.
    await ingest.stop();
    expect(ingest.acknowledged.size).toBeGreaterThan(0);
    const stored = await expectStoredLogIntact(apiB.database.db, c.conversationId, ingest.acknowledged);
    // The subscriber lost api A; resumed on api B after the last event it had, it has each one once, in order.
    expect((await first.closed).code).not.toBe(1000);
    const had = first.messages.map((e) => e.id as string);
    const resumed = connect(socket(apiB.url, `?after_id=${had.at(-1)}`), { 'X-Access-Token': user.key });
    running.push(() => resumed.ws.terminate());
    // Catch-up from the log, then live: bounded by what there is to read (20 ms an event, a minute at least).
    await resumed.waitFor(stored.length - had.length, Math.max(60_000, (stored.length - had.length) * 20));
    await sleep(300); // nothing more may arrive
    expect([...had, ...resumed.messages.map((e) => e.id as string)]).toEqual(stored);
    resumed.ws.close();

    // Sandboxes: the starts' are on one host or the other. Host A's sandbox (its worker back) and host
    // B's pause and resume, each on its own host.
    const sandboxes = await Promise.all(ended.map(async (s) => (await recordOf(s.sandbox_id as string))!));
    expect(sandboxes.every((s) => s.host_queue === queueOf('host-a') || s.host_queue === queueOf('host-b'))).toBe(true);
    for (const id of placed.values()) {
      for (const [op, status] of [
        ['pause', 'PAUSED'],
        ['resume', 'RUNNING'],
      ] as const) {
        const r = await apiB.request('POST', `/api/v1/sandboxes/${id}/${op}`, { key: user.key });
        expect([r.status, r.body.status]).toEqual([200, status]);
      }
    }
    console.log(
      `the starts' sandboxes: ${sandboxes.filter((s) => s.host_queue === queueOf('host-a')).length} on host A, ${sandboxes.filter((s) => s.host_queue === queueOf('host-b')).length} on host B`,
    );

    // What the cluster recorded replays with the workflow code: the starts', and their sandboxes'.
    const histories = [];
    for (const id of ids.slice(0, 2)) {
      histories.push({
        workflowId: startTaskWorkflowId(id),
        history: await client.workflow.getHandle(startTaskWorkflowId(id)).fetchHistory(),
      });
    }
    for (const id of sandboxes.slice(0, 2).map((s) => s._id)) {
      histories.push({
        workflowId: sandboxWorkflowId(id),
        history: await client.workflow.getHandle(sandboxWorkflowId(id)).fetchHistory(),
      });
    }
    // (The workflows' span exporter sink is the worker's; a replay drops what it is given.)
    const replay = {
      workflowBundle: { codePath: testEnv().workflowBundlePath },
      sinks: { exporter: { export: { fn: () => undefined } } },
    };
    for (const h of histories)
      await expect(Worker.runReplayHistory(replay, h.history, h.workflowId)).resolves.toBeUndefined();
    expect(histories).toHaveLength(4);
    // Host B's processes lived through it all.
    expect([workerB.child.exitCode, workerB.child.signalCode]).toEqual([null, null]);
  }, 600_000);
});
