/**
 * Saved LLM profiles of a user (the published /api/v1/settings/profiles): named LLM configurations, one
 * of them active (copied into the user's agent_settings.llm), one chosen by a start (`agent_profile_id`),
 * or switched to by a running conversation (`switch_profile`). The LLM fields are this service's
 * (SPEC.md's names: cloud_*, router_*); a key is sealed at rest and never answered.
 */
import { z } from 'zod';
import { LLMSettingsSchema } from './organizations';

/** The most profiles one user keeps (the published MAX_PROFILES_PER_USER; its value is not published). */
export const MAX_PROFILES_PER_USER = 50;

export const PROFILE_NAME = /^[A-Za-z0-9._-]{1,64}$/;

const profileName = () =>
  z
    .string()
    .min(1)
    .max(64)
    .regex(PROFILE_NAME, { error: 'A profile name is 1 to 64 letters, digits, ".", "_" or "-"' })
    .meta({ pattern: PROFILE_NAME.source });

export const ProfileNameParamsSchema = z.object({ name: profileName() });

export const SaveProfileRequestSchema = z
  .strictObject({
    include_secrets: z
      .boolean()
      .default(true)
      .meta({ description: "false: the profile keeps no key (the organization's applies when it is used)." }),
    llm: LLMSettingsSchema.nullable()
      .optional()
      .meta({ description: "The profile's LLM; absent or null: a copy of your current agent_settings.llm." }),
    preserve_existing_api_key: z
      .boolean()
      .default(false)
      .meta({ description: 'Keep the key the profile of this name has when the request gives none.' }),
  })
  .meta({
    id: 'SaveProfileRequest',
    description:
      'Saves an LLM configuration under the name in the path; a profile of that name is overwritten (its id stays, its revision grows).',
  });
export type SaveProfileRequest = z.output<typeof SaveProfileRequestSchema>;

export const RenameProfileRequestSchema = z
  .strictObject({ new_name: profileName() })
  .meta({ id: 'RenameProfileRequest' });

const identity = {
  id: z.uuid().meta({ description: 'Stable id: what a start names in agent_profile_id; a rename keeps it.' }),
  revision: z.number().int().min(0).meta({ description: 'Grows with each save under this name.' }),
};

export const ProfileInfoSchema = z
  .object({
    name: z.string(),
    model: z.string().nullable(),
    base_url: z.string().nullable(),
    api_key_set: z.boolean(),
    ...identity,
  })
  .meta({ id: 'ProfileInfo', description: 'A profile as listed: never its key.' });

export const ProfileListResponseSchema = z
  .object({ profiles: z.array(ProfileInfoSchema), active_profile: z.string().nullable() })
  .meta({
    id: 'ProfileListResponse',
    description: 'Your profiles by name, and the one last activated (null: none, or it was deleted).',
  });

export const ProfileDetailResponseSchema = z
  .object({
    name: z.string(),
    config: z
      .record(z.string(), z.unknown())
      .meta({ description: 'The LLM configuration; api_key and every other secret field are null.' }),
    api_key_set: z.boolean(),
    ...identity,
  })
  .meta({ id: 'ProfileDetailResponse' });

export const ProfileMutationResponseSchema = z
  .object({ name: z.string(), message: z.string() })
  .meta({ id: 'ProfileMutationResponse' });

export const ActivateProfileResponseSchema = z
  .object({ name: z.string(), message: z.string(), model: z.string().nullable() })
  .meta({
    id: 'ActivateProfileResponse',
    description: "The profile's LLM is now your agent_settings.llm (over your organization's).",
  });

export const SwitchProfileRequestSchema = z
  .strictObject({
    profile_name: z
      .string()
      .min(1)
      .max(64)
      .meta({ description: 'A profile saved with POST /api/v1/settings/profiles/{name}.' }),
  })
  .meta({ id: 'SwitchProfileRequest', description: "Switches a running conversation's LLM to a saved profile." });
