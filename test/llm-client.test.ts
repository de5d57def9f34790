/** The chat-completions client against the scripted LLM over loopback: plain, streaming, cancelled, failing. */
import { complete } from '../src/runtime/agent/llm-client';
import { ScriptedLlm } from '../src/llm/scripted-llm';

describe('LLM client and scripted LLM', () => {
  let llm: ScriptedLlm;
  beforeAll(async () => {
    llm = await new ScriptedLlm([]).start();
  });
  afterAll(() => llm.close());

  const tools = [{ type: 'function', function: { name: 'terminal', parameters: { type: 'object', properties: { command: { type: 'string' } } } } }];
  const settings = () => ({ model: 'scripted', base_url: llm.url, api_key: 'sk-test' });

  it('gets a tool call, with the request recorded as sent', async () => {
    llm.load([{ content: 'Listing files.', tool_calls: [{ name: 'terminal', arguments: { command: 'ls' } }], prompt_token_ids: [1, 2], response_token_ids: [3] }]);
    const c = await complete(settings(), [{ role: 'user', content: 'hi' }], tools);
    expect(c).toMatchObject({
      id: 'chatcmpl-scripted-1',
      content: 'Listing files.',
      tool_calls: [{ id: 'call_1_1', type: 'function', function: { name: 'terminal', arguments: '{"command":"ls"}' } }],
      prompt_token_ids: [1, 2],
      response_token_ids: [3],
    });
    expect(llm.requests[llm.requests.length - 1]).toMatchObject({ authorization: 'Bearer sk-test', body: { model: 'scripted', tools, messages: [{ role: 'user', content: 'hi' }] } });
  });

  it('streams deltas and assembles the same answer', async () => {
    llm.load([{ content: 'one two three', tool_calls: [{ name: 'terminal', arguments: '{"command":"pwd"}' }] }]);
    const deltas: string[] = [];
    const c = await complete({ ...settings(), stream: true }, [{ role: 'user', content: 'go' }], tools, { onDelta: (d) => deltas.push(d.content ?? '') });
    expect(deltas).toEqual(['one ', 'two ', 'three']);
    expect(c.content).toBe('one two three');
    expect(c.tool_calls).toEqual([{ id: 'call_1_1', type: 'function', function: { name: 'terminal', arguments: '{"command":"pwd"}' } }]);
    expect(llm.requests[llm.requests.length - 1]!.body.stream).toBe(true);
  });

  it('reads a stream with CRLF line ends, and gives ids to calls that came without', async () => {
    llm.load([{ content: 'crlf works', tool_calls: [{ name: 'terminal', arguments: '{}' }, { name: 'terminal', arguments: '{}' }], crlf: true, omit_call_ids: true, response_token_ids: [7] }]);
    const c = await complete({ ...settings(), stream: true }, [{ role: 'user', content: 'go' }], tools);
    expect(c.content).toBe('crlf works');
    expect(c.response_token_ids).toEqual([7]);
    expect(c.tool_calls.map((t) => t.id)).toEqual([expect.stringMatching(/^call_\w+_0$/), expect.stringMatching(/^call_\w+_1$/)]);
    llm.load([{ tool_calls: [{ name: 'terminal', arguments: '{}' }], omit_call_ids: true }]);
    const plain = await complete(settings(), [{ role: 'user', content: 'go' }], tools);
    expect(plain.tool_calls[0]!.id).toMatch(/^call_\w+_0$/);
  });

  it('is cancelled at once by its signal while the model is slow', async () => {
    llm.load([{ content: 'late', delay_ms: 10_000 }]);
    const abort = new AbortController();
    const t0 = Date.now();
    setTimeout(() => abort.abort(), 200);
    await expect(complete(settings(), [{ role: 'user', content: 'x' }], [], { signal: abort.signal })).rejects.toThrow();
    expect(Date.now() - t0).toBeLessThan(2000);
  });

  it('reports a failing endpoint with its status', async () => {
    llm.load([{ status: 503 }]);
    await expect(complete(settings(), [{ role: 'user', content: 'x' }], [])).rejects.toMatchObject({ name: 'LlmError', status: 503 });
  });
});
