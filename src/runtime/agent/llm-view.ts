/**
 * What the LLM sees of a conversation: the events that carry messages (system prompt, user and agent
 * messages, actions and what answered them), minus those a Condensation forgot, with the latest summary
 * inserted where the condensation put it; and those events as chat-completions messages.
 */
import type { Event } from '../../schemas/events';
import type { ChatMessage, ContentPart, ToolCall } from './llm-protocol';

export type ViewEvent = Extract<
  Event,
  {
    kind:
      | 'SystemPromptEvent'
      | 'MessageEvent'
      | 'ActionEvent'
      | 'ObservationEvent'
      | 'AgentErrorEvent'
      | 'UserRejectObservation';
  }
>;
export type ViewItem = ViewEvent | { kind: 'summary'; summary: string };

const VIEW_KINDS = new Set([
  'SystemPromptEvent',
  'MessageEvent',
  'ActionEvent',
  'ObservationEvent',
  'AgentErrorEvent',
  'UserRejectObservation',
]);

export function buildView(events: readonly Event[]): ViewItem[] {
  const forgotten = new Set<string>();
  let summary: { text: string; offset: number } | null = null;
  for (const e of events) {
    if (e.kind !== 'Condensation') continue;
    e.forgotten_event_ids.forEach((id) => forgotten.add(id));
    summary = e.summary !== null && e.summary_offset !== null ? { text: e.summary, offset: e.summary_offset } : null;
  }
  const items: ViewItem[] = events.filter((e): e is ViewEvent => VIEW_KINDS.has(e.kind) && !forgotten.has(e.id));
  if (summary) items.splice(Math.min(summary.offset, items.length), 0, { kind: 'summary', summary: summary.text });
  return items;
}

const texts = (content: unknown): string =>
  Array.isArray(content)
    ? content
        .flatMap((c) =>
          typeof c === 'object' && c !== null && 'text' in c ? [String((c as { text: unknown }).text)] : [],
        )
        .join('\n')
    : typeof content === 'string'
      ? content
      : '';

/** The URLs of a message's ImageContent blocks, in order. */
const imageUrls = (content: unknown): string[] =>
  Array.isArray(content)
    ? content.flatMap((c) => {
        const block = c as { type?: unknown; image_urls?: unknown };
        return block?.type === 'image' && Array.isArray(block.image_urls)
          ? block.image_urls.filter((u): u is string => typeof u === 'string')
          : [];
      })
    : [];

/** What marks a message sent with the `tool` role: it answers no tool call, so it goes as a user turn. */
export const TOOL_OUTPUT_PREFIX = '[Tool output]\n';

const SENT_ROLES = new Set(['user', 'system', 'assistant', 'tool']);

/**
 * The chat messages of a MessageEvent. A user message with images has OpenAI content parts (its text,
 * then one image_url part per image). System and assistant messages keep their role; the protocol allows
 * them text only, so their images follow in a user message of their own. A `tool` message has no call to
 * answer (SendMessageRequest has no tool_call_id): it goes as a user message marked as tool output.
 */
function messageChats(role: string, body: string, images: readonly string[]): ChatMessage[] {
  const parts = (lead: string): string | ContentPart[] =>
    images.length === 0
      ? lead
      : [
          ...(lead ? [{ type: 'text' as const, text: lead }] : []),
          ...images.map((url) => ({ type: 'image_url' as const, image_url: { url } })),
        ];
  switch (role) {
    case 'system':
    case 'assistant': {
      const own = { role, content: body } as ChatMessage;
      return images.length === 0
        ? [own]
        : [own, { role: 'user', content: parts(`The images sent with the ${role} message above:`) }];
    }
    case 'tool':
      return [{ role: 'user', content: parts(TOOL_OUTPUT_PREFIX + body) }];
    default:
      return [{ role: 'user', content: parts(body) }];
  }
}

/** The text an observation shows the LLM. */
export const observationText = (observation: Record<string, unknown>): string => texts(observation.content);

export const summaryMessage = (summary: string): ChatMessage => ({
  role: 'user',
  content: `Summary of the earlier part of this conversation:\n${summary}`,
});

/**
 * The chat messages of a view. An assistant message with tool calls is followed by the answers to all
 * its calls; a user message that arrived while calls were open (a message sent during a confirmation
 * wait) is placed after them, so the sequence is always one the chat-completions protocol accepts.
 */
export function toMessages(items: readonly ViewItem[]): ChatMessage[] {
  const out: ChatMessage[] = [];
  const open = new Set<string>();
  const deferred: ChatMessage[] = [];
  let group: { responseId: string; message: Extract<ChatMessage, { role: 'assistant' }> } | null = null;
  const settle = () => {
    if (open.size === 0) out.push(...deferred.splice(0));
  };
  const answer = (callId: string, content: string) => {
    if (!open.delete(callId)) return; // its call was forgotten by a condensation
    out.push({ role: 'tool', tool_call_id: callId, content });
    settle();
  };
  for (const item of items) {
    if (item.kind !== 'ActionEvent') group = null;
    switch (item.kind) {
      case 'summary':
        out.push(summaryMessage(item.summary));
        break;
      case 'SystemPromptEvent':
        out.push({
          role: 'system',
          content: [item.system_prompt.text, item.dynamic_context?.text].filter(Boolean).join('\n\n'),
        });
        break;
      case 'MessageEvent': {
        const text = [texts(item.llm_message.content), ...item.extended_content.map((c) => c.text)]
          .filter(Boolean)
          .join('\n\n');
        const sent = String(item.llm_message.role);
        const role = item.source === 'agent' ? 'assistant' : SENT_ROLES.has(sent) ? sent : 'user';
        const messages = messageChats(role, text, item.source === 'agent' ? [] : imageUrls(item.llm_message.content));
        if (open.size > 0) deferred.push(...messages);
        else out.push(...messages);
        break;
      }
      case 'ActionEvent': {
        const call = item.tool_call as { id?: string; name?: string; arguments?: string };
        const toolCall: ToolCall = {
          id: item.tool_call_id,
          type: 'function',
          function: { name: call.name ?? item.tool_name, arguments: call.arguments ?? '{}' },
        };
        if (!group || group.responseId !== item.llm_response_id) {
          const thought = item.thought.map((t) => t.text).join('\n');
          group = {
            responseId: item.llm_response_id,
            message: { role: 'assistant', content: thought || null, tool_calls: [] },
          };
          out.push(group.message);
        }
        group.message.tool_calls!.push(toolCall);
        open.add(item.tool_call_id);
        break;
      }
      case 'ObservationEvent':
        answer(item.tool_call_id, observationText(item.observation));
        break;
      case 'AgentErrorEvent':
        answer(item.tool_call_id, `Error: ${item.error}`);
        break;
      case 'UserRejectObservation':
        answer(item.tool_call_id, `The action was not executed: ${item.rejection_reason}`);
        break;
    }
  }
  out.push(...deferred);
  return out;
}
