import { z } from 'zod';
import { uuidString } from './common';
import { ConversationSettingsSchema, ROLES } from './organizations';
import { PERMISSIONS } from './settings';

/** The user behind the credential, with the published SaasUserInfo fields that mean something here. */
export const UserSchema = z
  .object({
    id: z.string(),
    email: z.string(),
    current_org_id: z.string().nullable(),
    created_at: z.iso.datetime(),
    org_id: z.string().nullable().meta({ description: 'The active organization (as current_org_id).' }),
    org_name: z.string().nullable(),
    role: z.enum(ROLES).nullable().meta({ description: 'The role in the active organization.' }),
    permissions: z.array(z.enum(PERMISSIONS)),
    language: z.string().nullable(),
    git_user_name: z.string().nullable(),
    git_user_email: z.string().nullable(),
    v1_enabled: z.boolean(),
    agent_settings: z
      .record(z.string(), z.unknown())
      .meta({ description: 'The effective agent settings (secrets masked).' }),
    conversation_settings: ConversationSettingsSchema,
  })
  .meta({ id: 'User', description: 'The user behind the credential.' });

export const ApiKeySchema = z
  .object({
    id: z.string().meta({ format: 'uuid' }),
    name: z.string(),
    prefix: z.string().meta({ description: 'The first characters of the key, to tell keys apart.' }),
    created_at: z.iso.datetime(),
    revoked_at: z.iso.datetime().nullable(),
  })
  .meta({ id: 'ApiKey', description: 'An API key as listed: never the key itself.' });

export const ApiKeyPageSchema = z
  .object({ items: z.array(ApiKeySchema), next_page_id: z.string().nullable() })
  .meta({ id: 'ApiKeyPage' });

export const CreateApiKeyRequestSchema = z
  .object({ name: z.string().trim().min(1).max(100).meta({ description: 'What the key is for.' }) })
  .strict()
  .meta({ id: 'CreateApiKeyRequest' });

export const CreatedApiKeySchema = ApiKeySchema.extend({
  key: z.string().meta({ description: 'The raw key: shown this once, never stored or shown again.' }),
}).meta({ id: 'CreatedApiKey' });

export const ApiKeyIdParamsSchema = z.object({ key_id: uuidString() });
