/**
 * A streamed chat completion read as it arrives: the chunks added up to one completion, each delta of text
 * passed on. The endpoint is hostile input: the stream is bounded in bytes (on the wire and per frame), a
 * call's index in calls, token ids in number, and every field is checked for its kind before it is used.
 */
import {
  appendTokenIds,
  argumentsOf,
  callId,
  contentOf,
  idOf,
  jsonObject,
  LlmError,
  readUsage,
  textOf,
  tokenIdsOf,
  type CompleteOptions,
  type Completion,
  type Usage,
} from './llm-protocol';
import { MAX_EVENT_BYTES } from './event-size';
import { sseData } from './sse-data';

/** The most tool calls a streamed answer may index: an index is where a call's pieces go, so it is bounded. */
const MAX_STREAMED_CALLS = 256;
/** The longest single event of a stream, in characters: one chunk (the first may carry the prompt's token ids). */
const MAX_FRAME_LENGTH = 8 * 1024 * 1024;

/** What the chunks of a streamed answer add up to so far. */
interface StreamedAnswer {
  id: string;
  content: string;
  reasoning: string;
  promptTokenIds: number[] | null;
  responseTokenIds: number[] | null;
  usage: Usage | null;
  calls: { id: string; name: string; arguments: string }[];
  /** The chunks kept for a completion log, up to KEPT_MAX_LENGTH of their text; how many were not. */
  chunks: unknown[];
  keptLength: number;
  keptLeftOut: number;
}

/** The most of a stream's text kept for its completion log: a log is one event, of at most MAX_EVENT_BYTES. */
const KEPT_MAX_LENGTH = MAX_EVENT_BYTES;

function keep(answer: StreamedAnswer, chunk: unknown, length: number): void {
  if (answer.keptLength + length > KEPT_MAX_LENGTH) {
    answer.keptLeftOut++;
    return;
  }
  answer.keptLength += length;
  answer.chunks.push(chunk);
}

/** How a stream is read: its bound on the wire, the key to mask in what is quoted, and a call per piece read. */
export interface StreamReading {
  maxBytes: number;
  apiKey: string | null | undefined;
  onPiece: () => void;
}

/** The completion from a streamed answer. */
export async function readStreamedAnswer(
  res: Response,
  request: unknown,
  opts: CompleteOptions,
  reading: StreamReading,
): Promise<Completion> {
  const answer: StreamedAnswer = {
    id: '',
    content: '',
    reasoning: '',
    promptTokenIds: null,
    responseTokenIds: null,
    usage: null,
    calls: [],
    chunks: [],
    keptLength: 0,
    keptLeftOut: 0,
  };
  const body = atMost(res.body as unknown as AsyncIterable<Uint8Array>, reading);
  for await (const data of sseData(body, MAX_FRAME_LENGTH)) {
    const chunk = jsonObject(data, 'streamed chunk', reading.apiKey);
    if (opts.keepExchange) keep(answer, chunk, data.length);
    addChunk(answer, chunk, opts);
  }
  return {
    id: answer.id || `resp-${Date.now()}`,
    content: answer.content || null,
    reasoning_content: answer.reasoning || null,
    tool_calls: answer.calls
      .filter(Boolean)
      .map((c, i) => ({ id: c.id || callId(i), type: 'function', function: { name: c.name, arguments: c.arguments } })),
    prompt_token_ids: answer.promptTokenIds,
    response_token_ids: answer.responseTokenIds,
    usage: answer.usage,
    request,
    response: !opts.keepExchange
      ? null
      : answer.keptLeftOut > 0
        ? [...answer.chunks, { chunks_left_out: answer.keptLeftOut }]
        : answer.chunks,
  };
}

/** An object field of the endpoint's, or {} when absent; anything else is an LlmError. */
function objectOf(v: unknown, what: string): Record<string, unknown> {
  if (v === undefined || v === null) return {};
  if (typeof v !== 'object' || Array.isArray(v)) throw new LlmError(`the LLM endpoint's ${what}: not an object`);
  return v as Record<string, unknown>;
}

