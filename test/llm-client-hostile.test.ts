/**
 * The chat-completions client against an endpoint that misbehaves on purpose (a stand-in on loopback), on
 * size and time: answers past the bound, whole or streamed without end, an endless error body, an event
 * without an end, answers that trickle on. Each is an LlmError or a TimeoutError, and the connection is
 * let go rather than read to its end.
 */
import { LLM_ANSWER_MAX_BYTES, LLM_STREAM_MAX_BYTES } from '../src/runtime/agent/llm-client';
import { appendTokenIds, LlmError, MAX_TOKEN_IDS } from '../src/runtime/agent/llm-protocol';
import { eventually } from './helpers/eventually';
import { ask, endless, endpoint, streaming, useHostileLlm } from './helpers/hostile-llm';
import { whileCollecting, within } from './helpers/timing';

const closed = () => eventually(() => endpoint.last.closed, { what: 'the connection closed' });

describe('LLM client against a hostile endpoint: size and time', () => {
  useHostileLlm();

  it('refuses a whole answer that says it is over the bound, without reading it', async () => {
    endpoint.handler = (_req, res) => {
      res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': String(LLM_ANSWER_MAX_BYTES + 1) });
      res.write('{"choices":[');
    };
    await expect(ask()).rejects.toThrow(
      new LlmError(`the LLM endpoint's answer is over ${LLM_ANSWER_MAX_BYTES} bytes`),
    );
    await closed();
  });

  it('stops reading a whole answer that goes on past the bound', async () => {
    endpoint.handler = (_req, res) => {
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.write('{"choices":[{"message":{"content":"');
      endless(res, 'x'.repeat(64 * 1024), 4 * LLM_ANSWER_MAX_BYTES);
    };
    await expect(ask()).rejects.toThrow(`the LLM endpoint's answer is over ${LLM_ANSWER_MAX_BYTES} bytes`);
    await closed();
    expect(endpoint.last.written).toBeLessThan(2 * LLM_ANSWER_MAX_BYTES);
  });

  it('stops reading a stream that never ends past the bound', async () => {
    endpoint.handler = (_req, res) => {
      res.writeHead(200, { 'Content-Type': 'text/event-stream' });
      const chunk = { id: 'c', choices: [{ delta: { content: 'y'.repeat(4000) } }] };
      endless(res, `data: ${JSON.stringify(chunk)}\n\n`, 4 * LLM_STREAM_MAX_BYTES);
    };
    await expect(ask(true)).rejects.toThrow(`the LLM endpoint's streamed answer is over ${LLM_STREAM_MAX_BYTES} bytes`);
    await closed();
    expect(endpoint.last.written).toBeLessThan(2 * LLM_STREAM_MAX_BYTES);
  });

  it('refuses a streamed event longer than 8 Mi characters without its end', async () => {
    endpoint.handler = (_req, res) => {
      res.writeHead(200, { 'Content-Type': 'text/event-stream' });
      res.write('data: {"choices":[{"delta":{"content":"');
      endless(res, 'w'.repeat(64 * 1024), 4 * LLM_STREAM_MAX_BYTES);
    };
    await expect(ask(true)).rejects.toThrow(
      new LlmError('the LLM endpoint streamed an event longer than 8388608 characters'),
    );
    await closed();
  });

  it('reads at most 64 KiB of an error body that never ends, and keeps 500 characters of a short one', async () => {
    endpoint.handler = (_req, res) => {
      res.writeHead(500, { 'Content-Type': 'text/plain' });
      endless(res, 'e'.repeat(16 * 1024), 4 * LLM_ANSWER_MAX_BYTES);
    };
    const endlessError = await ask().catch((e: unknown) => e);
    expect(endlessError).toBeInstanceOf(LlmError);
    expect(endlessError).toMatchObject({
      status: 500,
      message: 'the LLM endpoint answered 500: (a body over 65536 bytes or cut off, not read)',
    });
    await closed();
    expect(endpoint.last.written).toBeLessThan(LLM_ANSWER_MAX_BYTES);

    endpoint.handler = (_req, res) =>
      res.writeHead(429, { 'Content-Type': 'text/plain' }).end('slow down '.repeat(100));
    const short = await ask().catch((e: unknown) => e);
    expect(short).toMatchObject({ status: 429, message: `the LLM endpoint answered 429: ${'slow down '.repeat(50)}` });
  });

  it('ends a whole answer that trickles on at its timeout, while garbage is collected all along', async () => {
    endpoint.handler = (_req, res) => {
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.write('{"choices":[{"message":{"content":"');
      const drip = setInterval(() => res.write('z'), 20);
      res.on('close', () => clearInterval(drip));
    };
    await whileCollecting(() =>
      expect(within(20_000, ask(false, { timeout_s: 1 }))).rejects.toMatchObject({ name: 'TimeoutError' }),
    );
    await closed();
  });

  it('takes timeout_s as the longest wait between two pieces of a stream, not as the whole stream', async () => {
    // A slow model: a chunk every 300 ms for about 3 s, within a timeout of 2 s a wait.
    endpoint.handler = (_req, res) => {
      res.writeHead(200, { 'Content-Type': 'text/event-stream' });
      let sent = 0;
      const drip = setInterval(() => {
        if (sent++ < 10)
          res.write(`data: ${JSON.stringify({ id: 'slow', choices: [{ delta: { content: 'a' } }] })}\n\n`);
        else res.end('data: [DONE]\n\n');
      }, 300);
      res.on('close', () => clearInterval(drip));
    };
    const slow = await whileCollecting(() => within(20_000, ask(true, { timeout_s: 2 })));
    expect(slow.content).toBe('a'.repeat(10));

    // The same model going silent after its first chunk.
    endpoint.handler = (_req, res) => {
      res.writeHead(200, { 'Content-Type': 'text/event-stream' });
      res.write(`data: ${JSON.stringify({ id: 'silent', choices: [{ delta: { content: 'a' } }] })}\n\n`);
    };
    await whileCollecting(() =>
      expect(within(20_000, ask(true, { timeout_s: 1 }))).rejects.toMatchObject({ name: 'TimeoutError' }),
    );
    await closed();
  });

  it('adds up 20,000 streamed token ids, one a chunk, in place and within MAX_TOKEN_IDS', async () => {
    const chunks = Array.from({ length: 20_000 }, (_, i) => ({ id: 'c', choices: [{ token_ids: [i % 7] }] }));
    endpoint.handler = streaming(
      { id: 'c', prompt_token_ids: [1, 2], choices: [{ delta: { content: 'ok' } }] },
      ...chunks,
    );
    const c = await ask(true);
    expect(c.prompt_token_ids).toEqual([1, 2]);
    expect(c.response_token_ids).toHaveLength(20_000);
    expect(c.response_token_ids!.slice(0, 8)).toEqual([0, 1, 2, 3, 4, 5, 6, 0]);

    const ids = [1];
    expect(appendTokenIds(ids, [2, 3])).toBe(ids); // the same list, not a copy a chunk
    expect(ids).toEqual([1, 2, 3]);
    expect(() => appendTokenIds(new Array<number>(MAX_TOKEN_IDS).fill(0), [1])).toThrow(
      new LlmError(`the LLM endpoint streamed more than ${MAX_TOKEN_IDS} token ids`),
    );
  });
});
