/**
 * A client for any OpenAI-compatible chat-completions endpoint, with tool calling, optional streaming
 * (server-sent events) and cancellation. It returns the assistant message plus what the events need:
 * the response id, token ids when the endpoint gives them, the token usage (and cost) it reports, and
 * the raw exchange for completion logs.
 */
import { randomUUID } from 'node:crypto';
import { readBodyAtMost } from '../../read-body';
import { sseData } from './sse-data';

/**
 * The most an answer may hold on the wire, whole or streamed: far above what a model's output limit makes
 * (a streamed answer of 128k tokens, each in a chunk with its token ids, is about 30 MiB), and a bound on
 * what an endpoint that never stops sending costs the sandbox.
 */
export const LLM_ANSWER_MAX_BYTES = 64 * 1024 * 1024;
/** How much of a failing answer's body is read for its message (of which 500 characters are kept). */
const ERROR_BODY_MAX_BYTES = 64 * 1024;
/** The most tool calls a streamed answer may index: an index is where a call's pieces go, so it is bounded. */
const MAX_STREAMED_CALLS = 256;

export interface LlmSettings {
  model: string;
  base_url: string;
  api_key?: string | null;
  temperature?: number | null;
  top_p?: number | null;
  max_output_tokens?: number | null;
  stream?: boolean;
  timeout_s?: number;
}

export interface ToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

/** A part of a user message's content: text, or an image by URL (an http(s) or a data: URL). */
export type ContentPart = { type: 'text'; text: string } | { type: 'image_url'; image_url: { url: string } };

export type ChatMessage =
  | { role: 'system'; content: string }
  | { role: 'user'; content: string | ContentPart[] }
  | { role: 'assistant'; content: string | null; tool_calls?: ToolCall[] }
  | { role: 'tool'; tool_call_id: string; content: string };

/** What a completion cost, as the endpoint reported it (OpenAI's `usage`, plus `cost` where a proxy adds it). */
export interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  cache_read_tokens: number;
  cache_write_tokens: number;
  reasoning_tokens: number;
  /** In the endpoint's currency (USD for OpenRouter and LiteLLM); null when it gave none. */
  cost: number | null;
}

export interface Completion {
  id: string;
  content: string | null;
  reasoning_content: string | null;
  tool_calls: ToolCall[];
  prompt_token_ids: number[] | null;
  response_token_ids: number[] | null;
  /** Null (or absent) when the endpoint reported no usage. */
  usage?: Usage | null;
  request: unknown;
  response: unknown;
}

export class LlmError extends Error {
  constructor(
    message: string,
    readonly status?: number,
  ) {
    super(message);
    this.name = 'LlmError';
  }
}

/** Some endpoints leave out call ids; the events and the next request need one. */
const callId = (i: number) => `call_${randomUUID().replace(/-/g, '').slice(0, 20)}_${i}`;

/** A count from the endpoint: anything but a finite, non-negative number counts as 0 (the endpoint is not trusted). */
const count = (v: unknown): number =>
  typeof v === 'number' && Number.isFinite(v) && v >= 0 ? Math.min(Math.floor(v), Number.MAX_SAFE_INTEGER) : 0;

/**
 * The usage of a completion: OpenAI's field names, with the cache fields other providers use through
 * OpenAI-compatible proxies (Anthropic's cache_creation/cache_read input tokens, DeepSeek's cache hits).
 */
export function readUsage(raw: unknown): Usage | null {
  if (!raw || typeof raw !== 'object' || Array.isArray(raw)) return null;
  const u = raw as Record<string, unknown>;
  const details = (v: unknown) => (v && typeof v === 'object' ? (v as Record<string, unknown>) : {});
  const prompt = details(u.prompt_tokens_details);
  const completion = details(u.completion_tokens_details);
  const cost = typeof u.cost === 'number' && Number.isFinite(u.cost) && u.cost >= 0 ? u.cost : null;
  return {
    prompt_tokens: count(u.prompt_tokens),
    completion_tokens: count(u.completion_tokens),
    cache_read_tokens:
      count(prompt.cached_tokens) || count(u.cache_read_input_tokens) || count(u.prompt_cache_hit_tokens),
    cache_write_tokens:
      count(prompt.cache_write_tokens) || count(prompt.cache_creation_tokens) || count(u.cache_creation_input_tokens),
    reasoning_tokens: count(completion.reasoning_tokens),
    cost,
  };
}

const endpoint = (baseUrl: string) => `${baseUrl.replace(/\/+$/, '')}/chat/completions`;

/** What a caller of `complete` may add: a signal to cancel the call, and a callback for each streamed delta. */
export interface CompleteOptions {
  signal?: AbortSignal;
  onDelta?: (d: { content: string | null; reasoning_content: string | null }) => void;
}

export async function complete(
  llm: LlmSettings,
  messages: ChatMessage[],
  tools: object[],
  opts: CompleteOptions = {},
): Promise<Completion> {
  const stream = Boolean(llm.stream);
  const request = chatRequest(llm, messages, tools, stream);
  const res = await postChat(llm, request, opts.signal);
  if (!stream) return readAnswer(res, request);
  return readStreamedAnswer(res, request, opts);
}

/** The chat-completions request body: the settings left unset are left out, so the endpoint's defaults hold. */
function chatRequest(llm: LlmSettings, messages: ChatMessage[], tools: object[], stream: boolean) {
  return {
    model: llm.model,
    messages,
    ...(tools.length > 0 ? { tools, tool_choice: 'auto' } : {}),
    ...(llm.temperature != null ? { temperature: llm.temperature } : {}),
    ...(llm.top_p != null ? { top_p: llm.top_p } : {}),
    ...(llm.max_output_tokens != null ? { max_tokens: llm.max_output_tokens } : {}),
    ...(stream ? { stream: true, stream_options: { include_usage: true } } : {}),
  };
}

