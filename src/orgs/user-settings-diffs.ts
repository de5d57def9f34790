/**
 * A user's sparse diffs over their organization's agent and conversation settings: the effective settings
 * they make, and how POST /api/v1/settings merges an update into them, checking what it would store.
 */
import { z } from 'zod';
import type { SecretBox } from '../auth/secret-box';
import {
  AgentSettingsSchema,
  ConversationSettingsSchema,
  type AgentSettings,
  type ConversationSettings,
  type Organization,
} from '../schemas/organizations';
import { SECRET_LIMITS, type SettingsUpdate } from '../schemas/settings';
import { toValidationDetail, type ValidationDetail } from '../schemas/validation-detail';
import type { UserSettings } from '../store/user-settings-store';
import { mergePatch } from './organizations-service';
import { dropClearedSecrets, sealDiffSecrets } from './user-diff-secrets';

type Json = Record<string, unknown>;

/** The two diffs a user stores, by their field (in the store and in POST /api/v1/settings' body). */
type DiffField = 'agent_settings_diff' | 'conversation_settings_diff';

/** The user's effective agent and conversation settings (secrets sealed, as stored). */
export interface EffectiveSettings {
  agent: AgentSettings;
  conversation: ConversationSettings;
}

/**
 * The organization's agent settings with the user's diff merged over them, not yet validated. A diff
 * naming another agent_kind is a variant of its own (nothing of the organization's other variant carries over).
 */
function mergedAgentSettings(org: AgentSettings, diff: Json): unknown {
  const base = diff.agent_kind !== undefined && diff.agent_kind !== org.agent_kind ? {} : org;
  return mergePatch(base, diff);
}

/** The effective agent settings: the user's diff merged over the organization's (see mergedAgentSettings). */
export function applyAgentDiff(org: AgentSettings, diff: Json): z.ZodSafeParseResult<AgentSettings> {
  return AgentSettingsSchema.safeParse(mergedAgentSettings(org, diff));
}

export function applyConversationDiff(
  org: ConversationSettings,
  diff: Json,
): z.ZodSafeParseResult<ConversationSettings> {
  return ConversationSettingsSchema.safeParse(mergePatch(org, diff));
}

/** Effective agent and conversation settings, sealed; an organization that changed under a user's diff falls back to its own. */
export function effectiveSettings(org: Organization, s: UserSettings): EffectiveSettings {
  const agent = applyAgentDiff(org.agent_settings, s.agent_settings_diff);
  const conversation = applyConversationDiff(org.conversation_settings, s.conversation_settings_diff);
  return {
    agent: agent.success ? agent.data : org.agent_settings,
    conversation: conversation.success ? conversation.data : org.conversation_settings,
  };
}

/** Validation details of a diff, located under its own body field. */
function underField(field: DiffField, issues: readonly z.core.$ZodIssue[], merged: unknown): ValidationDetail[] {
  return toValidationDetail(issues, merged, 'body').map((d) => ({ ...d, loc: ['body', field, ...d.loc.slice(1)] }));
}

/** What an update changes of the agent diff: its agent_settings_diff with llm_api_key laid over it; undefined: neither. */
function agentPatchOf(update: SettingsUpdate): Json | undefined {
  const patch: Json | undefined = update.agent_settings_diff ?? undefined;
  if (update.llm_api_key === undefined || update.llm_api_key === null) return patch;
  return mergePatch(patch ?? {}, { llm: { api_key: update.llm_api_key } }) as Json;
}

/**
 * The user's next agent diff: the patch, its secrets sealed, merged into their stored diff (into none when
 * it names another agent_kind than their effective one), without the secrets cleared with "".
 */
function nextAgentDiff(org: Organization, stored: UserSettings, patch: Json, box: SecretBox): Json {
  const current = effectiveSettings(org, stored).agent;
  const kindChanges = patch.agent_kind !== undefined && patch.agent_kind !== current.agent_kind;
  const previous = kindChanges ? {} : stored.agent_settings_diff;
  return dropClearedSecrets(mergePatch(previous, sealDiffSecrets(patch, stored.agent_settings_diff, box)) as Json);
}

/**
 * Merges the update's diffs into the stored ones and sets each on `next` when the settings it makes over
 * the organization's are valid as a whole; returns the problems of those that are not, under their field.
 */
export function mergeUpdateDiffs(
  org: Organization,
  stored: UserSettings,
  update: SettingsUpdate,
  next: UserSettings,
  box: SecretBox,
): ValidationDetail[] {
  const problems: ValidationDetail[] = [];
  const keepIfValid = (field: DiffField, diff: Json, schema: z.ZodType, merged: unknown): void => {
    const checked = schema.safeParse(merged);
    if (checked.success) next[field] = diff;
    else problems.push(...underField(field, checked.error.issues, merged));
  };
  const agentPatch = agentPatchOf(update);
  if (agentPatch) {
    const diff = nextAgentDiff(org, stored, agentPatch, box);
    keepIfValid('agent_settings_diff', diff, AgentSettingsSchema, mergedAgentSettings(org.agent_settings, diff));
  }
  if (update.conversation_settings_diff) {
    const diff = mergePatch(stored.conversation_settings_diff, update.conversation_settings_diff) as Json;
    keepIfValid(
      'conversation_settings_diff',
      diff,
      ConversationSettingsSchema,
      mergePatch(org.conversation_settings, diff),
    );
  }
  return problems;
}

/** The diffs `next` would store past SECRET_LIMITS.diffBytes, one problem each. */
export function oversizedDiffs(next: UserSettings): ValidationDetail[] {
  const problems: ValidationDetail[] = [];
  for (const field of ['agent_settings_diff', 'conversation_settings_diff'] as const) {
    const bytes = Buffer.byteLength(JSON.stringify(next[field]), 'utf8');
    if (bytes > SECRET_LIMITS.diffBytes) {
      problems.push({
        loc: ['body', field],
        msg: `Your stored ${field} would hold ${bytes} bytes, more than ${SECRET_LIMITS.diffBytes}`,
        type: 'too_long',
        input: null,
        ctx: { max_bytes: SECRET_LIMITS.diffBytes },
      });
    }
  }
  return problems;
}
