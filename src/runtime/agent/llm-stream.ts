/**
 * A streamed chat completion read as it arrives: the chunks added up to one completion, each delta of text
 * passed on. The endpoint is hostile input: the stream is bounded in bytes (on the wire and per frame), a
 * call's index in calls, token ids in number, and every field is checked for its kind before it is used.
 */
import {
  appendTokenIds,
  callId,
  jsonObject,
  LlmError,
  readUsage,
  textOf,
  tokenIdsOf,
  type CompleteOptions,
  type Completion,
  type Usage,
} from './llm-protocol';
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
  chunks: unknown[];
}

/** The completion from a streamed answer of at most `maxBytes` on the wire. */
export async function readStreamedAnswer(
  res: Response,
  request: unknown,
  opts: CompleteOptions,
  maxBytes: number,
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
  };
  const body = atMost(res.body as unknown as AsyncIterable<Uint8Array>, maxBytes);
  for await (const data of sseData(body, MAX_FRAME_LENGTH)) addChunk(answer, jsonObject(data, 'streamed chunk'), opts);
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
    response: answer.chunks,
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
  answer.chunks.push(chunk);
  answer.id ||= textOf(chunk.id, 'chunk id') ?? '';
  // With include_usage the last chunk (no choices) carries the usage of the whole answer.
  if (chunk.usage) answer.usage = readUsage(chunk.usage) ?? answer.usage;
  answer.promptTokenIds = tokenIdsOf(chunk.prompt_token_ids, 'prompt token ids') ?? answer.promptTokenIds;
  const choice = objectOf(listOf(chunk.choices, 'choices')[0], 'choice');
  const ids = tokenIdsOf(choice.token_ids, 'token ids');
  if (ids) answer.responseTokenIds = appendTokenIds(answer.responseTokenIds ?? [], ids);
  const delta = objectOf(choice.delta, 'delta');
  const content = textOf(delta.content, 'content');
  const reasoning = textOf(delta.reasoning_content, 'reasoning content');
  if (content || reasoning) {
    answer.content += content ?? '';
    answer.reasoning += reasoning ?? '';
    opts.onDelta?.({ content, reasoning_content: reasoning });
  }
  listOf(delta.tool_calls, 'tool calls').forEach((raw, position) => addCallPiece(answer, raw, position));
}

/**
 * A call comes in pieces under its index: its id when given, its name and arguments a part at a time. An
 * endpoint that leaves the index out (some OpenAI-compatible servers do) gets the call's place in the list.
 */
function addCallPiece(answer: StreamedAnswer, raw: unknown, position: number): void {
  const piece = objectOf(raw, 'tool call');
  const index = piece.index ?? position;
  if (typeof index !== 'number' || !Number.isInteger(index) || index < 0 || index >= MAX_STREAMED_CALLS)
    throw new LlmError(`the LLM endpoint streamed a tool call without an index from 0 to ${MAX_STREAMED_CALLS - 1}`);
  const call = (answer.calls[index] ??= { id: '', name: '', arguments: '' });
  const fn = objectOf(piece.function, 'tool call function');
  call.id = textOf(piece.id, 'tool call id') || call.id;
  call.name += textOf(fn.name, 'tool call name') ?? '';
  call.arguments += textOf(fn.arguments, 'tool call arguments') ?? '';
}

/** The body's chunks until `maxBytes` have come; one more is an LlmError, and leaving the loop cancels the rest. */
async function* atMost(body: AsyncIterable<Uint8Array>, maxBytes: number): AsyncGenerator<Uint8Array> {
  let size = 0;
  for await (const chunk of body) {
    size += chunk.byteLength;
    if (size > maxBytes) throw new LlmError(`the LLM endpoint's streamed answer is over ${maxBytes} bytes`);
    yield chunk;
  }
}
