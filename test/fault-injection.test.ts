/**
 * Fault injection (issue 13): the real launcher with its five supervised children; a steady ingest into
 * one conversation (a client that resends a batch until it is acknowledged, as a runtime's outbox does)
 * and a start before each kill; then kill -9 of the api, the worker, FerretDB, PostgreSQL and the Temporal server in
 * turn. Afterwards: every acknowledged event is stored exactly once, the log's seq is contiguous, every
 * start is READY or ERROR, and no ingest lease is left behind.
 */
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { ScriptedLlm } from '../src/llm/scripted-llm';
import { testEnv } from './helpers/env';
import { alive, freeLauncherPorts, Launcher, until, type PID_FILES } from './helpers/launcher';
import { adminSession, expectLogIntact, steadyIngest } from './helpers/service-under-faults';

describe('fault injection', () => {
  let launcher: Launcher;
  let llm: ScriptedLlm;
  let ingest: ReturnType<typeof steadyIngest> | undefined;

  beforeAll(async () => {
    launcher = new Launcher(path.join(testEnv().dir, 'fault-injection-data'), await freeLauncherPorts(), {
      // Starts that lose their worker mid-step get their step's heartbeat timeout soon.
      START_TASK_RECONCILE_AFTER_MS: '5000',
    });
    llm = await new ScriptedLlm([]).start();
  });

  afterAll(async () => {
    await ingest?.stop();
    launcher?.killAll();
    await llm?.close();
  });

  it('kill -9 of each process during ingest and starts: nothing lost, nothing twice, nothing stuck', async () => {
    const l = launcher.launch();
    await launcher.waitUp(l);
    const { call, taskOf } = await adminSession(launcher, l, llm.url);

    // The first start makes the sandbox (one runtime process) that every later start shares.
    const first = (await call('POST', '/api/v1/app-conversations', {})).body;
    await until('the first start is READY', async () => (await taskOf(first.id))?.status === 'READY', 120_000);
    const conversationId = first.id as string;
    const sandboxId = (await taskOf(first.id)).sandbox_id as string;
    const sandbox = (await call('GET', `/api/v1/sandboxes?id=${sandboxId}`)).body[0];
    const sessionKey = sandbox.session_api_key as string;

    // Steady ingest: batches of 20, each resent until acknowledged (through every kill).
    ingest = steadyIngest(launcher.ports.api, conversationId, sessionKey);

    const starts: string[] = [first.id];
    const startOne = async () => {
      const id = randomUUID();
      // A start may meet a dead api or Temporal: it is sent again, as a client would (the same id joins).
      await until(
        `start ${id} accepted`,
        async () =>
          (await call('POST', '/api/v1/app-conversations', { conversation_id: id, sandbox_id: sandboxId })).status ===
          200,
        90_000,
      );
      starts.push(id);
    };

    const downtime: Record<string, number> = {};
    for (const name of ['api', 'worker', 'ferretdb', 'postgres', 'temporal'] as (keyof typeof PID_FILES)[]) {
      await ingest.goesOn(3, 60_000);
      await startOne(); // the kill lands while this start is under way
      const pid = launcher.pidOf(name)!;
      process.kill(pid, 'SIGKILL');
      const killedAt = Date.now();
      await until(`${name} restarted`, () => {
        const now = launcher.pidOf(name);
        return now !== undefined && now !== pid && alive(now);
      });
      await ingest.goesOn(1, 90_000, `ingest resumes after ${name}`);
      downtime[name] = Date.now() - killedAt;
      expect(l.child.exitCode).toBeNull();
    }
    await until('the service answers', async () => (await launcher.api('/ready')).status === 200);
    await ingest.stop();

    // Every start ends, READY or ERROR (a start cut by a kill may end in ERROR; it must not hang).
    const ended = async () =>
      (await Promise.all(starts.map(taskOf))).every((t) => t && ['READY', 'ERROR'].includes(t.status));
    await until('every start READY or ERROR', ended, 180_000);
    const final = await Promise.all(starts.map(taskOf));

    // The log, read straight from the database: acknowledged events once each, seq 1..n without a hole.
    await expectLogIntact(launcher, conversationId, ingest.acknowledged);
    console.log(
      `fault injection: ${ingest.counts.batches} batches (${ingest.acknowledged.size} events) acknowledged, ${ingest.counts.retries} resends; ` +
        `starts ${final.map((t) => t.status).join(', ')}; ingest back after kill -9 of ${Object.entries(downtime)
          .map(([n, ms]) => `${n} ${(ms / 1000).toFixed(1)} s`)
          .join(', ')}`,
    );

    // The sandbox's runtime outlives the launcher by design: delete it, then stop.
    expect((await call('DELETE', `/api/v1/sandboxes/${sandboxId}`)).status).toBe(200);
    l.child.kill('SIGINT');
    expect(await l.exited).toBe(0);
  }, 600_000);
});
