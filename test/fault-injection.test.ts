/**
 * Fault injection (issue 13): the real launcher with its five supervised children; a steady ingest into
 * one conversation (a client that resends a batch until it is acknowledged, as a runtime's outbox does)
 * and a start before each kill; then kill -9 of the api, the worker, FerretDB, PostgreSQL and the Temporal server in
 * turn. Afterwards: every acknowledged event is stored exactly once, the log's seq is contiguous, every
 * start is READY or ERROR, and no ingest lease is left behind.
 */
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { MongoClient } from 'mongodb';
import { embeddedServersFile } from '../src/cli/embedded-servers';
import { ScriptedLlm } from '../src/llm/scripted-llm';
import { testEnv } from './helpers/env';
import { messages } from './helpers/event-samples';
import { eventually } from './helpers/eventually';
import { alive, freeLauncherPorts, Launcher, sleep, until, type PID_FILES } from './helpers/launcher';

describe('fault injection', () => {
  let launcher: Launcher;
  let llm: ScriptedLlm;

  beforeAll(async () => {
    launcher = new Launcher(path.join(testEnv().dir, 'fault-injection-data'), await freeLauncherPorts(), {
      // Starts that lose their worker mid-step get their step's heartbeat timeout soon.
      START_TASK_RECONCILE_AFTER_MS: '5000',
    });
    llm = await new ScriptedLlm([]).start();
  });

  afterAll(async () => {
    launcher?.killAll();
    await llm?.close();
  });

  it('kill -9 of each process during ingest and starts: nothing lost, nothing twice, nothing stuck', async () => {
    const l = launcher.launch();
    await launcher.waitUp(l);
    const key = l.output().match(/\n\s+(acp_[A-Za-z0-9_-]{43})\n/)![1]!;
    const call = async (method: string, p: string, body?: unknown) => {
      const r = await launcher.api(p, key, { method, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) });
      const text = await r.text();
      return { status: r.status, body: text ? JSON.parse(text) : undefined };
    };
    const me = await call('GET', '/api/v1/users/me');
    expect(
      (await call('PATCH', `/api/organizations/${me.body.current_org_id}`, { agent_settings: { agent_kind: 'platform', llm: { model: 'scripted-model', base_url: llm.url } } })).status,
    ).toBe(200);

    // The first start makes the sandbox (one runtime process) that every later start shares.
    const taskOf = async (id: string) => (await call('GET', `/api/v1/app-conversations/start-tasks?ids=${id}`)).body?.[0];
    const first = (await call('POST', '/api/v1/app-conversations', {})).body;
    await until('the first start is READY', async () => (await taskOf(first.id))?.status === 'READY', 120_000);
    const conversationId = first.id as string;
    const sandboxId = (await taskOf(first.id)).sandbox_id as string;
    const sandbox = (await call('GET', `/api/v1/sandboxes?id=${sandboxId}`)).body[0];
    const sessionKey = sandbox.session_api_key as string;

    // Steady ingest: batches of 20, each resent until acknowledged (through every kill).
    const acknowledged = new Set<string>();
    let stop = false;
    let batches = 0;
    let retries = 0;
    const ingesting = (async () => {
      while (!stop) {
        const batch = messages(20);
        await eventually(
          async () => {
            const ok = await fetch(`http://127.0.0.1:${launcher.ports.api}/api/v1/webhooks/events/${conversationId}`, {
              method: 'POST',
              headers: { 'Content-Type': 'application/json', 'X-Session-API-Key': sessionKey },
              body: JSON.stringify(batch),
              signal: AbortSignal.timeout(15_000),
            })
              .then((r) => r.status === 200)
              .catch(() => false);
            if (!ok) retries++;
            return ok;
          },
          { timeoutMs: Infinity, intervalMs: 200 }, // no bound: resent until acknowledged, through every kill
        );
        for (const e of batch) acknowledged.add(e.id as string);
        batches++;
        await sleep(50);
      }
    })();

    const starts: string[] = [first.id];
    const startOne = async () => {
      const id = randomUUID();
      // A start may meet a dead api or Temporal: it is sent again, as a client would (the same id joins).
      await until(`start ${id} accepted`, async () => (await call('POST', '/api/v1/app-conversations', { conversation_id: id, sandbox_id: sandboxId })).status === 200, 90_000);
      starts.push(id);
    };

    const downtime: Record<string, number> = {};
    for (const name of ['api', 'worker', 'ferretdb', 'postgres', 'temporal'] as (keyof typeof PID_FILES)[]) {
      const before = batches;
      await until('ingest goes on', () => batches >= before + 3, 60_000);
      await startOne(); // the kill lands while this start is under way
      const pid = launcher.pidOf(name)!;
      process.kill(pid, 'SIGKILL');
      const killedAt = Date.now();
      await until(`${name} restarted`, () => {
        const now = launcher.pidOf(name);
        return now !== undefined && now !== pid && alive(now);
      });
      const resumedAt = batches;
      await until(`ingest resumes after ${name}`, () => batches > resumedAt, 90_000);
      downtime[name] = Date.now() - killedAt;
      expect(l.child.exitCode).toBeNull();
    }
    await until('the service answers', async () => (await launcher.api('/ready')).status === 200);
    stop = true;
    await ingesting;

    // Every start ends, READY or ERROR (a start cut by a kill may end in ERROR; it must not hang).
    const ended = async () => (await Promise.all(starts.map(taskOf))).every((t) => t && ['READY', 'ERROR'].includes(t.status));
    await until('every start READY or ERROR', ended, 180_000);
    const final = await Promise.all(starts.map(taskOf));

    // The log, read straight from the database: acknowledged events once each, seq 1..n without a hole.
    // With the credentials the launcher gave its api (FerretDB refuses a client without).
    const { mongoUri } = JSON.parse(fs.readFileSync(embeddedServersFile(launcher.dataDir), 'utf8')) as { mongoUri: string };
    const client = await MongoClient.connect(mongoUri);
    try {
      const db = client.db('agent_control');
      const events = await db.collection('events').find({ conversation_id: conversationId }, { projection: { id: 1, seq: 1 } }).toArray();
      const ids = events.map((e) => e.id as string);
      expect(new Set(ids).size).toBe(ids.length);
      for (const id of acknowledged) expect(ids).toContain(id);
      const seqs = events.map((e) => e.seq as number).sort((a, b) => a - b);
      expect(seqs).toEqual(Array.from({ length: seqs.length }, (_, i) => i + 1));
      const conversation = await db.collection('conversations').findOne({ _id: conversationId as never });
      expect(conversation?.last_seq).toBe(seqs.length);
      expect(await db.collection('ingest_leases').countDocuments()).toBe(0);
    } finally {
      await client.close();
    }
    console.log(
      `fault injection: ${batches} batches (${acknowledged.size} events) acknowledged, ${retries} resends; ` +
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
