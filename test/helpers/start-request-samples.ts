/**
 * For the unit tests of the app-conversation schemas: a start request with every field given, the UUID it
 * names, and the validation detail a refused parse answers (what a 422 would say).
 */
import type { z } from 'zod';
import { toValidationDetail } from '../../src/schemas/validation-detail';

export const UUID = '7f3e2a10-4b5c-4d6e-8f90-a1b2c3d4e5f6';

/** The validation detail of `input` refused by `schema` (throws when it parses). */
export const detail = (schema: z.ZodType, input: unknown, part: 'body' | 'query' = 'body') => {
  const r = schema.safeParse(input);
  if (r.success) throw new Error('expected a failure');
  return toValidationDetail(r.error.issues, input, part);
};

/** A start request with every field given (the conversation_id in upper case). */
export const FULL = {
  sandbox_id: 'sb-1',
  conversation_id: UUID.toUpperCase(),
  initial_message: { content: [{ text: 'Fix the failing test' }] },
  system_message_suffix: 'Be brief.',
  processors: [{ kind: 'GitHostAV1CallbackProcessor' }, { kind: 'SetTitleCallbackProcessor' }],
  llm_model: 'model-x',
  agent_profile_id: 'profile-1',
  selected_repository: 'owner/repo',
  selected_branch: 'main',
  git_provider: 'git_host_b',
  suggested_task: { task_type: 'MERGE_CONFLICTS', repo: 'owner/repo', issue_number: 12, title: 'Resolve conflicts' },
  title: 'A title',
  trigger: 'gui',
  pr_number: [12],
  parent_conversation_id: UUID,
  agent_type: 'plan',
  public: false,
  observability_metadata: { team: 'core', attempt: 2, urgent: true, labels: ['a', 'b'] },
  observability_tags: ['nightly'],
  observability_span_name: 'start/api v1',
  plugins: [{ source: 'github:org/plugin', ref: 'v1' }],
  secrets: { GITHUB_TOKEN: 'ghp_secret', _other: 'x' },
};
