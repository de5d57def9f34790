/**
 * The chat-completions client against an endpoint that misbehaves on purpose (a stand-in on loopback), on
 * shape: bodies that are not JSON objects, fields of the wrong kind, streamed tool calls whose index would
 * reach outside the list of calls (or is left out, as some servers do), content as a list of parts, an
 * error that echoes the key, and what the completion keeps of the answer.
 */
import { LlmError } from '../src/runtime/agent/llm-protocol';
import { ask, endpoint, KEY, streaming, useHostileLlm, type Handler } from './helpers/hostile-llm';

const call = (id: string, name: string, args: string) => ({
  id,
  type: 'function',
  function: { name, arguments: args },
});

describe('LLM client against a hostile endpoint: shapes', () => {
  useHostileLlm();

  it('says an answer or a streamed chunk that is not a JSON object is not one', async () => {
    for (const [body, message] of [
      ['<html>bad gateway</html>', "the LLM endpoint's answer is not JSON: <html>bad gateway</html>"],
      ['null', "the LLM endpoint's answer is not a JSON object"],
      ['[1,2]', "the LLM endpoint's answer is not a JSON object"],
      ['{"choices":[]}', 'the LLM endpoint answered without a message'],
    ]) {
      endpoint.handler = (_req, res) => res.writeHead(200, { 'Content-Type': 'application/json' }).end(body);
      await expect(ask()).rejects.toThrow(new LlmError(message!));
    }
    for (const [data, message] of [
      ['{not json', "the LLM endpoint's streamed chunk is not JSON: {not json"],
      ['42', "the LLM endpoint's streamed chunk is not a JSON object"],
    ]) {
      endpoint.handler = (_req, res) =>
        res.writeHead(200, { 'Content-Type': 'text/event-stream' }).end(`data: ${data}\n\n`);
      await expect(ask(true)).rejects.toThrow(new LlmError(message!));
    }
  });

  it('refuses a streamed tool call whose index is not a small whole number, and touches no prototype', async () => {
    for (const index of ['__proto__', 'constructor', '0', -1, 1.5, 256, 1e9]) {
      endpoint.handler = (_req, res) => {
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

    endpoint.handler = (_req, res) => {
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

  it('places streamed calls without an index: on the last call, or a new one for a new id or a second name', async () => {
    const pieces = (...tool_calls: object[]) => ({ id: 'c', choices: [{ delta: { tool_calls } }] });
    endpoint.handler = streaming(
      pieces(
        { id: 'a', function: { name: 'terminal', arguments: '{"command":"ls"}' } },
        { id: 'b', function: { name: 'think', arguments: '{}' } },
      ),
      pieces({ id: 'c', function: { name: 'terminal', arguments: '{"command":' } }), // one call a chunk (Gemini)
      pieces({ function: { arguments: '"pwd"}' } }),
      pieces({ function: { name: 'finish', arguments: { message: 'done' } } }), // arguments as an object
      pieces({ id: 'd', function: { name: 'think', arguments: '{"thought":' } }),
      pieces({ id: 'd', function: { name: 'think', arguments: '"hm"}' } }), // its id (and name) again each piece
    );
    expect((await ask(true)).tool_calls).toEqual([
      call('a', 'terminal', '{"command":"ls"}'),
      call('b', 'think', '{}'),
      call('c', 'terminal', '{"command":"pwd"}'),
      expect.objectContaining({ type: 'function', function: { name: 'finish', arguments: '{"message":"done"}' } }),
      call('d', 'think', '{"thought":"hm"}'),
    ]);
  });

  it('joins the text parts of content sent as a list of parts, whole or streamed', async () => {
    const parts = [
      { type: 'thinking', thinking: [{ type: 'text', text: 'hidden' }] },
      { type: 'text', text: 'hel' },
      { type: 'text', text: 'lo' },
    ];
    endpoint.handler = (_req, res) => res.end(JSON.stringify({ id: 7, choices: [{ message: { content: parts } }] }));
    expect(await ask()).toMatchObject({ id: '7', content: 'hello' });
    endpoint.handler = streaming({ id: 'c', choices: [{ delta: { content: parts } }] });
    expect((await ask(true)).content).toBe('hello');
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
      endpoint.handler = h;
      const e = await ask(stream).catch((err: unknown) => err);
      expect(e).toBeInstanceOf(LlmError);
      expect((e as Error).message).toContain(message);
    }
  });

  it('keeps the key out of an error that echoes the request, also where the quote is cut', async () => {
    endpoint.handler = (req, res) =>
      res
        .writeHead(401, { 'Content-Type': 'text/plain' })
        .end(`bad key in authorization: ${req.headers.authorization} (also ${KEY}; x-token: Bearer other-secret)`);
    const e = (await ask().catch((err: unknown) => err)) as LlmError;
    expect(e.message).toBe(
      'the LLM endpoint answered 401: bad key in authorization: Bearer <redacted> (also <redacted>; x-token: Bearer <redacted>)',
    );
    expect(e.stack).not.toContain(KEY);
    expect(e.stack).not.toContain('other-secret');

    // The key across the 500th character: masked before the cut, so not even its start is left.
    const body = JSON.stringify({ error: { message: 'x'.repeat(440), api_key: KEY } });
    endpoint.handler = (_req, res) => res.writeHead(401).end(body);
    const cut = (await ask().catch((err: unknown) => err)) as LlmError;
    expect(cut.message).toContain('"api_key":"<redacted>');
    expect(cut.message).not.toContain(KEY.slice(0, 8));
    endpoint.handler = (_req, res) => res.writeHead(200).end(`oops ${'y'.repeat(180)} ${KEY}`);
    expect(((await ask().catch((err: unknown) => err)) as LlmError).message).not.toContain(KEY.slice(0, 8));
  });

  it('keeps the answer in the completion only when asked to (for completion logs)', async () => {
    const answer = { id: 'kept', choices: [{ message: { content: 'x' } }] };
    endpoint.handler = (_req, res) => res.end(JSON.stringify(answer));
    expect((await ask()).response).toBeNull();
    expect((await ask(false, { keepExchange: true })).response).toEqual(answer);
    endpoint.handler = streaming(answer);
    expect((await ask(true)).response).toBeNull();
    expect((await ask(true, { keepExchange: true })).response).toEqual([answer]);

    // A long stream: its chunks are kept up to what one log event holds, and the rest counted.
    const long = Array.from({ length: 300 }, () => ({
      id: 'long',
      choices: [{ delta: { content: 'x'.repeat(5000) } }],
    }));
    endpoint.handler = streaming(...long);
    const kept = (await ask(true, { keepExchange: true })).response as object[];
    expect(kept.length).toBeGreaterThan(150);
    expect(kept.length).toBeLessThan(300);
    expect(kept.at(-1)).toEqual({ chunks_left_out: 300 - (kept.length - 1) });
    expect(JSON.stringify(kept).length).toBeLessThan(1024 * 1024 + 1000);
  });
});
