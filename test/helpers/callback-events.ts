/** Parsed events for the unit tests of the callback processors: a message, a finish action, a state update. */
import { EventSchema, type Event, type EventKind } from '../../src/schemas/events';
import { sample } from './event-samples';

export const event = (kind: EventKind, extra: Record<string, unknown> = {}): Event =>
  EventSchema.parse(sample(kind, extra));
export const message = (source: 'user' | 'agent', ...texts: string[]) =>
  event('MessageEvent', {
    source,
    llm_message: {
      role: source === 'user' ? 'user' : 'assistant',
      content: texts.map((text) => ({ type: 'text', text })),
    },
  });
export const finish = (msg: string) => event('ActionEvent', { action: { kind: 'FinishAction', message: msg } });
export const state = (key: string, value: unknown) => event('ConversationStateUpdateEvent', { key, value });
