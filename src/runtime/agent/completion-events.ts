/**
 * What an LLM completion records besides its answer: its token ids when the endpoint gives them (for
 * training and analysis), and the whole exchange when the settings ask for completion logs.
 */
import type { NewEvent } from './conversation-events';
import type { CreateConversation } from './conversation-schemas';
import { MAX_EVENT_BYTES } from './event-size';
import type { Completion } from './llm-protocol';

export function completionEvents(llm: CreateConversation['agent']['llm'], completion: Completion): NewEvent[] {
  const events: NewEvent[] = [];
  if (completion.prompt_token_ids && completion.response_token_ids) {
    events.push({
      kind: 'TokenEvent',
      source: 'agent',
      prompt_token_ids: completion.prompt_token_ids,
      response_token_ids: completion.response_token_ids,
    });
  }
  if (llm.log_completions) {
    events.push({
      kind: 'LLMCompletionLogEvent',
      // The model name may hold slashes and colons (provider/model:tag), and the id is the endpoint's: the
      // file name must stay one name.
      filename: `${fileNamePart(llm.model)}-${Date.now()}-${fileNamePart(completion.id)}.json`,
      log_data: completionLog(completion),
      model_name: llm.model,
      usage_id: llm.usage_id,
    });
  }
  return events;
}

/**
 * The log_data of an LLMCompletionLogEvent: the exchange as JSON. The request holds the whole history, so
 * when it would not fit an event its messages are left out (the log stays valid JSON).
 */
export function completionLog(c: Completion): string {
  const timestamp = Date.now() / 1000;
  let whole: string;
  try {
    whole = JSON.stringify({ request: c.request, response: c.response, timestamp });
  } catch {
    // An answer nested deeper than the stack can write (it could be parsed): the log says so instead.
    return JSON.stringify({ response_left_out: 'nested too deeply to write as JSON', timestamp });
  }
  if (whole.length < MAX_EVENT_BYTES / 2) return whole;
  const { messages, ...request } = c.request as { messages?: unknown[] };
  return JSON.stringify({
    request: { ...request, messages_left_out: messages?.length ?? 0 },
    response: c.response,
    timestamp,
  });
}

/** A part of a file name: what is not a letter, digit, dot, dash or underscore becomes `__`; 100 characters at most. */
const fileNamePart = (s: string) => s.replace(/[^A-Za-z0-9._-]+/g, '__').slice(0, 100);
