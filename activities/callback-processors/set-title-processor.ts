/** SetTitleCallbackProcessor: a title from the first user message, when the conversation has none. */
import type { Event } from '../../src/schemas/events';
import { textOf, type CallbackProcessorImpl } from './processor';

const TITLE_CHARS = 80;

/** The first line of the first user message, without a leading `[tag]`, cut to TITLE_CHARS; null when there is none. */
export function titleFrom(events: readonly Event[]): string | null {
  const first = events.find(
    (e): e is Extract<Event, { kind: 'MessageEvent' }> => e.kind === 'MessageEvent' && e.source === 'user',
  );
  const text = first
    ? textOf(first.llm_message.content)
        .trim()
        .split('\n')[0]!
        .replace(/^\[[^\]]*\]\s*/, '')
    : '';
  if (!text) return null;
  return text.length > TITLE_CHARS ? `${text.slice(0, TITLE_CHARS - 1)}…` : text;
}

export const setTitleProcessor: CallbackProcessorImpl<'SetTitleCallbackProcessor'> = {
  kind: 'SetTitleCallbackProcessor',
  async process({ conversationId, app, events }, deps) {
    if (app.title) return [];
    const title = titleFrom(events);
    if (!title) return [];
    await deps.appConversations.setTitle(conversationId, title);
    return ['title-set'];
  },
};
