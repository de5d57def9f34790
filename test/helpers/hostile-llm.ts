/**
 * An LLM endpoint stand-in that misbehaves on purpose, on loopback, for the LLM client's hostile suites:
 * each test sets `endpoint.handler`, and `endpoint.last` tells whether the client let the connection go
 * and how much was written to it. `useHostileLlm()` registers the server's beforeAll and afterAll.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { complete } from '../../src/runtime/agent/llm-client';
import type { CompleteOptions } from '../../src/runtime/agent/llm-protocol';

export type Handler = (req: http.IncomingMessage, res: http.ServerResponse) => void;

/** The user's key, which no error may quote. */
export const KEY = 'sk-secret-of-the-user-0123456789';

export const endpoint = {
  handler: ((_req, res) => res.end()) as Handler,
  url: '',
  /** Whether the connection of the last request was closed, and how many bytes were written to it. */
  last: { closed: false, written: 0 },
};

export function useHostileLlm(): void {
  let server: http.Server;
  beforeAll(async () => {
    server = http.createServer((req, res) => {
      const mine: { closed: boolean; written: number } = { closed: false, written: 0 };
      endpoint.last = mine;
      res.on('close', () => (mine.closed = true));
      res.on('error', () => undefined);
      req.resume();
      req.on('end', () => endpoint.handler(req, res));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    endpoint.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });
}

export const settings = (stream = false, timeout_s = 60) => ({
  model: 'hostile',
  base_url: endpoint.url,
  stream,
  timeout_s,
  api_key: KEY,
});

export const ask = (stream = false, opts: CompleteOptions & { timeout_s?: number } = {}) =>
  complete(settings(stream, opts.timeout_s), [{ role: 'user', content: 'hi' }], [], opts);

/** A 200 stream of these chunks, then [DONE]. */
export const streaming =
  (...chunks: unknown[]): Handler =>
  (_req, res) =>
    res
      .writeHead(200, { 'Content-Type': 'text/event-stream' })
      .end(`${chunks.map((c) => `data: ${JSON.stringify(c)}\n\n`).join('')}data: [DONE]\n\n`);

/** Writes `piece` until the client goes away (or `limit` bytes, a backstop), as fast as the socket takes it. */
export function endless(res: http.ServerResponse, piece: string, limit: number) {
  const mine = endpoint.last; // this request's, whatever comes after it
  const write = () => {
    while (!res.destroyed && mine.written < limit) {
      mine.written += Buffer.byteLength(piece);
      if (!res.write(piece)) return void res.once('drain', write);
    }
    res.end();
  };
  write();
}
