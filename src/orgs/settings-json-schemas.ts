/**
 * The JSON Schemas of the settings a user's diffs are laid over, as the settings router publishes them
 * (GET /api/v1/settings/agent-schema and /conversation-schema).
 */
import { z } from 'zod';
import { AgentSettingsSchema, ConversationSettingsSchema } from '../schemas/organizations';

type Json = Record<string, unknown>;

/** JSON Schema of what POST /api/v1/settings' agent_settings_diff may hold (whole, before the diff is taken). */
export function agentSettingsJsonSchema(): Json {
  return z.toJSONSchema(AgentSettingsSchema, { io: 'input', unrepresentable: 'any' }) as Json;
}

export function conversationSettingsJsonSchema(): Json {
  return z.toJSONSchema(ConversationSettingsSchema, { io: 'input', unrepresentable: 'any' }) as Json;
}
