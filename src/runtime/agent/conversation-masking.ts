/**
 * Secret values never reach the LLM or the event log: whatever a tool or a hook reports passes through
 * here before it becomes an event. Masking works string by string, so a secret cut across two strings
 * (two chunks of output, two array items) is not recognized; tools report their output as one string.
 */
import { AGENT_SECRET_MASK } from '../../schemas/secret-mask';
import type { CreateConversation } from './conversation-schemas';

/** Shorter values would mask ordinary words and numbers all over the output, and hide nothing worth it. */
const MIN_SECRET_LENGTH = 4;

/** The values to hide: the conversation's secrets and its LLM key (readable in the sandbox, so it may show up in output). */
export function secretValues(settings: Pick<CreateConversation, 'secrets' | 'agent'>): string[] {
  return [...Object.values(settings.secrets), settings.agent.llm.api_key ?? ''].filter(
    (s) => s.length >= MIN_SECRET_LENGTH,
  );
}

/** A copy of `value` with every occurrence of a secret in any of its strings replaced by the mask (keys are left alone). */
export function maskSecrets<T>(value: T, secrets: readonly string[]): T {
  if (secrets.length === 0) return value;
  const walk = (v: unknown): unknown => {
    // Secrets are masked in their order, so one that contains another is masked only if listed first.
    if (typeof v === 'string') return secrets.reduce((s, secret) => s.split(secret).join(AGENT_SECRET_MASK), v);
    if (Array.isArray(v)) return v.map(walk);
    if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, walk(x)]));
    return v;
  };
  return walk(value) as T;
}
