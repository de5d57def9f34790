/** Live events over websockets: auth, catch-up without gap or duplicate, fan-out across api processes. */
import { spawn } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { attachEventSocket } from '../src/http/websocket';
import { EventHub, Subscription, type SubscriberSink } from '../src/live/event-hub';
import pino from 'pino';
import { startTestApi, type TestApi } from './helpers/api';
import { testConfig } from './helpers/env';
import { messages, sample } from './helpers/event-samples';
import { eventually } from './helpers/eventually';
import { distPath } from './helpers/run';
import { connect } from './helpers/ws-client';
import { setTimeout as sleep } from 'node:timers/promises';

describe('live events over websockets', () => {
  let t: TestApi;
  let key: string;
  let userId: string;
  const socketUrl = (api: TestApi, conversationId: string, query = '') =>
    `${api.url.replace('http', 'ws')}/api/v1/conversation/${conversationId}/events/socket${query}`;

  beforeAll(async () => {
    // Warnings of the api (live channel cursor, socket failures) go to stderr, to explain a failure.
    t = await startTestApi(testConfig(), pino({ level: 'warn' }, pino.destination(2)));
    ({ userId, key } = await t.newUser());
  });
  afterAll(() => t.close());

  const subscribed = async (api: TestApi, n: number) => {
    await eventually(() => expect(api.api.hub.subscriberCount).toBeGreaterThanOrEqual(n), {
      timeoutMs: 2000,
      intervalMs: 20,
    });
  };

  it('header auth; live events in order, deltas included, nothing from before', async () => {
    const c = await t.newConversation(userId);
    await t.ingest(c.conversationId, c.sessionKey, messages(3));
    const sub = connect(socketUrl(t, c.conversationId), { 'X-Access-Token': key });
    await sub.opened;
    await subscribed(t, 1);
    const batch = [...messages(2), sample('StreamingDeltaEvent', { content: 'Hel' }), ...messages(2)];
    await t.ingest(c.conversationId, c.sessionKey, batch);
    const got = await sub.waitFor(5);
    expect(got.map((e) => e.id)).toEqual(batch.map((e) => e.id));
    expect(got[2]).toMatchObject({ kind: 'StreamingDeltaEvent', content: 'Hel', source: 'agent' });
    sub.ws.close();
  });

  it('a socket with its key in the header gets every event stored once it opened, however slow the lookups that place it', async () => {
    // A second endpoint on the api's hub, whose key lookup takes 1.5 s: the lookups run before the socket opens.
    const server = http.createServer();
    const close = attachEventSocket(server, {
      hub: t.api.hub,
      apiKeys: { resolve: (raw: string) => sleep(1500).then(() => t.apiKeys.resolve(raw)) } as typeof t.apiKeys,
      conversations: t.conversations,
      events: t.stores.events,
      log: pino({ level: 'silent' }),
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const c = await t.newConversation(userId);
      await t.ingest(c.conversationId, c.sessionKey, messages(2)); // before: not sent
      const url = `ws://127.0.0.1:${(server.address() as AddressInfo).port}/api/v1/conversation/${c.conversationId}/events/socket`;
      const sub = connect(url, { 'X-Access-Token': key });
      await sub.opened;
      const after = messages(1);
      expect((await t.ingest(c.conversationId, c.sessionKey, after)).status).toBe(200);
      expect((await sub.waitFor(1, 5000)).map((e) => e.id)).toEqual(after.map((e) => e.id));
      await sleep(200);
      expect(sub.messages).toHaveLength(1);
      sub.ws.close();
      // A wrong key is still told so after the socket opened.
      const bad = connect(url, { 'X-Access-Token': 'acp_wrong' });
      await bad.opened;
      expect((await bad.closed).code).toBe(4001);
    } finally {
      await close();
      await new Promise((r) => server.close(r));
    }
  });

  it('first-frame auth; 4001 for a bad credential; 4004 for a foreign or unknown conversation', async () => {
    const c = await t.newConversation(userId);
    const ok = connect(socketUrl(t, c.conversationId, '?resend_all=true'));
    await ok.opened;
    ok.ws.send(JSON.stringify({ type: 'auth', access_token: key }));
    await t.ingest(c.conversationId, c.sessionKey, messages(1));
    expect(await ok.waitFor(1)).toHaveLength(1);
    ok.ws.close();

    const bad = connect(socketUrl(t, c.conversationId));
    await bad.opened;
    bad.ws.send(JSON.stringify({ type: 'auth', access_token: 'acp_wrong' }));
    expect((await bad.closed).code).toBe(4001);
    const garbage = connect(socketUrl(t, c.conversationId));
    await garbage.opened;
    garbage.ws.send('hello');
    expect((await garbage.closed).code).toBe(4001);

    const stranger = await t.newUser();
    expect((await connect(socketUrl(t, c.conversationId), { 'X-Access-Token': stranger.key }).closed).code).toBe(4004);
    expect((await connect(socketUrl(t, 'no-such'), { 'X-Access-Token': key }).closed).code).toBe(4004);
    expect(
      (await connect(socketUrl(t, c.conversationId, '?after_id=nope'), { 'X-Access-Token': key }).closed).code,
    ).toBe(4000);
  });

  it('after_id: every stored event after it exactly once, in order, while appends continue', async () => {
    const c = await t.newConversation(userId);
    const initial = messages(600);
    for (let i = 0; i < 600; i += 200) await t.ingest(c.conversationId, c.sessionKey, initial.slice(i, i + 200));
    const more = Array.from({ length: 10 }, () => messages(20));
    const sub = connect(socketUrl(t, c.conversationId, `?after_id=${initial[99]!.id}`), { 'X-Access-Token': key });
    // Appends race with the catch-up (600 events to read in pages of 500).
    const appending = (async () => {
      for (const b of more) {
        await t.ingest(c.conversationId, c.sessionKey, b);
        await sleep(5);
      }
    })();
    await appending;
    const expected = [...initial.slice(100), ...more.flat()].map((e) => e.id);
    const got = await sub.waitFor(expected.length);
    await sleep(300); // nothing more may arrive
    expect(got.map((e) => e.id)).toEqual(expected);
    sub.ws.close();
  });

  it('resend_all sends the whole log first; a plain GET is told to upgrade', async () => {
    const c = await t.newConversation(userId);
    const evs = messages(5);
    await t.ingest(c.conversationId, c.sessionKey, evs);
    const sub = connect(socketUrl(t, c.conversationId, '?resend_all=true'), { 'X-Access-Token': key });
    expect((await sub.waitFor(5)).map((e) => e.id)).toEqual(evs.map((e) => e.id));
    sub.ws.close();
    const plain = await t.request('GET', `/api/v1/conversation/${c.conversationId}/events/socket`, { key });
    expect(plain.status).toBe(426);
  });

  it('two api processes share the live channel: subscribe on each, ingest through the other', async () => {
    // A second api as its own OS process on the same database.
    const child = spawn(process.execPath, [distPath('src', 'api', 'main.js')], {
      env: {
        ...process.env,
        MONGODB_URI: t.config.mongo.uri,
        MONGODB_DB: t.config.mongo.db,
        TEMPORAL_ADDRESS: t.config.temporal.address,
        API_PORT: '0',
        LOG_FORMAT: 'json',
        SECRETS_KEY: t.config.secretsKey,
      },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    try {
      let out = '';
      child.stdout.on('data', (d: Buffer) => (out += d.toString()));
      await eventually(
        () => {
          if (child.exitCode === null) expect(out).toContain('api listening'); // an exit: the expect below says so at once
        },
        { timeoutMs: 10_000, intervalMs: 50 },
      );
      expect(out).toContain('api listening');
      const otherUrl: string = JSON.parse(out.split('\n').find((l) => l.includes('api listening'))!).url;
      await eventually(async () => expect((await fetch(`${otherUrl}/ready`)).status).toBe(200), {
        timeoutMs: 10_000,
        intervalMs: 100,
      });

      const c = await t.newConversation(userId);
      const here = connect(socketUrl(t, c.conversationId), { 'X-Access-Token': key });
      const there = connect(`${otherUrl.replace('http', 'ws')}/api/v1/conversation/${c.conversationId}/events/socket`, {
        'X-Access-Token': key,
      });
      await Promise.all([here.opened, there.opened]);
      // Both subscribed: each receives a probe event that arrives after it connected.
      // (About 50 probes at most, 100 ms apart.)
      await eventually(
        async () => {
          if (there.messages.length > 0 && here.messages.length > 0) return;
          await t.ingest(c.conversationId, c.sessionKey, [sample('StreamingDeltaEvent', { content: 'probe' })]);
          throw new Error('a subscriber received no probe');
        },
        { timeoutMs: 50 * 100, intervalMs: 100 },
      );
      const real = (r: typeof here) => r.messages.filter((m) => m.content !== 'probe');
      const evs = [...messages(3), sample('StreamingDeltaEvent')];
      const viaOther = await fetch(`${otherUrl}/api/v1/webhooks/events/${c.conversationId}`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', 'X-Session-API-Key': c.sessionKey },
        body: JSON.stringify(evs.slice(0, 2)),
      });
      expect(viaOther.status).toBe(200);
      await t.ingest(c.conversationId, c.sessionKey, evs.slice(2));
      for (const s of [here, there]) {
        await eventually(() => expect(real(s).length).toBeGreaterThanOrEqual(4), { timeoutMs: 5000, intervalMs: 50 });
        expect(real(s).map((e) => e.id)).toEqual(evs.map((e) => e.id));
        s.ws.close();
      }
    } finally {
      if (child.exitCode === null && child.signalCode === null) {
        const exited = new Promise((r) => child.once('exit', r));
        child.kill('SIGTERM');
        await exited;
      }
    }
  });

  const logReader = () => {
    const { events } = t.stores;
    return { range: events.range.bind(events), lastSeq: (id: string) => t.conversations.lastSeq(id) };
  };

  it('a subscriber that does not read is closed with 1013 after the no-progress bound, not queueing without bound', async () => {
    const c = await t.newConversation(userId);
    await t.ingest(c.conversationId, c.sessionKey, messages(50));
    const closes: number[] = [];
    let buffered = 0;
    const sink: SubscriberSink = {
      send: (json) => void (buffered += json.length),
      bufferedAmount: () => buffered, // never goes down: the reader stopped
      close: (code) => void closes.push(code),
    };
    const sub = new Subscription(c.conversationId, sink, logReader(), {
      maxBufferedBytes: 2000,
      maxPendingEvents: 10,
      catchUpPageSize: 500,
      catchUpHighWaterBytes: 1000,
      catchUpStallMs: 300,
    });
    const hub = new EventHub();
    hub.add(sub);
    const started = Date.now();
    await sub.start(0);
    const took = Date.now() - started;
    expect(closes).toEqual([1013]);
    expect(took).toBeGreaterThanOrEqual(300);
    expect(took).toBeLessThan(5000);
    expect(buffered).toBeLessThan(1000 + 1000); // the high-water mark and at most one more event
  });

  it('catch-up waits for a slow reader that makes progress, however long the whole log takes', async () => {
    const c = await t.newConversation(userId);
    const evs = messages(50);
    await t.ingest(c.conversationId, c.sessionKey, evs);
    const closes: number[] = [];
    const sent: string[] = [];
    let buffered = 0;
    // Reads 300 bytes every 20 ms: the ~20 KB log takes over a second, far past the stall bound of 300 ms.
    const reader = setInterval(() => (buffered = Math.max(0, buffered - 300)), 20);
    try {
      const sink: SubscriberSink = {
        send: (json) => {
          sent.push((JSON.parse(json) as { id: string }).id);
          buffered += json.length;
        },
        bufferedAmount: () => buffered,
        close: (code) => void closes.push(code),
      };
      const sub = new Subscription(c.conversationId, sink, logReader(), {
        maxBufferedBytes: 2000,
        maxPendingEvents: 10,
        catchUpPageSize: 20,
        catchUpHighWaterBytes: 1000,
        catchUpStallMs: 300,
      });
      new EventHub().add(sub);
      const started = Date.now();
      await sub.start(0);
      expect(Date.now() - started).toBeGreaterThan(600);
      expect(closes).toEqual([]);
      expect(sent).toEqual(evs.map((e) => e.id));
      expect(buffered).toBeLessThanOrEqual(1000); // drained to the mark before live events
    } finally {
      clearInterval(reader);
    }
  });

  it('resend_all of a 30 MB log (300 events of 100 KB) reaches a fast reader whole, in order, without 1013', async () => {
    const c = await t.newConversation(userId);
    const big: Record<string, unknown>[] = messages(300).map((e, i) => ({
      ...e,
      llm_message: { role: 'user', content: [{ type: 'text', text: `${i}:` + 'x'.repeat(100_000) }] },
    }));
    // Bodies are capped at 5 MiB: 30 events (3 MB) per batch.
    for (let i = 0; i < big.length; i += 30)
      expect((await t.ingest(c.conversationId, c.sessionKey, big.slice(i, i + 30))).status).toBe(200);
    const sub = connect(socketUrl(t, c.conversationId, '?resend_all=true'), { 'X-Access-Token': key });
    let closedWith: number | null = null;
    const closed = sub.closed.then(({ code }) => {
      closedWith = code;
      throw new Error(`closed ${code} after ${sub.messages.length} of 300 events`);
    });
    closed.catch(() => undefined); // the race below reports an early close; the final close is ours
    const got = await Promise.race([sub.waitFor(300, 60_000), closed]);
    await sleep(200);
    expect(closedWith).toBeNull();
    expect(got.map((e) => e.id)).toEqual(big.map((e) => e.id));
    expect(got[299].llm_message.content[0].text).toHaveLength(100_004);
    sub.ws.close();
  }, 120_000);
});
