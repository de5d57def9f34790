/**
 * The chat-completions protocol as the agent reads it: the messages it sends, the completion it gets back,
 * the usage an endpoint reports, and the checks that keep what an endpoint sends (hostile input) to those
 * shapes. Anything else is an LlmError.
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
  /**
   * What the endpoint answered: the parsed body, or a streamed answer's chunks (up to MAX_EVENT_BYTES of
   * their text, then `{ chunks_left_out }`); null unless `keepExchange`.
   */
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

/**
 * What a caller of `complete` may add: a signal to cancel the call, a callback for each streamed delta, and
 * whether to keep the endpoint's answer in the completion (for completion logs; it may be large).
 */
export interface CompleteOptions {
  signal?: AbortSignal;
  onDelta?: (d: { content: string | null; reasoning_content: string | null }) => void;
  keepExchange?: boolean;
}

/** The most token ids an answer may carry, prompt or response: far above any context window. */
export const MAX_TOKEN_IDS = 1_000_000;

/**
 * A JSON object from the endpoint; anything else (not JSON, an array, a number, null) is an LlmError, which
 * quotes the start of the text with the key masked first.
 */
export function jsonObject(text: string, what: string, apiKey: string | null | undefined): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new LlmError(`the LLM endpoint's ${what} is not JSON: ${withoutKey(text, apiKey).slice(0, 200)}`);
  }
  if (!value || typeof value !== 'object' || Array.isArray(value))
    throw new LlmError(`the LLM endpoint's ${what} is not a JSON object`);
  return value as Record<string, unknown>;
}

/** A text field of the endpoint's: a string, or null when absent; any other value is an LlmError. */
export function textOf(v: unknown, what: string): string | null {
  if (v === undefined || v === null) return null;
  if (typeof v !== 'string') throw new LlmError(`the LLM endpoint's ${what}: not a string`);
  return v;
}

/** An id of the endpoint's: a string or a number (taken as its digits), or null when absent. */
export function idOf(v: unknown, what: string): string | null {
  return typeof v === 'number' && Number.isFinite(v) ? String(v) : textOf(v, what);
}

/**
 * A message's content: a string, or a list of parts (as Mistral's reasoning models send) whose text parts
 * are joined; null when absent; anything else is an LlmError.
 */
export function contentOf(v: unknown, what: string): string | null {
  if (!Array.isArray(v)) return textOf(v, what);
  return v
    .map((part: unknown) => {
      const p = (part ?? {}) as { type?: unknown; text?: unknown };
      return p.type === 'text' ? (textOf(p.text, `${what} part`) ?? '') : '';
    })
    .join('');
}

/** A call's arguments: a string as sent, an object as its JSON (some servers send one), '' when absent. */
export function argumentsOf(v: unknown): string {
  if (v === undefined || v === null) return '';
  if (typeof v === 'string') return v;
  try {
    return JSON.stringify(v);
  } catch {
    throw new LlmError("the LLM endpoint's tool call arguments: too deeply nested to write as JSON");
  }
}

/** Token ids of the endpoint's: a list of numbers, or null when absent; anything else is an LlmError. */
export function tokenIdsOf(v: unknown, what: string): number[] | null {
  if (v === undefined || v === null) return null;
  if (!Array.isArray(v) || v.length > MAX_TOKEN_IDS || !v.every((n) => typeof n === 'number'))
    throw new LlmError(`the LLM endpoint's ${what}: not a list of at most ${MAX_TOKEN_IDS} numbers`);
  return v as number[];
}

/** Adds token ids in place (a copy per chunk would cost the square of their number), within MAX_TOKEN_IDS. */
export function appendTokenIds(to: number[], ids: number[]): number[] {
  if (to.length + ids.length > MAX_TOKEN_IDS)
    throw new LlmError(`the LLM endpoint streamed more than ${MAX_TOKEN_IDS} token ids`);
  for (const id of ids) to.push(id);
  return to;
}

/** Some endpoints leave out call ids; the events and the next request need one. */
export const callId = (i: number) => `call_${randomUUID().replace(/-/g, '').slice(0, 20)}_${i}`;

/**
 * A message of the endpoint's without its key: a proxy that echoes the request (its Authorization header
 * included) into an error must not put the key into an event or a log.
 */
export function withoutKey(message: string, apiKey: string | null | undefined): string {
  const masked = apiKey ? message.split(apiKey).join('<redacted>') : message;
  return masked.replace(/(Bearer\s+)[^\s"',;)\]}]+/gi, '$1<redacted>');
}
