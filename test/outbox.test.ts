/**
 * The runtime's outbox against the real api: every event arrives once and in order, while the api is
 * stopped and started again, and after the outbox itself is replaced (a restarted runtime).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { startApiServer, type ApiServer } from '../src/api/server';
import { freePort } from '../src/process/net';
import { EventOutbox } from '../src/runtime/agent/outbox';
import { startTestApi, type TestApi } from './helpers/api';
import { testConfig } from './helpers/env';
import { setTimeout as sleep } from 'node:timers/promises';

const message = (i: number) => ({
  id: `ev-${i}`,
  kind: 'MessageEvent',
  source: 'agent',
  timestamp: new Date(Date.UTC(2026, 0, 1, 0, 0, 0, i)).toISOString(),
  llm_message: { role: 'assistant', content: [{ type: 'text', text: `event ${i}` }] },
});

describe('event outbox', () => {
  let t: TestApi;
  let dir: string;
  let port: number;

  beforeAll(async () => {
    port = await freePort();
    t = await startTestApi(testConfig({ API_PORT: String(port) }));
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'outbox-'));
  });
  afterAll(async () => {
    await t?.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const stored = async (conversationId: string) =>
    t.database.db
      .collection('events')
      .find({ conversation_id: conversationId })
      .sort({ seq: 1 })
      .project({ id: 1, seq: 1 })
      .toArray();

  it('delivers every event once, in order, across an api restart and a new outbox on the same files', async () => {
    const u = await t.newUser();
    const { conversationId, sessionKey } = await t.newConversation(u.userId);
    const opts = {
      dir: path.join(dir, conversationId),
      conversationId,
      controlPlaneUrl: t.url,
      sessionApiKey: sessionKey,
      batchSize: 25,
      maxBackoffMs: 200,
    };
    const first = new EventOutbox(opts);
    for (let i = 0; i < 100; i++) first.append(message(i));
    await first.flushed();
    expect((await stored(conversationId)).length).toBe(100);

    // The api goes away: events wait on disk; the sender keeps trying.
    await t.api.close();
    for (let i = 100; i < 160; i++) first.append(message(i));
    await sleep(500);
    expect(first.unsent).toBe(60);
    // The runtime restarts too: a new outbox over the same files takes over the unsent events.
    await first.stop();
    const second = new EventOutbox(opts);
    expect(second.unsent).toBe(60);
    for (let i = 160; i < 200; i++) second.append(message(i));

    const api: ApiServer = await startApiServer(
      t.config,
      { mongoUri: t.config.mongo.uri!, temporalAddress: t.config.temporal.address! },
      pino({ level: 'silent' }),
    );
    try {
      await second.flushed();
      const rows = await stored(conversationId);
      expect(rows.map((r) => r.id)).toEqual(Array.from({ length: 200 }, (_, i) => `ev-${i}`));
      expect(rows.map((r) => r.seq)).toEqual(Array.from({ length: 200 }, (_, i) => i + 1));
      expect(fs.readFileSync(path.join(opts.dir, 'outbox.sent'), 'utf8')).toBe('200');
      await second.stop();
    } finally {
      await api.close();
    }
  });

  it('resends nothing already acknowledged, drops a line cut short by a crash, and sets aside a batch the api refuses', async () => {
    const u = await t.newUser();
    const api = await startApiServer(
      t.config,
      { mongoUri: t.config.mongo.uri!, temporalAddress: t.config.temporal.address! },
      pino({ level: 'silent' }),
    );
    try {
      const { conversationId, sessionKey } = await t.newConversation(u.userId);
      const opts = {
        dir: path.join(dir, conversationId),
        conversationId,
        controlPlaneUrl: `http://127.0.0.1:${port}`,
        sessionApiKey: sessionKey,
        maxBackoffMs: 200,
      };
      const a = new EventOutbox(opts);
      a.append(message(1));
      await a.flushed();
      await a.stop();
      fs.appendFileSync(path.join(opts.dir, 'outbox.jsonl'), '{"id":"torn","kind":"Mess');
      const b = new EventOutbox(opts);
      expect(b.unsent).toBe(0);
      b.append({ id: 'bad', kind: 'MessageEvent', source: 'agent' }); // no llm_message: 422
      b.append(message(2));
      await b.flushed();
      await b.stop();
      expect((await stored(conversationId)).map((r) => r.id)).toEqual(['ev-1', 'ev-2']);
      expect(fs.readFileSync(path.join(opts.dir, 'outbox.rejected.jsonl'), 'utf8')).toContain('"id":"bad"');
    } finally {
      await api.close();
    }
  });
});
