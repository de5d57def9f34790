/**
 * Regression tests of issue 13's defects at the HTTP and websocket edge, against the real api: each
 * input here once stopped the process, held a connection, or answered 500 or a body that is not JSON.
 * This file: websocket paths, frames and handshakes, and protocol-level errors (unknown methods, a
 * method a route lacks, what the HTTP parser refuses). Bodies and stored values are in
 * hostile-input-bodies.test.ts, stream-start over odd task histories in hostile-input-stream-start.test.ts.
 */
import net from 'node:net';
import WebSocket from 'ws';
import { healthy, key, t, useHostileInput, userId } from './helpers/hostile-input';
import { bodyOf, raw, statusOf } from './helpers/raw-http';
import { connect } from './helpers/ws-client';
import { setTimeout as sleep } from 'node:timers/promises';

describe('hostile input at the edge (issue 13)', () => {
  useHostileInput();

  describe('websocket', () => {
    const wsUrl = (path: string) => `${t.url.replace('http', 'ws')}${path}`;

    it('a malformed %-escape in the path closes 4000; the api stays up', async () => {
      const sub = connect(wsUrl('/api/v1/conversation/%E0%A4%A/events/socket'));
      expect(await sub.closed).toEqual({ code: 4000, reason: expect.stringMatching(/percent-encoded/) });
      await healthy();
    });

    it('a frame over the payload limit before authenticating closes 1009; the api stays up', async () => {
      const { conversationId } = await t.newConversation(userId);
      const sub = connect(wsUrl(`/api/v1/conversation/${conversationId}/events/socket`));
      await sub.opened;
      sub.ws.on('error', () => undefined);
      sub.ws.send(Buffer.alloc(200 * 1024, 'x'));
      expect((await sub.closed).code).toBe(1009);
      await healthy();
    });

    it('a malformed frame closes 1002; the api stays up', async () => {
      const { conversationId } = await t.newConversation(userId);
      const sub = connect(wsUrl(`/api/v1/conversation/${conversationId}/events/socket`));
      await sub.opened;
      sub.ws.on('error', () => undefined);
      // An unmasked client frame with a reserved opcode: a protocol error.
      (sub.ws as unknown as { _socket: net.Socket })._socket.write(Buffer.from([0x83, 0x01, 0x00]));
      expect((await sub.closed).code).toBe(1002);
      await healthy();
    });

    it('sockets closed while their credential is being checked leave no subscription behind', async () => {
      const { conversationId } = await t.newConversation(userId);
      const url = wsUrl(`/api/v1/conversation/${conversationId}/events/socket`);
      await Promise.all(
        Array.from({ length: 60 }, () => {
          const ws = new WebSocket(url, { headers: { 'X-Access-Token': key } });
          ws.on('error', () => undefined);
          ws.on('upgrade', () => ws.terminate()); // gone as soon as the server accepted it
          return new Promise((r) => ws.on('close', r));
        }),
      );
      await sleep(1000); // the server's lookups finish after the peers left
      expect(t.api.hub.subscriberCount).toBe(0);
    });

    it('an upgrade whose request target is not a valid path is a JSON 400, not a 500', async () => {
      const r = await raw(
        t.url,
        'GET //[::1/x HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n',
      );
      expect(statusOf(r.text)).toBe(400);
      expect(JSON.parse(bodyOf(r.text)).detail).toMatch(/request target/);
      await healthy();
    });

    it('a bad handshake on the socket path is a JSON 400, an unknown version a JSON 426', async () => {
      const path = `/api/v1/conversation/x/events/socket`;
      const noKey = await raw(
        t.url,
        `GET ${path} HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\n\r\n`,
      );
      expect(statusOf(noKey.text)).toBe(400);
      expect(JSON.parse(bodyOf(noKey.text))).toEqual({ detail: 'Missing or invalid Sec-WebSocket-Key header' });
      const version = await raw(
        t.url,
        `GET ${path} HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 99\r\n\r\n`,
      );
      expect(statusOf(version.text)).toBe(426);
      expect(version.text).toMatch(/Sec-WebSocket-Version: 13, 8/);
      expect(JSON.parse(bodyOf(version.text)).detail).toMatch(/Sec-WebSocket-Version/);
      await healthy();
    });

    it('Upgrade on another route: a GET is answered over HTTP/1.1, anything else is a JSON 400', async () => {
      const h2c = await raw(
        t.url,
        'GET /health HTTP/1.1\r\nHost: x\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQAAP__\r\n\r\n',
      );
      expect(statusOf(h2c.text)).toBe(200);
      expect(JSON.parse(bodyOf(h2c.text))).toEqual({ status: 'ok' });
      const ws = await raw(
        t.url,
        'GET /api/v1/users/me HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n',
      );
      expect(statusOf(ws.text)).toBe(401);
      expect(JSON.parse(bodyOf(ws.text))).toEqual({ detail: 'Missing X-Access-Token header' });
      const post = await raw(
        t.url,
        'POST /api/v1/api-keys HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: h2c\r\nContent-Length: 2\r\n\r\n{}',
      );
      expect(statusOf(post.text)).toBe(400);
      expect(JSON.parse(bodyOf(post.text)).detail).toMatch(/upgrades are served only/);
      await healthy();
    });
  });

  describe('protocol-level errors are {detail} JSON', () => {
    it('methods HTTP does not define for this api: 501 with a detail, no 500 (TRACE, a standard one, is a 405: http-errors)', async () => {
      for (const method of ['PROPFIND', 'PURGE']) {
        const r = await raw(t.url, `${method} /api/v1/users/me HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`);
        expect({ method, status: statusOf(r.text) }).toEqual({ method, status: 501 });
        expect(JSON.parse(bodyOf(r.text))).toEqual({ detail: `Method ${method} is not implemented by this server` });
      }
    });

    it('a known method on a route without it: 405 with an Allow header', async () => {
      const r = await t.request('PUT', '/health');
      expect(r.status).toBe(405);
      expect(r.headers.get('allow')).toBe('HEAD, GET');
      expect(r.body).toEqual({ detail: 'Method Not Allowed' });
      // QUERY (HTTP's safe method with a body; OpenAPI 3.2 has it) is as known as PUT.
      const query = await raw(t.url, `QUERY /api/v1/users/me HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`);
      expect(statusOf(query.text)).toBe(405);
      expect(query.text).toMatch(/\r\nallow: HEAD, GET\r\n/i);
    });

    it("the parser's own 400 and 431 carry a JSON body", async () => {
      const garbage = await raw(t.url, 'NOT HTTP AT ALL\r\n\r\n');
      expect(statusOf(garbage.text)).toBe(400);
      expect(JSON.parse(bodyOf(garbage.text))).toEqual({ detail: 'Bad Request: the request could not be parsed' });
      const huge = await raw(t.url, `GET /health HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`);
      expect(statusOf(huge.text)).toBe(431);
      expect(JSON.parse(bodyOf(huge.text))).toEqual({ detail: 'Request Header Fields Too Large' });
      await healthy();
    });
  });
});
