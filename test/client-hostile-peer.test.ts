/**
 * The typed client and the CLI against a peer that is not the service (a wrong URL, a proxy that
 * misbehaves, a man in the middle), on loopback: a redirect is not followed with the API key, every call
 * and every open websocket is bounded in time, an answer in size, a page loop and a 1013 loop end.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { WebSocketServer } from 'ws';
import { AgentControlClient, ProtocolError, UnreachableError, unwrap } from '../src/client';
import { eventually } from './helpers/eventually';
import { distPath, runNode } from './helpers/run';
import { setTimeout as sleep } from 'node:timers/promises';

const CLI = distPath('src', 'cli', 'agent-control.js');

interface Peer {
  url: string;
  requests: { url: string; headers: http.IncomingHttpHeaders }[];
  close: () => Promise<void>;
}

async function peer(
  answer: (req: http.IncomingMessage, res: http.ServerResponse) => void,
  ws?: (server: http.Server) => void,
): Promise<Peer> {
  const requests: Peer['requests'] = [];
  const server = http.createServer((req, res) => {
    requests.push({ url: req.url ?? '', headers: req.headers });
    answer(req, res);
  });
  ws?.(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () => {
      server.closeAllConnections();
      return new Promise((r) => server.close(() => r()));
    },
  };
}

describe('client and CLI against a peer that is not the service', () => {
  const peers: Peer[] = [];
  const open = async (...a: Parameters<typeof peer>) => {
    const p = await peer(...a);
    peers.push(p);
    return p;
  };
  let home: string;
  beforeAll(() => (home = fs.mkdtempSync(path.join(os.tmpdir(), 'hostile-peer-'))));
  afterAll(async () => {
    await Promise.all(peers.map((p) => p.close()));
    fs.rmSync(home, { recursive: true, force: true });
  });
  const cli = (args: string[], url: string) =>
    runNode(
      CLI,
      args,
      { XDG_CONFIG_HOME: home, AGENT_CONTROL_URL: url, AGENT_CONTROL_API_KEY: 'acp_secret_of_the_user' },
      30_000,
    );

  it('a redirect is not followed: the key never reaches the other host; login saves nothing and exits 6', async () => {
    const elsewhere = await open((_req, res) => res.end('{"id":"u"}'));
    const redirecting = await open((_req, res) => {
      res.writeHead(302, { location: `${elsewhere.url}/api/v1/users/me` });
      res.end();
    });
    const client = new AgentControlClient({ baseUrl: redirecting.url, apiKey: 'acp_secret_of_the_user' });
    const err = await unwrap(client.api.GET('/api/v1/users/me')).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ProtocolError);
    expect((err as Error).message).toContain(`redirect to ${elsewhere.url}`);

    const login = await cli(['login', '--url', redirecting.url], '');
    expect(login.code).toBe(6);
    expect(login.stderr).toContain('not followed');
    expect(fs.existsSync(path.join(home, 'agent-control', 'config.json'))).toBe(false);
    expect(elsewhere.requests).toEqual([]);
    expect(redirecting.requests.length).toBe(2);
  });

  it('a call with no answer ends within its bound; an answer too large or not JSON is refused', async () => {
    const silent = await open(() => undefined);
    const slow = new AgentControlClient({ baseUrl: silent.url, apiKey: 'k', requestTimeoutMs: 300 });
    const began = Date.now();
    const timedOut = await unwrap(slow.api.GET('/api/v1/users/me')).catch((e: unknown) => e);
    expect(timedOut).toBeInstanceOf(UnreachableError);
    expect((timedOut as Error).message).toContain('no whole answer within 300 ms');
    expect(Date.now() - began).toBeLessThan(5_000);

    // A body that never ends is cut by the same bound.
    const dripping = await open((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"id":"');
      const drip = setInterval(() => res.write('x'), 50);
      res.on('close', () => clearInterval(drip));
    });
    const dripped = await unwrap(
      new AgentControlClient({ baseUrl: dripping.url, apiKey: 'k', requestTimeoutMs: 400 }).api.GET('/api/v1/users/me'),
    ).catch((e: unknown) => e);
    expect(dripped).toBeInstanceOf(UnreachableError);

    const huge = await open((req, res) => {
      res.writeHead(
        200,
        req.url?.includes('declared')
          ? { 'content-type': 'application/json', 'content-length': String(10 << 20) }
          : { 'content-type': 'application/json' },
      );
      if (req.url?.includes('declared')) return void res.end();
      res.end(`{"id":"${'x'.repeat(2 << 20)}"}`); // chunked: the size is only known as it comes
    });
    const small = new AgentControlClient({ baseUrl: huge.url, apiKey: 'k', maxResponseBytes: 1 << 20 });
    for (const query of [{}, { declared: '1' }]) {
      const tooLarge = await unwrap(small.api.GET('/api/v1/users/me', { params: { query } as never })).catch(
        (e: unknown) => e,
      );
      expect(tooLarge).toBeInstanceOf(ProtocolError);
      expect((tooLarge as Error).message).toContain('larger than 1048576 bytes');
    }

    const html = await open((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('<html>a captive portal</html>');
    });
    const notJson = await unwrap(
      new AgentControlClient({ baseUrl: html.url, apiKey: 'k' }).api.GET('/api/v1/users/me'),
    ).catch((e: unknown) => e);
    expect(notJson).toBeInstanceOf(ProtocolError);
    const ls = await cli(['conversations', 'ls'], html.url);
    expect(ls.code).toBe(6);
    expect(ls.stderr).toContain('not JSON');
  });

  it('paging that does not advance ends with exit 6 after two pages', async () => {
    const looping = await open((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ items: [], next_page_id: 'again' }));
    });
    const ls = await cli(['sandboxes', 'ls', '-n', '1000'], looping.url);
    expect(ls.code).toBe(6);
    expect(ls.stderr).toContain('paging does not advance');
    expect(looping.requests.length).toBe(1);
    const repeating = await open((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          items: [{ id: 's', status: 'RUNNING', created_at: '2026-01-01T00:00:00Z' }],
          next_page_id: 'same',
        }),
      );
    });
    const again = await cli(['sandboxes', 'ls', '-n', '1000'], repeating.url);
    expect(again.code).toBe(6);
    expect(repeating.requests.length).toBe(2);
  });

  it('an open websocket that goes silent is opened again; one the peer closes at once (1013) backs off and gives up', async () => {
    let silentConnections = 0;
    let junkConnections = 0;
    await open(
      (_req, res) => res.end(),
      (server) => {
        const wss = new WebSocketServer({ noServer: true });
        server.on('upgrade', (req, socket, head) => {
          if (req.url?.includes('silent')) return void wss.handleUpgrade(req, socket, head, () => silentConnections++); // never pings, never sends
          if (req.url?.includes('junk')) {
            // Something on the socket, but never a new event: no progress, so no reason to reset the backoff.
            return void wss.handleUpgrade(req, socket, head, (ws) => {
              junkConnections++;
              ws.send('1');
              ws.send(JSON.stringify({ id: 'e1', kind: 'MessageEvent' }));
              ws.close(1011, 'junk');
            });
          }
          if (req.url?.includes('evil'))
            return void wss.handleUpgrade(req, socket, head, (ws) => ws.close(1011, '\u001b]52;c;ZXZpbA==\u0007'));
          wss.handleUpgrade(req, socket, head, (ws) => ws.close(1013, 'try again later'));
        });
      },
    );
    const p = peers.at(-1)!;
    const reasons: string[] = [];
    const quiet = new AgentControlClient({ baseUrl: p.url, apiKey: 'k', socketLivenessMs: 300 });
    const ac = new AbortController();
    const tail = (async () => {
      for await (const _ of quiet.events.tail('silent', {
        signal: ac.signal,
        onReconnect: (_n, why) => reasons.push(why),
      }))
        void _;
    })();
    await sleep(2_000);
    ac.abort();
    await tail;
    expect(silentConnections).toBeGreaterThanOrEqual(2);
    expect(reasons[0]).toContain('no ping or message from the service for 300 ms');

    let flaps = 0;
    const flapping = new AgentControlClient({ baseUrl: p.url, apiKey: 'k' });
    const began = Date.now();
    const err = await (async () => {
      for await (const _ of flapping.events.tail('flapping', { reconnectForMs: 2_000, onReconnect: () => flaps++ }))
        void _;
    })().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UnreachableError);
    expect((err as Error).message).toContain('1013');
    // Waits of 200, 400, 800, 1600 ms: a handful of tries in the two seconds, not one every 200 ms for ever.
    expect(flaps).toBeGreaterThanOrEqual(3);
    expect(flaps).toBeLessThanOrEqual(6);
    expect(Date.now() - began).toBeLessThan(8_000);

    // A peer that sends junk and an event it then repeats on every connection: one event yielded, and
    // the same backoff to giving up.
    const junk: unknown[] = [];
    const junkErr = await (async () => {
      for await (const e of flapping.events.tail('junk', { reconnectForMs: 2_000 })) junk.push(e);
    })().catch((e: unknown) => e);
    expect(junkErr).toBeInstanceOf(UnreachableError);
    expect(junk).toEqual([{ id: 'e1', kind: 'MessageEvent' }]);
    expect(junkConnections).toBeLessThanOrEqual(7);

    // What the peer says in a close reason reaches the person at the terminal escaped.
    const cliTail = spawn(process.execPath, [CLI, 'events', 'tail', 'evil'], {
      env: { ...process.env, XDG_CONFIG_HOME: home, AGENT_CONTROL_URL: p.url, AGENT_CONTROL_API_KEY: 'k' },
    });
    let stderr = '';
    cliTail.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    await eventually(() => stderr.includes('reconnecting'), { timeoutMs: 10_000, intervalMs: 50 });
    cliTail.kill('SIGINT');
    expect(await new Promise((r) => cliTail.once('close', r))).toBe(130);
    expect(stderr).toContain('closed 1011 \\u001b]52;c;ZXZpbA==\\u0007');
    expect(stderr).not.toContain('\u001b');
  });

  it('a stream-start error answer is read within a bound; an empty answer to the live pre-read is refused', async () => {
    const p = await open((req, res) => {
      if (req.url?.includes('stream-start')) {
        res.writeHead(500, { 'content-type': 'application/json' });
        return void res.end(`{"detail":"${'x'.repeat(3 << 20)}"}`);
      }
      res.writeHead(204);
      res.end();
    });
    const c = new AgentControlClient({ baseUrl: p.url, apiKey: 'k' });
    const streamed = await (async () => {
      for await (const _ of c.startConversation({})) void _;
    })().catch((e: unknown) => e);
    expect(streamed).toBeInstanceOf(ProtocolError);
    expect((streamed as Error).message).toContain('larger than 1048576 bytes');
    const live = await (async () => {
      for await (const _ of c.events.tail('x', { live: true })) void _;
    })().catch((e: unknown) => e);
    expect(live).toBeInstanceOf(ProtocolError);
  });
});
