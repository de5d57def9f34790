/**
 * Reads a JSON array written incrementally (`[`, elements separated by `,`, whitespace keep-alives, `]`)
 * and yields each element as soon as its last byte arrives. Bounded: an element larger than `maxElementBytes`
 * is an error, not a growing buffer.
 */
export class JsonArrayStreamError extends Error {
  override readonly name = 'JsonArrayStreamError';
}

export async function* jsonArrayElements(
  chunks: AsyncIterable<Uint8Array>,
  maxElementBytes = 1 << 20,
): AsyncGenerator<unknown> {
  const decoder = new TextDecoder();
  let opened = false;
  let closed = false;
  let element = '';
  let depth = 0;
  let inString = false;
  let escaped = false;
  for await (const chunk of chunks) {
    const text = decoder.decode(chunk, { stream: true });
    for (const ch of text) {
      if (closed) {
        if (!/\s/.test(ch)) throw new JsonArrayStreamError('text after the end of the array');
        continue;
      }
      if (!opened) {
        if (ch === '[') opened = true;
        else if (!/\s/.test(ch)) throw new JsonArrayStreamError(`expected "[", got ${JSON.stringify(ch)}`);
        continue;
      }
      if (inString) {
        element += ch;
        if (escaped) escaped = false;
        else if (ch === '\\') escaped = true;
        else if (ch === '"') inString = false;
      } else if (depth === 0 && (ch === ',' || ch === ']')) {
        if (element.trim()) yield parse(element);
        else if (ch === ',') throw new JsonArrayStreamError('empty element');
        element = '';
        if (ch === ']') closed = true;
        continue;
      } else {
        if (ch === '"') inString = true;
        else if (ch === '{' || ch === '[') depth++;
        else if (ch === '}' || ch === ']') depth--;
        if (depth < 0) throw new JsonArrayStreamError('unbalanced brackets');
        if (depth === 0 && !element.trim() && /\s/.test(ch)) continue; // keep-alive between elements
        element += ch;
      }
      if (element.length > maxElementBytes)
        throw new JsonArrayStreamError(`an element exceeds ${maxElementBytes} bytes`);
    }
  }
  if (!closed) throw new JsonArrayStreamError(opened ? 'the stream ended before "]"' : 'the stream was empty');
}

function parse(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new JsonArrayStreamError(`an element is not JSON: ${(err as Error).message}`);
  }
}
