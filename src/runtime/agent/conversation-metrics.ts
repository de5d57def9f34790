/**
 * A conversation's token and cost metrics, shaped like the published MetricsSnapshot: the usage of every
 * completion (the agent's steps and the condenser's summaries) added up. After each completion the
 * conversation records the snapshot as a ConversationStateUpdateEvent with key `metrics`, so a restarted
 * runtime reads the totals back from its events, and the control plane keeps the last one it saw.
 */
import { MetricsSnapshotSchema, type MetricsSnapshot } from '../../schemas/app-conversations';
import type { Event } from '../../schemas/events';
import type { Usage } from './llm-protocol';

export { MetricsSnapshotSchema, type MetricsSnapshot };

/** The key of the ConversationStateUpdateEvents that carry the metrics. */
export const METRICS_STATE_KEY = 'metrics';

export function emptyMetrics(model: string): MetricsSnapshot {
  return {
    model_name: model,
    accumulated_cost: 0,
    max_budget_per_task: null,
    accumulated_token_usage: {
      model,
      prompt_tokens: 0,
      completion_tokens: 0,
      cache_read_tokens: 0,
      cache_write_tokens: 0,
      reasoning_tokens: 0,
      context_window: 0,
      per_turn_token: 0,
      response_id: '',
    },
  };
}

const sum = (a: number, b: number) => Math.min(a + b, Number.MAX_SAFE_INTEGER);

/**
 * The metrics after one more completion. Tokens and cost add up; per_turn_token is this completion's
 * prompt plus completion tokens and response_id its id. context_window stays 0: an OpenAI-compatible
 * endpoint does not say how large its model's window is. A completion without usage adds nothing.
 */
export function addCompletion(
  m: MetricsSnapshot,
  model: string,
  responseId: string,
  usage: Usage | null | undefined,
): MetricsSnapshot {
  const t = m.accumulated_token_usage ?? emptyMetrics(model).accumulated_token_usage!;
  const u = usage ?? {
    prompt_tokens: 0,
    completion_tokens: 0,
    cache_read_tokens: 0,
    cache_write_tokens: 0,
    reasoning_tokens: 0,
    cost: null,
  };
  return {
    model_name: model,
    accumulated_cost: m.accumulated_cost + (u.cost ?? 0),
    max_budget_per_task: null,
    accumulated_token_usage: {
      model,
      prompt_tokens: sum(t.prompt_tokens, u.prompt_tokens),
      completion_tokens: sum(t.completion_tokens, u.completion_tokens),
      cache_read_tokens: sum(t.cache_read_tokens, u.cache_read_tokens),
      cache_write_tokens: sum(t.cache_write_tokens, u.cache_write_tokens),
      reasoning_tokens: sum(t.reasoning_tokens, u.reasoning_tokens),
      context_window: t.context_window,
      per_turn_token: sum(u.prompt_tokens, u.completion_tokens),
      response_id: responseId,
    },
  };
}

/** The metrics the events last recorded (a malformed value is skipped); null when none. */
export function lastMetrics(events: readonly Event[]): MetricsSnapshot | null {
  for (let i = events.length - 1; i >= 0; i--) {
    const e = events[i]!;
    if (e.kind !== 'ConversationStateUpdateEvent' || e.key !== METRICS_STATE_KEY) continue;
    const r = MetricsSnapshotSchema.safeParse(e.value);
    if (r.success) return r.data;
  }
  return null;
}
