/**
 * The organization PATCH takes today's body and the published OrgUpdate body (agent_settings_diff,
 * conversation_settings_diff, llm_api_key; null for "unchanged"): this turns either into today's patch.
 */
import { InvalidInput } from '../errors';
import type { ValidationDetail } from '../schemas/validation-detail';
import { mergePatch } from './organizations-service';

/** Each published diff beside the field it changes: a body sends one of the two (null counts as not sent). */
export const PUBLISHED_DIFF_PAIRS = [
  ['agent_settings_diff', 'agent_settings'],
  ['conversation_settings_diff', 'conversation_settings'],
] as const;

export function fromPublishedPatch(body: Record<string, unknown>): Record<string, unknown> {
  const patch: Record<string, unknown> = Object.fromEntries(
    Object.entries(body).filter(([, v]) => v !== null && v !== undefined),
  );
  const problems: ValidationDetail[] = [];
  for (const [diff, field] of PUBLISHED_DIFF_PAIRS) {
    if (patch[diff] === undefined) continue;
    if (patch[field] !== undefined) {
      problems.push({
        loc: ['body', diff],
        msg: `Send ${field} or ${diff}, not both`,
        type: 'value_error',
        input: null,
      });
      continue;
    }
    patch[field] = patch[diff];
    delete patch[diff];
  }
  if (problems.length > 0) throw new InvalidInput(problems);
  if (typeof patch.llm_api_key === 'string') {
    patch.agent_settings = mergePatch(patch.agent_settings ?? {}, { llm: { api_key: patch.llm_api_key } });
    delete patch.llm_api_key;
  }
  return patch;
}