/** Sends the request within the settings' timeout (and the caller's signal); an answer other than 2xx is an LlmError. */
async function postChat(llm: LlmSettings, request: object, signal: AbortSignal | undefined): Promise<Response> {
  const signals = [AbortSignal.timeout((llm.timeout_s ?? 600) * 1000), ...(signal ? [signal] : [])];
  const res = await fetch(endpoint(llm.base_url), {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', ...(llm.api_key ? { Authorization: `Bearer ${llm.api_key}` } : {}) },
    body: JSON.stringify(request),
    signal: AbortSignal.any(signals),
  });
  if (!res.ok) {
    const text = await readBodyAtMost(res, ERROR_BODY_MAX_BYTES).catch(() => null);
    const detail =
      text === null ? `(a body over ${ERROR_BODY_MAX_BYTES} bytes or cut off, not read)` : text.slice(0, 500);
    throw new LlmError(`the LLM endpoint answered ${res.status}: ${detail}`, res.status);
  }
  return res;
}

/** The completion from a whole (not streamed) JSON answer. */
async function readAnswer(res: Response, request: unknown): Promise<Completion> {
  const text = await readBodyAtMost(res, LLM_ANSWER_MAX_BYTES);
  if (text === null) throw new LlmError(`the LLM endpoint's answer is over ${LLM_ANSWER_MAX_BYTES} bytes`);
  const body = jsonObject(text, 'answer') as {
    id?: string;
    prompt_token_ids?: number[];
    usage?: unknown;
    choices?: {
      message?: { content?: string | null; reasoning_content?: string | null; tool_calls?: ToolCall[] };
      token_ids?: number[];
    }[];
  };
  const choice = body.choices?.[0];
  if (!choice?.message) throw new LlmError('the LLM endpoint answered without a message');
  return {
    id: body.id ?? `resp-${Date.now()}`,
    content: choice.message.content ?? null,
    reasoning_content: choice.message.reasoning_content ?? null,
    tool_calls: (choice.message.tool_calls ?? []).map((c, i) => ({
      id: c.id || callId(i),
      type: 'function',
      function: c.function,
    })),
    prompt_token_ids: body.prompt_token_ids ?? null,
    response_token_ids: choice.token_ids ?? null,
    usage: readUsage(body.usage),
    request,
    response: body,
  };
}

interface Delta {
  content?: string | null;
  reasoning_content?: string | null;
  tool_calls?: { index: number; id?: string; function?: { name?: string; arguments?: string } }[];
}

/** One chunk of a streamed answer: its fields as OpenAI and vLLM-style servers send them. */
interface StreamChunk {
  id?: string;
  prompt_token_ids?: number[];
  usage?: unknown;
  choices?: { delta?: Delta; token_ids?: number[] }[];
}

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

/** The completion from a streamed answer: its chunks added up, each delta of text passed on as it comes. */
async function readStreamedAnswer(res: Response, request: unknown, opts: CompleteOptions): Promise<Completion> {
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
  for await (const data of sseData(atMost(res.body as unknown as AsyncIterable<Uint8Array>, LLM_ANSWER_MAX_BYTES)))
    addChunk(answer, jsonObject(data, 'streamed chunk') as StreamChunk, opts);
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

function addChunk(answer: StreamedAnswer, chunk: StreamChunk, opts: CompleteOptions): void {
  answer.chunks.push(chunk);
  answer.id ||= chunk.id ?? '';
  // With include_usage the last chunk (no choices) carries the usage of the whole answer.
  if (chunk.usage) answer.usage = readUsage(chunk.usage) ?? answer.usage;
  if (chunk.prompt_token_ids) answer.promptTokenIds = chunk.prompt_token_ids;
  const choice = chunk.choices?.[0];
  if (choice?.token_ids) answer.responseTokenIds = [...(answer.responseTokenIds ?? []), ...choice.token_ids];
  const delta = choice?.delta;
  if (!delta) return;
  if (delta.content || delta.reasoning_content) {
    answer.content += delta.content ?? '';
    answer.reasoning += delta.reasoning_content ?? '';
    opts.onDelta?.({ content: delta.content ?? null, reasoning_content: delta.reasoning_content ?? null });
  }
  // A call comes in pieces under its index: its id when given, its name and arguments a part at a time.
  for (const tc of delta.tool_calls ?? []) {
    if (!tc || !Number.isInteger(tc.index) || tc.index < 0 || tc.index >= MAX_STREAMED_CALLS)
      throw new LlmError(`the LLM endpoint streamed a tool call without an index from 0 to ${MAX_STREAMED_CALLS - 1}`);
    const call = (answer.calls[tc.index] ??= { id: '', name: '', arguments: '' });
    if (tc.id) call.id = tc.id;
    if (tc.function?.name) call.name += tc.function.name;
    if (tc.function?.arguments) call.arguments += tc.function.arguments;
  }
}

/** A JSON object from the endpoint; anything else (not JSON, an array, a number, null) is an LlmError. */
function jsonObject(text: string, what: string): object {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new LlmError(`the LLM endpoint's ${what} is not JSON: ${text.slice(0, 200)}`);
  }
  if (!value || typeof value !== 'object' || Array.isArray(value))
    throw new LlmError(`the LLM endpoint's ${what} is not a JSON object`);
  return value;
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
