/**
 * A client for any OpenAI-compatible chat-completions endpoint, with tool calling, optional streaming
 * (server-sent events) and cancellation. It returns the assistant message plus what the events need:
 * the response id, token ids when the endpoint gives them, the token usage (and cost) it reports, and
 * the raw exchange for completion logs. The endpoint is a peer the sandbox does not control: the whole
 * call, answer read included, is within the settings' timeout, and what it reads is bounded and checked.
 */
import { deadline } from '../../deadline';
import { readBodyAtMost } from '../../read-body';
import {
  argumentsOf,
  callId,
  contentOf,
  idOf,
  jsonObject,
  LlmError,
  readUsage,
  textOf,
  tokenIdsOf,
  withoutKey,
  type ChatMessage,
  type CompleteOptions,
  type Completion,
  type LlmSettings,
  type ToolCall,
} from './llm-protocol';
import { readStreamedAnswer } from './llm-stream';

/**
 * The most a whole (not streamed) answer may hold: its JSON is parsed at once (up to about 20 times its
 * size in memory for small objects), and a long answer with its prompt's million token ids is about 8 MiB.
 */
export const LLM_ANSWER_MAX_BYTES = 16 * 1024 * 1024;
/**
 * The most a streamed answer may hold on the wire: above what a model's output limit makes (128k tokens,
 * each chunk with its token ids and a long model name, is about 30 MiB); each event is parsed on its own.
 */
export const LLM_STREAM_MAX_BYTES = 64 * 1024 * 1024;
/**
 * The longest a call may take in all. `timeout_s` bounds each wait: for the answer to start, then for the
 * rest of a whole answer, or between two pieces of a stream (as LiteLLM's read timeout does for a stream);
 * this bounds the sum, so a stream that trickles on ends too.
 */
export const LLM_CALL_MAX_MS = 2 * 60 * 60 * 1000;
/** How much of a failing answer's body is read for its message (of which 500 characters are kept). */
const ERROR_BODY_MAX_BYTES = 64 * 1024;

const endpoint = (baseUrl: string) => `${baseUrl.replace(/\/+$/, '')}/chat/completions`;

export async function complete(
  llm: LlmSettings,
  messages: ChatMessage[],
  tools: object[],
  opts: CompleteOptions = {},
): Promise<Completion> {
  const stream = Boolean(llm.stream);
  const request = chatRequest(llm, messages, tools, stream);
  const total = deadline(LLM_CALL_MAX_MS, opts.signal);
  const idle = deadline((llm.timeout_s ?? 600) * 1000, total.signal);
  try {
    const res = await postChat(llm, request, idle.signal);
    idle.restart(); // the answer has started
    if (!stream) return await readAnswer(res, request, llm.api_key, opts);
    const reading = { maxBytes: LLM_STREAM_MAX_BYTES, apiKey: llm.api_key, onPiece: idle.restart };
    return await readStreamedAnswer(res, request, opts, reading);
  } catch (e) {
    if (e instanceof LlmError) {
      e.message = withoutKey(e.message, llm.api_key);
      if (e.stack) e.stack = withoutKey(e.stack, llm.api_key);
    }
    throw e;
  } finally {
    idle.clear();
    total.clear();
  }
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

/** Sends the request; an answer other than 2xx is an LlmError with the start of its body. */
async function postChat(llm: LlmSettings, request: object, signal: AbortSignal): Promise<Response> {
  const res = await fetch(endpoint(llm.base_url), {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', ...(llm.api_key ? { Authorization: `Bearer ${llm.api_key}` } : {}) },
    body: JSON.stringify(request),
    signal,
  });
  if (!res.ok) {
    const text = await readBodyAtMost(res, ERROR_BODY_MAX_BYTES).catch(() => null);
    const detail =
      text === null
        ? `(a body over ${ERROR_BODY_MAX_BYTES} bytes or cut off, not read)`
        : withoutKey(text, llm.api_key).slice(0, 500); // masked before it is cut, so no part of the key is left
    throw new LlmError(`the LLM endpoint answered ${res.status}: ${detail}`, res.status);
  }
  return res;
}

/** The completion from a whole (not streamed) JSON answer. */
async function readAnswer(
  res: Response,
  request: unknown,
  apiKey: string | null | undefined,
  opts: CompleteOptions,
): Promise<Completion> {
  const text = await readBodyAtMost(res, LLM_ANSWER_MAX_BYTES);
  if (text === null) throw new LlmError(`the LLM endpoint's answer is over ${LLM_ANSWER_MAX_BYTES} bytes`);
  const body = jsonObject(text, 'answer', apiKey);
  const choice = Array.isArray(body.choices) ? (body.choices[0] as Record<string, unknown> | undefined) : undefined;
  const message = choice?.message;
  if (!message || typeof message !== 'object') throw new LlmError('the LLM endpoint answered without a message');
  const m = message as Record<string, unknown>;
  return {
    id: idOf(body.id, 'answer id') ?? `resp-${Date.now()}`,
    content: contentOf(m.content, 'content'),
    reasoning_content: textOf(m.reasoning_content, 'reasoning content'),
    tool_calls: toolCallsOf(m.tool_calls),
    prompt_token_ids: tokenIdsOf(body.prompt_token_ids, 'prompt token ids'),
    response_token_ids: tokenIdsOf(choice!.token_ids, 'token ids'),
    usage: readUsage(body.usage),
    request,
    response: opts.keepExchange ? body : null,
  };
}

/** The calls of a whole answer: each a function with a name; arguments sent as an object are taken as its JSON. */
function toolCallsOf(raw: unknown): ToolCall[] {
  if (raw === undefined || raw === null) return [];
  if (!Array.isArray(raw)) throw new LlmError("the LLM endpoint's tool calls: not a list");
  return raw.map((c: unknown, i) => {
    const call = (c ?? {}) as { id?: unknown; function?: { name?: unknown; arguments?: unknown } };
    const name = textOf(call.function?.name, 'tool call name');
    if (!name) throw new LlmError('the LLM endpoint answered a tool call without a function name');
    return {
      id: idOf(call.id, 'tool call id') || callId(i),
      type: 'function',
      function: { name, arguments: argumentsOf(call.function!.arguments) },
    };
  });
}
