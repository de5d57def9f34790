/**
 * answerDeadline(): a request whose route waits on something that does not answer is a 503 with
 * Retry-After at its deadline, never a hang; the client's upload of a body is its own time, not the
 * deadline's; what the route does after its deadline is dropped and its failure logged, not unhandled.
 * The freeze suite (test/freeze-injection.test.ts) proves the same against the real servers, frozen.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import Koa from 'koa';
import { setTimeout as sleep } from 'node:timers/promises';
import { answerDeadline } from '../src/web/answer-deadline';
import { errorMiddleware } from '../src/web/errors';
import { jsonBody } from '../src/web/json-body';

const DEADLINE_MS = 600;

describe('answer deadline', () => {
  let server: http.Server;
  let base: string;
  const late: string[] = [];
  let laterFailure: (() => void) | undefined;

  beforeAll(async () => {
    const koa = new Koa();
    koa.use(async (ctx, next) => {
      ctx.state.log = { warn: (o: { err: Error }) => late.push(o.err.message) } as never;
      await next();
    });
    koa.use(errorMiddleware());
    koa.use(answerDeadline(DEADLINE_MS));
    koa.use(jsonBody(1024 * 1024));
    koa.use(async (ctx) => {
      if (ctx.path === '/never') await new Promise(() => undefined);
      if (ctx.path === '/fails-later')
        await new Promise<void>((_resolve, reject) => (laterFailure = () => reject(new Error('failed after'))));
      if (ctx.path === '/quick-after-body') await sleep(DEADLINE_MS / 2);
      ctx.body = { ok: true, body: ctx.state.body ?? null };
    });
    server = http.createServer(koa.callback());
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  afterAll(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  it('answers a route that never ends with 503, Retry-After and {detail}, at its deadline', async () => {
    const t0 = Date.now();
    const r = await fetch(`${base}/never`, { signal: AbortSignal.timeout(10_000) });
    const took = Date.now() - t0;
    expect(r.status).toBe(503);
    expect(r.headers.get('retry-after')).toBe('2');
    expect(await r.json()).toEqual({
      detail: expect.stringMatching(/not answered within 0.6 s.*may still take effect/),
    });
    expect(took).toBeGreaterThanOrEqual(DEADLINE_MS - 50);
    expect(took).toBeLessThan(DEADLINE_MS + 2000);
  });

  it('answers a route in time as the route says', async () => {
    const r = await fetch(`${base}/ok`);
    expect(r.status).toBe(200);
    expect(await r.json()).toEqual({ ok: true, body: null });
  });

  it("does not count the client's upload of its body: a body sent slower than the deadline is answered", async () => {
    const r = await new Promise<{ status: number; text: string }>((resolve, reject) => {
      const req = http.request(
        `${base}/quick-after-body`,
        { method: 'POST', headers: { 'content-type': 'application/json', 'content-length': '11' } },
        (res) => {
          let text = '';
          res.on('data', (c) => (text += c));
          res.on('end', () => resolve({ status: res.statusCode!, text }));
        },
      );
      req.on('error', reject);
      req.write('{"a":');
      setTimeout(() => req.end('[1,2]}'), DEADLINE_MS * 2);
    });
    expect(r).toEqual({ status: 200, text: JSON.stringify({ ok: true, body: { a: [1, 2] } }) });
  });

  it('drops what a route makes after its deadline and logs its failure', async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (e: unknown) => unhandled.push(e);
    process.on('unhandledRejection', onUnhandled);
    try {
      const r = await fetch(`${base}/fails-later`);
      expect(r.status).toBe(503);
      laterFailure!();
      await sleep(50);
      expect(late).toContain('failed after');
      expect(unhandled).toEqual([]);
      // The server goes on answering.
      expect((await fetch(`${base}/ok`)).status).toBe(200);
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
  });
});
