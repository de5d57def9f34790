/**
 * The environment variables and their defaults, as one zod object. The keys are the variable names:
 * docker-compose.yml and docs/configuration.md use exactly these (tests check both against this list).
 */
import { z } from 'zod';
import { serviceEnvFields } from './env-service';
import { sandboxEnvFields } from './env-sandboxes';

export const envSchema = z.object({ ...serviceEnvFields, ...sandboxEnvFields });

export type Env = z.infer<typeof envSchema>;
export const ENV_VARIABLES = Object.keys(envSchema.shape) as (keyof Env)[];
