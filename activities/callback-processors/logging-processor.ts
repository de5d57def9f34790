/** LoggingCallbackProcessor: each event's kind and id to the worker's log. */
import type { CallbackProcessorImpl } from './processor';

export const loggingProcessor: CallbackProcessorImpl<'LoggingCallbackProcessor'> = {
  kind: 'LoggingCallbackProcessor',
  async process({ conversationId, events, log }) {
    for (const e of events) log.info('conversation event', { conversation_id: conversationId, kind: e.kind, id: e.id });
    return events.length > 0 ? [`logged ${events.length}`] : [];
  },
};
