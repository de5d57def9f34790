/** The chat-completions client against the scripted LLM over loopback: plain, streaming, cancelled, failing, and the usage it reads. */
import { complete } from '../src/runtime/agent/llm-client';
import { readUsage } from '../src/runtime/agent/llm-protocol';
import { ScriptedLlm } from '../src/llm/scripted-llm';

describe('LLM client and scripted LLM', () => {
  let llm: ScriptedLlm;
  beforeAll(async () => {
    llm = await new ScriptedLlm([]).start();
  });
  afterAll(() => llm.close());

  const tools = [
    {
      type: 'function',
      function: { name: 'terminal', parameters: { type: 'object', properties: { command: { type: 'string' } } } },
    },
  ];
  const settings = () => ({ model: 'scripted', base_url: llm.url, api_key: 'sk-test' });

  it('gets a tool call, with the request recorded as sent', async () => {
    llm.load([
      {
        content: 'Listing files.',
        tool_calls: [{ name: 'terminal', arguments: { command: 'ls' } }],
        prompt_token_ids: [1, 2],
        response_token_ids: [3],
      },
    ]);
    const c = await complete(settings(), [{ role: 'user', content: 'hi' }], tools);
    expect(c).toMatchObject({
      id: 'chatcmpl-scripted-1',
      content: 'Listing files.',
      tool_calls: [{ id: 'call_1_1', type: 'function', function: { name: 'terminal', arguments: '{"command":"ls"}' } }],
      prompt_token_ids: [1, 2],
      response_token_ids: [3],
    });
    expect(llm.requests[llm.requests.length - 1]).toMatchObject({
      authorization: 'Bearer sk-test',
      body: { model: 'scripted', tools, messages: [{ role: 'user', content: 'hi' }] },
    });
  });

  it('streams deltas and assembles the same answer', async () => {
    llm.load([{ content: 'one two three', tool_calls: [{ name: 'terminal', arguments: '{"command":"pwd"}' }] }]);
    const deltas: string[] = [];
    const c = await complete({ ...settings(), stream: true }, [{ role: 'user', content: 'go' }], tools, {
      onDelta: (d) => deltas.push(d.content ?? ''),
    });
    expect(deltas).toEqual(['one ', 'two ', 'three']);
    expect(c.content).toBe('one two three');
    expect(c.tool_calls).toEqual([
      { id: 'call_1_1', type: 'function', function: { name: 'terminal', arguments: '{"command":"pwd"}' } },
    ]);
    expect(llm.requests[llm.requests.length - 1]!.body.stream).toBe(true);
  });

  it('reads a stream with CRLF line ends, and gives ids to calls that came without', async () => {
    llm.load([
      {
        content: 'crlf works',
        tool_calls: [
          { name: 'terminal', arguments: '{}' },
          { name: 'terminal', arguments: '{}' },
        ],
        crlf: true,
        omit_call_ids: true,
        response_token_ids: [7],
      },
    ]);
    const c = await complete({ ...settings(), stream: true }, [{ role: 'user', content: 'go' }], tools);
    expect(c.content).toBe('crlf works');
    expect(c.response_token_ids).toEqual([7]);
    expect(c.tool_calls.map((t) => t.id)).toEqual([
      expect.stringMatching(/^call_\w+_0$/),
      expect.stringMatching(/^call_\w+_1$/),
    ]);
    llm.load([{ tool_calls: [{ name: 'terminal', arguments: '{}' }], omit_call_ids: true }]);
    const plain = await complete(settings(), [{ role: 'user', content: 'go' }], tools);
    expect(plain.tool_calls[0]!.id).toMatch(/^call_\w+_0$/);
  });

  it('is cancelled at once by its signal while the model is slow', async () => {
    llm.load([{ content: 'late', delay_ms: 10_000 }]);
    const abort = new AbortController();
    const t0 = Date.now();
    setTimeout(() => abort.abort(), 200);
    await expect(
      complete(settings(), [{ role: 'user', content: 'x' }], [], { signal: abort.signal }),
    ).rejects.toThrow();
    expect(Date.now() - t0).toBeLessThan(2000);
  });

  it('reports a failing endpoint with its status', async () => {
    llm.load([{ status: 503 }]);
    await expect(complete(settings(), [{ role: 'user', content: 'x' }], [])).rejects.toMatchObject({
      name: 'LlmError',
      status: 503,
    });
  });

  it('reads the usage of a plain answer: tokens, cached and reasoning tokens, and the cost when the endpoint gives one', async () => {
    llm.load([
      {
        content: 'four',
        usage: {
          prompt_tokens_details: { cached_tokens: 12 },
          completion_tokens_details: { reasoning_tokens: 3 },
          cost: 0.0125,
        },
      },
    ]);
    const c = await complete(
      settings(),
      [
        { role: 'system', content: 's' },
        { role: 'user', content: 'u' },
      ],
      [],
    );
    // The scripted LLM: 10 prompt tokens per message, one completion token per character of the answer.
    expect(c.usage).toEqual({
      prompt_tokens: 20,
      completion_tokens: 4,
      cache_read_tokens: 12,
      cache_write_tokens: 0,
      reasoning_tokens: 3,
      cost: 0.0125,
    });
    expect(llm.requests.at(-1)!.body.stream_options).toBeUndefined();
    llm.load([{ content: 'x', usage: null }]);
    expect((await complete(settings(), [{ role: 'user', content: 'u' }], [])).usage).toBeNull();
  });

  it('asks a stream for its usage (stream_options.include_usage) and reads it from the last chunk', async () => {
    llm.load([{ content: 'one two', usage: { prompt_tokens_details: { cached_tokens: 5 } } }]);
    const c = await complete(
      { ...settings(), stream: true },
      [
        { role: 'user', content: 'a' },
        { role: 'assistant', content: 'b' },
        { role: 'user', content: 'c' },
      ],
      [],
      { keepExchange: true }, // the chunks, for the last one's usage below
    );
    expect(llm.requests.at(-1)!.body.stream_options).toEqual({ include_usage: true });
    expect(c.content).toBe('one two');
    expect(c.usage).toEqual({
      prompt_tokens: 30,
      completion_tokens: 7,
      cache_read_tokens: 5,
      cache_write_tokens: 0,
      reasoning_tokens: 0,
      cost: null,
    });
    const last = (c.response as any[]).at(-1);
    expect(last).toMatchObject({ choices: [], usage: { prompt_tokens: 30, completion_tokens: 7 } });
  });

  it('counts what a hostile endpoint reports as usage only when it is a finite, non-negative number', () => {
    expect(readUsage(null)).toBeNull();
    expect(readUsage('lots')).toBeNull();
    expect(readUsage([1, 2])).toBeNull();
    expect(
      readUsage({
        prompt_tokens: -5,
        completion_tokens: '7',
        prompt_tokens_details: { cached_tokens: Number.NaN },
        completion_tokens_details: null,
        cost: -1,
      }),
    ).toEqual({
      prompt_tokens: 0,
      completion_tokens: 0,
      cache_read_tokens: 0,
      cache_write_tokens: 0,
      reasoning_tokens: 0,
      cost: null,
    });
    expect(readUsage({ prompt_tokens: 1e300, completion_tokens: 2.7, cache_creation_input_tokens: 4 })).toMatchObject({
      prompt_tokens: Number.MAX_SAFE_INTEGER,
      completion_tokens: 2,
      cache_write_tokens: 4,
    });
  });
});
