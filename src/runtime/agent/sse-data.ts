/** The framing of a streamed chat completion: server-sent events, read from the body as they arrive. */

/**
 * The data of each server-sent event in a body, as it arrives: a frame's `data:` lines joined, frames
 * without data and the closing `[DONE]` left out.
 */
export async function* sseData(body: AsyncIterable<Uint8Array>): AsyncGenerator<string> {
  const decoder = new TextDecoder();
  let buffer = '';
  for await (const part of body) {
    buffer += decoder.decode(part, { stream: true }).replace(/\r\n?/g, '\n'); // SSE allows CRLF and CR line ends
    let end: number;
    while ((end = buffer.indexOf('\n\n')) >= 0) {
      const frame = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const data = frame
        .split('\n')
        .filter((l) => l.startsWith('data:'))
        .map((l) => l.slice(5).trim())
        .join('');
      if (!data || data === '[DONE]') continue;
      yield data;
    }
  }
}
