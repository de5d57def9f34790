/**
 * Usage figures as the OpenHands agent server reports them: a ConversationStateUpdateEvent with key
 * `stats`, `{usage_to_metrics: {<usage id>: Metrics}}`, one entry per LLM it used (the agent's, a
 * condenser's). The conversation's figures (MetricsSnapshot, what the built-in runtime reports under
 * `metrics`) are their sum: cost and tokens added up, the model and budget the agent's (or the first's).
 */
import { MetricsSnapshotSchema, TokenUsageSchema, type MetricsSnapshot } from '../schemas/app-conversations';

const TOKEN_COUNTS = [
  'prompt_tokens',
  'completion_tokens',
  'cache_read_tokens',
  'cache_write_tokens',
  'reasoning_tokens',
] as const;

/** The conversation's figures from a `stats` value; null when it holds none that are valid. */
export function metricsFromStats(stats: unknown): MetricsSnapshot | null {
  const usage = (stats as { usage_to_metrics?: unknown } | null)?.usage_to_metrics;
  if (typeof usage !== 'object' || usage === null || Array.isArray(usage)) return null;
  const entries = Object.entries(usage as Record<string, unknown>).flatMap(([id, m]) => {
    const parsed = MetricsSnapshotSchema.safeParse(m);
    return parsed.success ? [[id, parsed.data] as const] : [];
  });
  if (entries.length === 0) return null;
  const main = (entries.find(([id]) => id === 'agent') ?? entries[0]!)[1];
  const usages = entries.flatMap(([, m]) => (m.accumulated_token_usage ? [m.accumulated_token_usage] : []));
  // Sums of what a runtime sent are bounded, not trusted: past the largest safe integer (or a finite
  // cost) they stay there rather than fail the batch after it was stored.
  const tokens =
    usages.length === 0
      ? null
      : (TokenUsageSchema.safeParse({
          ...(main.accumulated_token_usage ?? usages[0]!),
          ...Object.fromEntries(
            TOKEN_COUNTS.map((k) => [
              k,
              Math.min(
                usages.reduce((sum, u) => sum + u[k], 0),
                Number.MAX_SAFE_INTEGER,
              ),
            ]),
          ),
        }).data ?? null);
  const cost = entries.reduce((sum, [, m]) => sum + m.accumulated_cost, 0);
  return {
    model_name: main.model_name,
    accumulated_cost: Number.isFinite(cost) ? cost : Number.MAX_VALUE,
    max_budget_per_task: main.max_budget_per_task,
    accumulated_token_usage: tokens,
  };
}
