/**
 * A client for any OpenAI-compatible chat-completions endpoint, with tool calling, optional streaming
 * (server-sent events) and cancellation. It returns the assistant message plus what the events need:
 * the response id, token ids when the endpoint gives them, the token usage (and cost) it reports, and
 * the raw exchange for completion logs.
 */
import { randomUUID } from 'node:crypto';

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

interface Delta {
  content?: string | null;
  reasoning_content?: string | null;
  tool_calls?: { index: number; id?: string; function?: { name?: string; arguments?: string } }[];
}

export async function complete(
  llm: LlmSettings,
  messages: ChatMessage[],
  tools: object[],
  opts: {
    signal?: AbortSignal;
    onDelta?: (d: { content: string | null; reasoning_content: string | null }) => void;
  } = {},
): Promise<Completion> {
  const stream = Boolean(llm.stream);
  const request = {
    model: llm.model,
    messages,
    ...(tools.length > 0 ? { tools, tool_choice: 'auto' } : {}),
    ...(llm.temperature != null ? { temperature: llm.temperature } : {}),
    ...(llm.top_p != null ? { top_p: llm.top_p } : {}),
    ...(llm.max_output_tokens != null ? { max_tokens: llm.max_output_tokens } : {}),
    ...(stream ? { stream: true, stream_options: { include_usage: true } } : {}),
  };
  const signals = [AbortSignal.timeout((llm.timeout_s ?? 600) * 1000), ...(opts.signal ? [opts.signal] : [])];
  const res = await fetch(endpoint(llm.base_url), {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', ...(llm.api_key ? { Authorization: `Bearer ${llm.api_key}` } : {}) },
    body: JSON.stringify(request),
    signal: AbortSignal.any(signals),
  });
  if (!res.ok)
    throw new LlmError(`the LLM endpoint answered ${res.status}: ${(await res.text()).slice(0, 500)}`, res.status);

  if (!stream) {
    const body = (await res.json()) as {
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

  let id = '';
  let content = '';
  let reasoning = '';
  let promptTokenIds: number[] | null = null;
  let responseTokenIds: number[] | null = null;
  let usage: Usage | null = null;
  const calls: { id: string; name: string; arguments: string }[] = [];
  const chunks: unknown[] = [];
  const decoder = new TextDecoder();
  let buffer = '';
  for await (const part of res.body as unknown as AsyncIterable<Uint8Array>) {
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
      const chunk = JSON.parse(data) as {
        id?: string;
        prompt_token_ids?: number[];
        usage?: unknown;
        choices?: { delta?: Delta; token_ids?: number[] }[];
      };
      chunks.push(chunk);
      id ||= chunk.id ?? '';
      // With include_usage the last chunk (no choices) carries the usage of the whole answer.
      if (chunk.usage) usage = readUsage(chunk.usage) ?? usage;
      if (chunk.prompt_token_ids) promptTokenIds = chunk.prompt_token_ids;
      const choice = chunk.choices?.[0];
      if (choice?.token_ids) responseTokenIds = [...(responseTokenIds ?? []), ...choice.token_ids];
      const delta = choice?.delta;
      if (!delta) continue;
      if (delta.content || delta.reasoning_content) {
        content += delta.content ?? '';
        reasoning += delta.reasoning_content ?? '';
        opts.onDelta?.({ content: delta.content ?? null, reasoning_content: delta.reasoning_content ?? null });
      }
      for (const tc of delta.tool_calls ?? []) {
        const call = (calls[tc.index] ??= { id: '', name: '', arguments: '' });
        if (tc.id) call.id = tc.id;
        if (tc.function?.name) call.name += tc.function.name;
        if (tc.function?.arguments) call.arguments += tc.function.arguments;
      }
    }
  }
  return {
    id: id || `resp-${Date.now()}`,
    content: content || null,
    reasoning_content: reasoning || null,
    tool_calls: calls
      .filter(Boolean)
      .map((c, i) => ({ id: c.id || callId(i), type: 'function', function: { name: c.name, arguments: c.arguments } })),
    prompt_token_ids: promptTokenIds,
    response_token_ids: responseTokenIds,
    usage,
    request,
    response: chunks,
  };
}
