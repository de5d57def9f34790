/** The server-sent events framing of a streamed completion: the same events however the body is cut, within a bound. */
import { LlmError } from '../src/runtime/agent/llm-protocol';
import { sseData } from '../src/runtime/agent/sse-data';

async function* pieces(...texts: string[]): AsyncGenerator<Uint8Array> {
  for (const t of texts) yield new TextEncoder().encode(t);
}

async function read(body: AsyncIterable<Uint8Array>, max = 1000): Promise<string[]> {
  const out: string[] = [];
  for await (const d of sseData(body, max)) out.push(d);
  return out;
}

describe('sseData', () => {
  // LF, CRLF and CR line ends, two data lines in one event, an event without data, a comment, [DONE].
  const stream =
    'data: {"a":1}\n\n' +
    'data: {"b":\r\ndata: 2}\r\n\r\n' +
    ': a comment\r\rdata: {"c":3}\r\r' +
    'event: ping\n\n' +
    'data: {"é":"ü"}\n\n\n' +
    'data: [DONE]\n\n';
  const events = ['{"a":1}', '{"b":2}', '{"c":3}', '{"é":"ü"}'];

  it('reads the events of a whole body', async () => {
    expect(await read(pieces(stream))).toEqual(events);
  });

  it('reads the same events when the body is cut in two at any place, a line end or a character split included', async () => {
    const bytes = new TextEncoder().encode(stream);
    for (let at = 0; at <= bytes.length; at++) {
      async function* two() {
        yield bytes.slice(0, at);
        yield bytes.slice(at);
      }
      expect([at, await read(two())]).toEqual([at, events]);
    }
  });

  it('reads the same events a byte at a time', async () => {
    const bytes = new TextEncoder().encode(stream);
    async function* oneByOne() {
      for (const b of bytes) yield Uint8Array.of(b);
    }
    expect(await read(oneByOne())).toEqual(events);
  });

  it('takes a CR that ends the body as the end of the last event', async () => {
    expect(await read(pieces('data: {"y":1}\r\r', 'data: {"z":1}\r', '\r'))).toEqual(['{"y":1}', '{"z":1}']);
  });

  it('refuses an event longer than the bound, even when it comes in small pieces', async () => {
    await expect(read(pieces('data: ', 'x'.repeat(600), 'y'.repeat(600)))).rejects.toThrow(
      new LlmError('the LLM endpoint streamed an event longer than 1000 characters'),
    );
    expect(await read(pieces(`data: ${'x'.repeat(900)}\n\n`, `data: ${'y'.repeat(900)}\n\n`))).toHaveLength(2);
  });
});
