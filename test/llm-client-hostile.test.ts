/**
 * The chat-completions client against an endpoint that misbehaves on purpose (a stand-in on loopback):
 * answers past the bound, whole or streamed without end, an endless error body, bodies that are not JSON
 * objects, and streamed tool calls whose index would reach outside the list of calls. Each is an LlmError,
 * and the connection is let go rather than read to its end.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import v8 from 'node:v8';
import vm from 'node:vm';
import { complete, LLM_ANSWER_MAX_BYTES } from '../src/runtime/agent/llm-client';
import { LlmError } from '../src/runtime/agent/llm-protocol';
import { eventually } from './helpers/eventually';

v8.setFlagsFromString('--expose-gc');
const gc = vm.runInNewContext('gc') as () => void;

type Handler = (req: http.IncomingMessage, res: http.ServerResponse) => void;

const KEY = 'sk-secret-of-the-user-0123456789';

describe('LLM client against a hostile endpoint', () => {
  let handler: Handler = (_req, res) => res.end();
  let server: http.Server;
  let url: string;
  /** Whether the connection of the last request was closed, and how many bytes were written to it. */
  let last: { closed: boolean; written: number };
  beforeAll(async () => {
    server = http.createServer((req, res) => {
      last = { closed: false, written: 0 };
      const mine = last;
      res.on('close', () => (mine.closed = true));
      res.on('error', () => undefined);
      req.resume();
      req.on('end', () => handler(req, res));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  const settings = (stream = false) => ({ model: 'hostile', base_url: url, stream, timeout_s: 60, api_key: KEY });
  const ask = (stream = false) => complete(settings(stream), [{ role: 'user', content: 'hi' }], []);
  /** A 200 stream of these chunks, then [DONE]. */
  const streaming =
    (...chunks: unknown[]): Handler =>
    (_req, res) =>
      res
        .writeHead(200, { 'Content-Type': 'text/event-stream' })
        .end(`${chunks.map((c) => `data: ${JSON.stringify(c)}\n\n`).join('')}data: [DONE]\n\n`);

  /** Writes `piece` until the client goes away (or `limit` bytes, a backstop), as fast as the socket takes it. */
  function endless(res: http.ServerResponse, piece: string, limit = 4 * LLM_ANSWER_MAX_BYTES) {
    const write = () => {
      while (!res.destroyed && last.written < limit) {
        last.written += Buffer.byteLength(piece);
        if (!res.write(piece)) return void res.once('drain', write);
      }
      res.end();
    };
    write();
  }

  it('refuses a whole answer that says it is over the bound, without reading it', async () => {
    handler = (_req, res) => {
      res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': String(LLM_ANSWER_MAX_BYTES + 1) });
      res.write('{"choices":[');
    };
    await expect(ask()).rejects.toThrow(
      new LlmError(`the LLM endpoint's answer is over ${LLM_ANSWER_MAX_BYTES} bytes`),
    );
    await eventually(() => last.closed, { what: 'the connection closed' });
  });

  it('stops reading a whole answer that goes on past the bound', async () => {
    handler = (_req, res) => {
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.write('{"choices":[{"message":{"content":"');
      endless(res, 'x'.repeat(64 * 1024));
    };
    await expect(ask()).rejects.toThrow(`the LLM endpoint's answer is over ${LLM_ANSWER_MAX_BYTES} bytes`);
    await eventually(() => last.closed, { what: 'the connection closed' });
    expect(last.written).toBeLessThan(2 * LLM_ANSWER_MAX_BYTES);
  });

  it('stops reading a stream that never ends past the bound', async () => {
    handler = (_req, res) => {
      res.writeHead(200, { 'Content-Type': 'text/event-stream' });
      endless(res, `data: ${JSON.stringify({ id: 'c', choices: [{ delta: { content: 'y'.repeat(4000) } }] })}\n\n`);
    };
    await expect(ask(true)).rejects.toThrow(`the LLM endpoint's streamed answer is over ${LLM_ANSWER_MAX_BYTES} bytes`);
    await eventually(() => last.closed, { what: 'the connection closed' });
    expect(last.written).toBeLessThan(2 * LLM_ANSWER_MAX_BYTES);
  });

  it('reads at most 64 KiB of an error body that never ends, and keeps 500 characters of a short one', async () => {
    handler = (_req, res) => {
      res.writeHead(500, { 'Content-Type': 'text/plain' });
      endless(res, 'e'.repeat(16 * 1024));
    };
    const endlessError = await ask().catch((e: unknown) => e);
    expect(endlessError).toBeInstanceOf(LlmError);
    expect(endlessError).toMatchObject({
      status: 500,
      message: 'the LLM endpoint answered 500: (a body over 65536 bytes or cut off, not read)',
    });
    await eventually(() => last.closed, { what: 'the connection closed' });
    expect(last.written).toBeLessThan(LLM_ANSWER_MAX_BYTES);

    handler = (_req, res) => res.writeHead(429, { 'Content-Type': 'text/plain' }).end('slow down '.repeat(100));
    const short = await ask().catch((e: unknown) => e);
    expect(short).toMatchObject({ status: 429, message: `the LLM endpoint answered 429: ${'slow down '.repeat(50)}` });
  });

  it('says an answer or a streamed chunk that is not a JSON object is not one', async () => {
    for (const [body, message] of [
      ['<html>bad gateway</html>', "the LLM endpoint's answer is not JSON: <html>bad gateway</html>"],
      ['null', "the LLM endpoint's answer is not a JSON object"],
      ['[1,2]', "the LLM endpoint's answer is not a JSON object"],
      ['{"choices":[]}', 'the LLM endpoint answered without a message'],
    ]) {
      handler = (_req, res) => res.writeHead(200, { 'Content-Type': 'application/json' }).end(body);
      await expect(ask()).rejects.toThrow(new LlmError(message!));
    }
    for (const [data, message] of [
      ['{not json', "the LLM endpoint's streamed chunk is not JSON: {not json"],
      ['42', "the LLM endpoint's streamed chunk is not a JSON object"],
    ]) {
      handler = (_req, res) => res.writeHead(200, { 'Content-Type': 'text/event-stream' }).end(`data: ${data}\n\n`);
      await expect(ask(true)).rejects.toThrow(new LlmError(message!));
    }
  });

  it('refuses a streamed tool call whose index is not a small whole number, and touches no prototype', async () => {
    for (const index of ['__proto__', 'constructor', '0', -1, 1.5, 256, 1e9]) {
      handler = (_req, res) => {
        const chunk = {
          id: 'c',
          choices: [{ delta: { tool_calls: [{ index, id: 'polluted', function: { name: 'x' } }] } }],
        };
        res
          .writeHead(200, { 'Content-Type': 'text/event-stream' })
          .end(`data: ${JSON.stringify(chunk)}\n\ndata: [DONE]\n\n`);
      };
      await expect(ask(true)).rejects.toThrow(
        new LlmError('the LLM endpoint streamed a tool call without an index from 0 to 255'),
      );
    }
    expect(({} as Record<string, unknown>).id).toBeUndefined();
    expect(([] as unknown as Record<string, unknown>).id).toBeUndefined();

    handler = (_req, res) => {
      const chunk = {
        id: 'c',
        choices: [
          { delta: { tool_calls: [{ index: 255, id: 'last', function: { name: 'terminal', arguments: '{}' } }] } },
        ],
      };
      res
        .writeHead(200, { 'Content-Type': 'text/event-stream' })
        .end(`data: ${JSON.stringify(chunk)}\n\ndata: [DONE]\n\n`);
    };
    const c = await ask(true);
    expect(c.tool_calls).toEqual([{ id: 'last', type: 'function', function: { name: 'terminal', arguments: '{}' } }]);
  });

  it('ends a call whose answer trickles on at its timeout, while garbage is collected all along', async () => {
    handler = (_req, res) => {
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.write('{"choices":[{"message":{"content":"');
      const drip = setInterval(() => res.write('z'), 20);
      res.on('close', () => clearInterval(drip));
    };
    const collecting = setInterval(gc, 10);
    try {
      const started = Date.now();
      await expect(
        complete({ ...settings(), timeout_s: 1 }, [{ role: 'user', content: 'hi' }], []),
      ).rejects.toMatchObject({ name: 'TimeoutError' });
      expect(Date.now() - started).toBeLessThan(20_000); // a lost timer would read until the test's own timeout
      await eventually(() => last.closed, { what: 'the connection closed' });
    } finally {
      clearInterval(collecting);
    }
  });

  it('adds up 100,000 streamed token ids, one a chunk, in place', async () => {
    const chunks = Array.from({ length: 100_000 }, (_, i) => ({ id: 'c', choices: [{ token_ids: [i % 7] }] }));
    handler = streaming({ id: 'c', prompt_token_ids: [1, 2], choices: [{ delta: { content: 'ok' } }] }, ...chunks);
    const c = await ask(true);
    expect(c.prompt_token_ids).toEqual([1, 2]);
    expect(c.response_token_ids).toHaveLength(100_000);
    expect(c.response_token_ids!.slice(0, 8)).toEqual([0, 1, 2, 3, 4, 5, 6, 0]);
  });

  it('gives a streamed call without an index its place in the list', async () => {
    handler = streaming({
      id: 'c',
      choices: [
        {
          delta: {
            tool_calls: [
              { id: 'a', function: { name: 'terminal', arguments: '{"command":"ls"}' } },
              { id: 'b', function: { name: 'think', arguments: '{}' } },
            ],
          },
        },
      ],
    });
    expect((await ask(true)).tool_calls).toEqual([
      { id: 'a', type: 'function', function: { name: 'terminal', arguments: '{"command":"ls"}' } },
      { id: 'b', type: 'function', function: { name: 'think', arguments: '{}' } },
    ]);
  });

  it('refuses fields of the wrong kind with an LlmError that names them', async () => {
    const cases: [Handler, boolean, string][] = [
      [streaming({ choices: [{ delta: { content: { toString: 1 } } }] }), true, "endpoint's content: not a string"],
      [streaming({ choices: [{ delta: { tool_calls: 'x' } }] }), true, "endpoint's tool calls: not a list"],
      [
        streaming({ choices: [{ token_ids: 'x' }] }),
        true,
        "endpoint's token ids: not a list of at most 1000000 numbers",
      ],
      [streaming({ choices: 5 }), true, "endpoint's choices: not a list"],
      [
        (_req, res) => res.end(JSON.stringify({ choices: [{ message: { content: 'x', tool_calls: 5 } }] })),
        false,
        "endpoint's tool calls: not a list",
      ],
      [
        (_req, res) => res.end(JSON.stringify({ choices: [{ message: { tool_calls: [{ function: {} }] } }] })),
        false,
        'a tool call without a function name',
      ],
    ];
    for (const [h, stream, message] of cases) {
      handler = h;
      const e = await ask(stream).catch((err: unknown) => err);
      expect(e).toBeInstanceOf(LlmError);
      expect((e as Error).message).toContain(message);
    }
  });

  it('refuses a streamed event longer than 8 Mi characters without its end', async () => {
    handler = (_req, res) => {
      res.writeHead(200, { 'Content-Type': 'text/event-stream' });
      res.write('data: {"choices":[{"delta":{"content":"');
      endless(res, 'w'.repeat(64 * 1024));
    };
    await expect(ask(true)).rejects.toThrow(
      new LlmError('the LLM endpoint streamed an event longer than 8388608 characters'),
    );
    await eventually(() => last.closed, { what: 'the connection closed' });
  });

  it('keeps the key out of an error that echoes the request', async () => {
    handler = (req, res) =>
      res
        .writeHead(401, { 'Content-Type': 'text/plain' })
        .end(`bad key in authorization: ${req.headers.authorization} (also ${KEY}; x-token: Bearer other-secret)`);
    const e = (await ask().catch((err: unknown) => err)) as LlmError;
    expect(e.message).toBe(
      'the LLM endpoint answered 401: bad key in authorization: Bearer <redacted> (also <redacted>; x-token: Bearer <redacted>)',
    );
    expect(e.stack).not.toContain(KEY);
    expect(e.stack).not.toContain('other-secret');
  });
});
