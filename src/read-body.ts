/**
 * Reading a fetch answer's body within a bound: the one way the control plane reads what another server
 * sends (an agent server, a git host, an LLM endpoint), so a peer that sends too much costs at most the
 * bound. The typed client (src/client) keeps its own, since it imports nothing of the server.
 */

/**
 * The body as UTF-8 text, read up to `maxBytes`; null past that (a larger Content-Length is refused
 * before reading, also on an answer without a body; otherwise reading stops at the first byte over and
 * the rest is cancelled). No body: ''.
 * An error of the stream (the peer stops sending, a deadline aborts it) is thrown as it comes; the caller
 * says what it means.
 */
export async function readBodyAtMost(res: Response, maxBytes: number): Promise<string | null> {
  if (Number(res.headers.get('content-length') ?? 0) > maxBytes) {
    await res.body?.cancel().catch(() => undefined);
    return null;
  }
  if (!res.body) return '';
  const parts: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
    size += chunk.byteLength;
    if (size > maxBytes) return null; // leaving the loop cancels the rest of the body
    parts.push(chunk);
  }
  return Buffer.concat(parts).toString('utf8');
}
