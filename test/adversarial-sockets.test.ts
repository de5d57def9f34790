/**
 * The project's adversarial suite (issue 13), below the OpenAPI operations: raw bytes on the HTTP port and
 * random frames on the event socket, against the real api on the real servers (no worker). Asserted: never
 * a 5xx, errors as JSON, the socket closed with a protocol code at worst (never 1011), and the service
 * healthy afterwards. fast-check prints the seed and the smallest failing input on failure.
 */
import fc from 'fast-check';
import net from 'node:net';
import WebSocket from 'ws';
import type { TestApi } from './helpers/api';
import { expectHealthy, logTally, newTally, ownConversation, startAdversarialApi } from './helpers/adversarial';

describe('adversarial suite', () => {
  let t: TestApi;
  let own: { key: string; sessionKey: string; conversationId: string };
  const tally = newTally();

  beforeAll(async () => {
    t = await startAdversarialApi();
    own = await ownConversation(t);
  });

  afterAll(async () => {
    logTally(tally);
    await t?.close();
  });

  const checkHealthy = () => expectHealthy(t);

  it('raw bytes on the HTTP port: each connection is answered (JSON errors) or closed, and the api stays up', async () => {
    const { port } = new URL(t.url);
    const prefixes = [
      '',
      'GET / HTTP/1.1\r\n',
      'POST /api/v1/api-keys HTTP/1.1\r\nContent-Length: 99999999999999999999\r\n',
      'GET /health HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n',
    ];
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...prefixes), fc.uint8Array({ maxLength: 3000 }), async (prefix, bytes) => {
        tally.raw++;
        const text = await new Promise<string>((resolve) => {
          const socket = net.connect(Number(port), '127.0.0.1');
          let got = '';
          const timer = setTimeout(() => finish(), 3000);
          const finish = () => {
            clearTimeout(timer);
            socket.destroy();
            resolve(got);
          };
          socket.on('data', (d) => (got += d.toString('latin1')));
          socket.on('error', () => undefined);
          socket.on('close', finish);
          socket.write(Buffer.concat([Buffer.from(prefix, 'latin1'), bytes, Buffer.from('\r\n\r\n')]));
        });
        const status = /^HTTP\/1\.1 (\d{3})/.exec(text)?.[1];
        if (status) {
          expect(Number(status)).toBeLessThan(500);
          if (Number(status) >= 400) expect(() => JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4))).not.toThrow();
        }
      }),
      { numRuns: 150 },
    );
    await checkHealthy();
  }, 300_000);

  it('random frames on the event socket close it with a protocol code at worst, never 1011, and the api stays up', async () => {
    const url = `${t.url.replace('http', 'ws')}/api/v1/conversation/${own.conversationId}/events/socket`;
    const frame = fc.oneof(
      fc.string({ maxLength: 200 }).map((s) => ({ data: s, binary: false })),
      fc.uint8Array({ maxLength: 100_000 }).map((b) => ({ data: Buffer.from(b), binary: true })),
      fc.jsonValue({ maxDepth: 4 }).map((v) => ({ data: JSON.stringify(v), binary: false })),
      fc.constant({ data: JSON.stringify({ type: 'auth', access_token: { $gt: '' } }), binary: false }),
    );
    await fc.assert(
      fc.asyncProperty(fc.boolean(), fc.array(frame, { minLength: 1, maxLength: 5 }), async (withHeader, frames) => {
        const ws = new WebSocket(url, { headers: withHeader ? { 'X-Access-Token': own.key } : {} });
        ws.on('error', () => undefined);
        const closed = new Promise<number>((resolve) => ws.on('close', (code) => resolve(code)));
        await new Promise<void>((resolve) => {
          ws.once('open', () => resolve());
          ws.once('close', () => resolve());
        });
        for (const f of frames) {
          if (ws.readyState !== ws.OPEN) break;
          tally.frames++;
          ws.send(f.data, { binary: f.binary });
        }
        const settled = await Promise.race([closed, new Promise<number>((r) => setTimeout(() => r(-1), 300))]);
        if (settled === -1) ws.terminate();
        expect([-1, 1000, 1002, 1005, 1006, 1007, 1008, 1009, 4000, 4001, 4004]).toContain(settled);
      }),
      { numRuns: 100 },
    );
    await checkHealthy();
  }, 300_000);
});