/** A list field of the endpoint's, or [] when absent; anything else is an LlmError. */
function listOf(v: unknown, what: string): unknown[] {
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v)) throw new LlmError(`the LLM endpoint's ${what}: not a list`);
  return v;
}

function addChunk(answer: StreamedAnswer, chunk: Record<string, unknown>, opts: CompleteOptions): void {
  answer.id ||= idOf(chunk.id, 'chunk id') ?? '';
  // With include_usage the last chunk (no choices) carries the usage of the whole answer.
  if (chunk.usage) answer.usage = readUsage(chunk.usage) ?? answer.usage;
  answer.promptTokenIds = tokenIdsOf(chunk.prompt_token_ids, 'prompt token ids') ?? answer.promptTokenIds;
  const choice = objectOf(listOf(chunk.choices, 'choices')[0], 'choice');
  const ids = tokenIdsOf(choice.token_ids, 'token ids');
  if (ids) answer.responseTokenIds = appendTokenIds(answer.responseTokenIds ?? [], ids);
  const delta = objectOf(choice.delta, 'delta');
  const content = contentOf(delta.content, 'content');
  const reasoning = textOf(delta.reasoning_content, 'reasoning content');
  if (content || reasoning) {
    answer.content += content ?? '';
    answer.reasoning += reasoning ?? '';
    opts.onDelta?.({ content, reasoning_content: reasoning });
  }
  for (const raw of listOf(delta.tool_calls, 'tool calls')) addCallPiece(answer, raw);
}

/**
 * A call comes in pieces under its index: its id when given, its name and arguments a part at a time.
 * Some OpenAI-compatible servers (Gemini's, older Ollama) leave the index out: such a piece goes on the
 * last call unless it starts another (another id, or a name when the last has one).
 */
function addCallPiece(answer: StreamedAnswer, raw: unknown): void {
  const piece = objectOf(raw, 'tool call');
  const fn = objectOf(piece.function, 'tool call function');
  const id = idOf(piece.id, 'tool call id');
  const name = textOf(fn.name, 'tool call name');
  const index = piece.index ?? indexWithout(answer, id, name);
  if (typeof index !== 'number' || !Number.isInteger(index) || index < 0 || index >= MAX_STREAMED_CALLS)
    throw new LlmError(`the LLM endpoint streamed a tool call without an index from 0 to ${MAX_STREAMED_CALLS - 1}`);
  const call = (answer.calls[index] ??= { id: '', name: '', arguments: '' });
  call.id = id || call.id;
  if (name && name !== call.name) call.name += name; // some servers repeat the whole name with each piece
  call.arguments += argumentsOf(fn.arguments);
}

/** Where a piece without an index goes: the call of its id, else the last call, or a new one when the piece starts one. */
function indexWithout(answer: StreamedAnswer, id: string | null, name: string | null): number {
  const same = id ? answer.calls.findIndex((c) => c?.id === id) : -1;
  if (same >= 0) return same; // a call that repeats its id with each piece
  const last = answer.calls.length - 1;
  const open = answer.calls[last];
  const starts = !open || (id && open.id && id !== open.id) || (name && open.name);
  return starts ? answer.calls.length : last;
}

/**
 * The body's pieces until `maxBytes` have come (one more is an LlmError, and leaving the loop cancels the
 * rest), each told to `onPiece` as it arrives.
 */
async function* atMost(
  body: AsyncIterable<Uint8Array>,
  { maxBytes, onPiece }: StreamReading,
): AsyncGenerator<Uint8Array> {
  let size = 0;
  for await (const piece of body) {
    onPiece();
    size += piece.byteLength;
    if (size > maxBytes) throw new LlmError(`the LLM endpoint's streamed answer is over ${maxBytes} bytes`);
    yield piece;
  }
}
