/** The framing of a streamed chat completion: server-sent events, read from the body as they arrive. */
import { LlmError } from './llm-protocol';

/**
 * The data of each server-sent event in a body, as it arrives: a frame's `data:` lines joined, frames
 * without data and the closing `[DONE]` left out. Linear in what arrives, however it is cut into pieces:
 * only the new piece is searched for the end of a frame, and a frame longer than `maxFrameLength`
 * characters is an LlmError.
 */
export async function* sseData(body: AsyncIterable<Uint8Array>, maxFrameLength: number): AsyncGenerator<string> {
  const decoder = new TextDecoder();
  const frame = openFrame(maxFrameLength);
  let heldCr = false; // a CR that ends a piece: with the next piece's LF it is one line end, not two
  for await (const part of body) {
    let text: string = (heldCr ? '\r' : '') + decoder.decode(part, { stream: true });
    heldCr = text.endsWith('\r');
    if (heldCr) text = text.slice(0, -1);
    for (const done of frame.add(text.replace(/\r\n?/g, '\n'))) {
      const data = dataOf(done);
      if (data) yield data;
    }
  }
  // A CR that ended the body is a line end of its own.
  for (const done of heldCr ? frame.add('\n') : []) {
    const data = dataOf(done);
    if (data) yield data;
  }
}

/**
 * The frame being read: its text so far, and whether it ends with a line end. Pieces are kept in blocks of
 * 256 joined once each, since many tiny pieces apart would cost far more than their text, and joining the
 * whole frame again at every block would cost the square of its length.
 */
function openFrame(maxLength: number) {
  let blocks: string[] = [];
  let pieces: string[] = [];
  let length = 0;
  let endsWithLf = false;
  const take = (tail: string) => {
    const whole = blocks.join('') + pieces.join('') + tail;
    blocks = [];
    pieces = [];
    length = 0;
    return whole;
  };
  return {
    /** Adds text whose line ends are LF; answers the frames it completes. */
    add(text: string): string[] {
      const done: string[] = [];
      let rest = text;
      if (endsWithLf && rest.startsWith('\n')) {
        done.push(take('').slice(0, -1)); // the blank line began at the end of the last piece
        rest = rest.slice(1);
      }
      const parts = rest.split('\n\n');
      for (const part of parts.slice(0, -1)) done.push(take(part));
      const last = parts[parts.length - 1]!;
      if (last) {
        pieces.push(last);
        if (pieces.length === 256) {
          blocks.push(pieces.join(''));
          pieces = [];
        }
        length += last.length;
        endsWithLf = last.endsWith('\n');
      } else if (parts.length > 1 || done.length > 0) endsWithLf = false;
      if (length > maxLength)
        throw new LlmError(`the LLM endpoint streamed an event longer than ${maxLength} characters`);
      return done;
    },
  };
}

/** A frame's `data:` lines joined; null for a frame without data and for the closing `[DONE]`. */
function dataOf(frame: string): string | null {
  const data = frame
    .split('\n')
    .filter((l) => l.startsWith('data:'))
    .map((l) => l.slice(5).trim())
    .join('');
  return !data || data === '[DONE]' ? null : data;
}
