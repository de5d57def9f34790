/**
 * ChatV1CallbackProcessor: when the agent finishes, its summary as a reply in the chat thread the
 * conversation came from (`chat_view_data`: `channel_id` and `thread_ts`), through the chat service's Web
 * API (CHAT_API_URL, `chat.postMessage`), with the bot token the user stored as the secret
 * CHAT_BOT_TOKEN. The reply carries message metadata naming its conversation; a retry reads the thread
 * (`conversations.replies`) for it first. The service answers 200 with `ok: false` for its refusals.
 */
import { ApplicationFailure } from '@temporalio/activity';
import type { HostAnswer } from './host-call';
import type { CallbackProcessorDeps, CallbackProcessorImpl, CallbackRun } from './processor';
import {
  postSummaryOnce,
  restTarget,
  targetMissing,
  storedSecrets,
  viewField,
  type SummaryTarget,
} from './summary-post';

export const CHAT_TOKEN_SECRET = 'CHAT_BOT_TOKEN';
/** The metadata event type of a summary reply. */
export const CHAT_EVENT_TYPE = 'agent_control_summary';
/** The service's errors that pass (it was busy); any other `ok: false` is a refusal. */
const PASSING = new Set(['ratelimited', 'internal_error', 'fatal_error', 'service_unavailable', 'request_timeout']);

/** A 200 that says `ok: false`: the failure (retried only when it passes). */
export function chatFailure(a: HostAnswer, what: string): Error | null {
  const body = a.json() as { ok?: unknown; error?: unknown } | null;
  if (body?.ok === true) return null;
  const error = typeof body?.error === 'string' ? body.error.slice(0, 100) : 'an answer without ok';
  return PASSING.has(error)
    ? new Error(`the chat service failed ${what}: ${error}`)
    : ApplicationFailure.nonRetryable(`the chat service refused ${what}: ${error}`);
}

async function chatTarget(run: CallbackRun, deps: CallbackProcessorDeps): Promise<SummaryTarget> {
  const view = (run.processor.chat_view_data as Record<string, unknown> | undefined) ?? {};
  const channel = viewField(view, 'channel_id', 'channel');
  const thread = viewField(view, 'thread_ts', 'message_ts');
  if (!channel || !/^[A-Z0-9]+$/i.test(channel) || !thread || !/^\d+(\.\d+)?$/.test(thread)) {
    throw targetMissing('chat_view_data names no thread to reply in: channel_id and thread_ts are needed');
  }
  const token = (await storedSecrets(run.app, deps))[CHAT_TOKEN_SECRET];
  if (!token)
    throw targetMissing(`no chat bot token: store it as the secret ${CHAT_TOKEN_SECRET} (POST /api/v1/secrets)`);
  const api = deps.hosts.chatApiUrl;
  const name = `thread ${thread} of channel ${channel}`;
  const oldest = (run.app.created_at.getTime() / 1000).toFixed(6);
  const replies = new URLSearchParams({ channel, ts: thread, oldest, include_all_metadata: 'true', limit: '200' });
  return restTarget({
    host: 'the chat service',
    name,
    headers: { Authorization: `Bearer ${token}` },
    // The thread's replies since the conversation began, a page at a time (the service pages by cursor).
    listUrl: `${api}/conversations.replies?${replies}`,
    nextPage: (a) => {
      const cursor = (a.json() as { response_metadata?: { next_cursor?: unknown } } | null)?.response_metadata
        ?.next_cursor;
      return typeof cursor === 'string' && cursor
        ? `${api}/conversations.replies?${new URLSearchParams({ ...Object.fromEntries(replies), cursor })}`
        : null;
    },
    signal: run.signal,
    postUrl: `${api}/chat.postMessage`,
    postBody: (text, conversationId) => ({
      channel,
      thread_ts: thread,
      text,
      metadata: { event_type: CHAT_EVENT_TYPE, event_payload: { conversation_id: conversationId } },
    }),
    holds: (listed, conversationId) => {
      const messages = (listed as { messages?: unknown } | null)?.messages;
      return (
        Array.isArray(messages) &&
        messages.some(
          (m: { metadata?: { event_type?: unknown; event_payload?: { conversation_id?: unknown } } }) =>
            m?.metadata?.event_type === CHAT_EVENT_TYPE && m.metadata.event_payload?.conversation_id === conversationId,
        )
      );
    },
    failureIn: (a) => chatFailure(a, `the reply in ${name}`),
    secrets: [token],
  });
}

export const chatV1Processor: CallbackProcessorImpl<'ChatV1CallbackProcessor'> = {
  kind: 'ChatV1CallbackProcessor',
  process: (run, deps) => postSummaryOnce(run, deps, () => chatTarget(run, deps)),
};
