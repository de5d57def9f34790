/**
 * What the fault suites (kill -9, SIGSTOP) do to a launched service and check afterwards: an admin
 * session with the scripted LLM, a steady ingest that resends each batch until it is acknowledged (as a
 * runtime's outbox does), starts, and the log read straight from the database.
 */
import fs from 'node:fs';
import { MongoClient, type Db } from 'mongodb';
import { embeddedServersFile } from '../../src/cli/embedded-servers';
import { messages } from './event-samples';
import { eventually } from './eventually';
import { sleep, until, type Launch, type Launcher } from './launcher';

export interface Session {
  key: string;
  call(method: string, p: string, body?: unknown): Promise<{ status: number; body: any }>;
  taskOf(id: string): Promise<any>;
}

/** The admin key the launcher printed, and its organization's LLM set to `llmUrl`. */
export async function adminSession(launcher: Launcher, l: Launch, llmUrl: string): Promise<Session> {
  const key = l.output().match(/\n\s+(acp_[A-Za-z0-9_-]{43})\n/)![1]!;
  const call = async (method: string, p: string, body?: unknown) => {
    const r = await launcher.api(p, key, { method, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) });
    const text = await r.text();
    return { status: r.status, body: text ? JSON.parse(text) : undefined };
  };
  const me = await call('GET', '/api/v1/users/me');
  const set = await call('PATCH', `/api/organizations/${me.body.current_org_id}`, {
    agent_settings: { agent_kind: 'platform', llm: { model: 'scripted-model', base_url: llmUrl } },
  });
  if (set.status !== 200) throw new Error(`the organization's LLM was not set: ${set.status}`);
  const taskOf = async (id: string) => (await call('GET', `/api/v1/app-conversations/start-tasks?ids=${id}`)).body?.[0];
  return { key, call, taskOf };
}

/** Batches of 20 into one conversation, each resent until acknowledged, `pauseMs` apart, until `stop()`. */
export function steadyIngest(apiPort: number, conversationId: string, sessionKey: string, pauseMs = 50) {
  const acknowledged = new Set<string>();
  /** Every answer that was not a 200, by status (or the fetch error's name). */
  const counts = { batches: 0, retries: 0, refused: {} as Record<string, number> };
  let stopped = false;
  const done = (async () => {
    while (!stopped) {
      const batch = messages(20);
      await eventually(
        async () => {
          if (stopped) return true; // a test that failed stops it in its afterAll, whatever the api does
          const ok = await fetch(`http://127.0.0.1:${apiPort}/api/v1/webhooks/events/${conversationId}`, {
            method: 'POST',
            headers: { 'Content-Type': 'application/json', 'X-Session-API-Key': sessionKey },
            body: JSON.stringify(batch),
            signal: AbortSignal.timeout(60_000), // above every bound of the api's: running out means it hung
          })
            .then((r) => {
              if (r.status !== 200) counts.refused[r.status] = (counts.refused[r.status] ?? 0) + 1;
              return r.status === 200;
            })
            .catch((e: Error) => {
              counts.refused[e.name] = (counts.refused[e.name] ?? 0) + 1;
              return false;
            });
          if (!ok) counts.retries++;
          return ok;
        },
        { timeoutMs: Infinity, intervalMs: 200 }, // no bound: resent until acknowledged, through every fault
      );
      if (stopped) break;
      for (const e of batch) acknowledged.add(e.id as string);
      counts.batches++;
      await sleep(pauseMs);
    }
  })();
  return {
    acknowledged,
    counts,
    /** Resolves once at least `n` more batches were acknowledged. */
    goesOn: (n: number, timeoutMs: number, what = 'ingest goes on') => {
      const before = counts.batches;
      return until(what, () => counts.batches >= before + n, timeoutMs);
    },
    async stop() {
      stopped = true;
      await done;
    },
  };
}

/**
 * The log as stored, with the credentials the launcher gave its api: every acknowledged event once, seq
 * 1..n without a hole, the conversation's last_seq, and no ingest lease left behind.
 */
export async function expectLogIntact(
  launcher: Launcher,
  conversationId: string,
  acknowledged: Set<string>,
): Promise<void> {
  const { mongoUri } = JSON.parse(fs.readFileSync(embeddedServersFile(launcher.dataDir), 'utf8')) as {
    mongoUri: string;
  };
  const client = await MongoClient.connect(mongoUri);
  try {
    await expectStoredLogIntact(client.db('agent_control'), conversationId, acknowledged);
  } finally {
    await client.close();
  }
}

/** The same in `db`; answers the stored ids in seq order. */
export async function expectStoredLogIntact(
  db: Db,
  conversationId: string,
  acknowledged: Set<string>,
): Promise<string[]> {
  const events = await db
    .collection('events')
    .find({ conversation_id: conversationId }, { projection: { id: 1, seq: 1 } })
    .toArray();
  events.sort((a, b) => (a.seq as number) - (b.seq as number));
  const ids = events.map((e) => e.id as string);
  expect(new Set(ids).size).toBe(ids.length);
  for (const id of acknowledged) expect(ids).toContain(id);
  expect(events.map((e) => e.seq as number)).toEqual(Array.from({ length: events.length }, (_, i) => i + 1));
  const conversation = await db.collection('conversations').findOne({ _id: conversationId as never });
  expect(conversation?.last_seq).toBe(events.length);
  expect(await db.collection('ingest_leases').countDocuments()).toBe(0);
  return ids;
}
