/**
 * The shapes the conversation's modules build events from. An event is written as a partial (kind and
 * payload); the conversation adds id, timestamp and parent when it records it, so the pure modules
 * (replay, tool calls) can say what to record without recording it.
 */
import type { Event } from '../../schemas/events';

export type ActionEvent = Extract<Event, { kind: 'ActionEvent' }>;

/** An event before it is recorded: what the conversation's emit takes. */
export type NewEvent = { kind: Event['kind']; source?: Event['source'] } & Record<string, unknown>;

/** A TextContent: the content block of messages, thoughts and observations. */
export const text = (t: string) => ({ type: 'text' as const, text: t, cache_prompt: false });

/** An action answered without running: refused by the user or a hook, or cut short by an interrupt. */
export const rejectionOf = (a: ActionEvent, reason: string, source: 'user' | 'hook'): NewEvent => ({
  kind: 'UserRejectObservation',
  tool_name: a.tool_name,
  tool_call_id: a.tool_call_id,
  rejection_reason: reason,
  rejection_source: source,
  action_id: a.id,
});

/** An action answered by an error instead of an observation: a call left unanswered would make every later LLM request invalid. */
export const errorOf = (a: ActionEvent, error: string): NewEvent => ({
  kind: 'AgentErrorEvent',
  tool_name: a.tool_name,
  tool_call_id: a.tool_call_id,
  error,
});
