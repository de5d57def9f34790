/**
 * The one place that reads the environment. Every process (launcher, api, worker, admin CLI) calls
 * `loadConfig()` and gets a typed, validated value, or a ConfigError naming each bad variable and the
 * form it expects.
 */
import { configFromEnv, type Config } from './config-from-env';
import { envSchema } from './env-schema';

export { SANDBOXES_BASE, type Config } from './config-from-env';
export { envSchema, ENV_VARIABLES, type Env } from './env-schema';
export { TEMPORAL_SERVER_PORT_OFFSETS } from './service-ports';
export { LOG_FORMATS, LOG_LEVELS, type LogLevel } from './env-fields';

/** Variables whose values never appear in messages (keys, connection strings with passwords). */
const SENSITIVE = new Set(['SECRETS_KEY', 'MONGODB_URI', 'POSTGRES_URL', 'REMOTE_RUNTIME_API_KEY']);

export class ConfigError extends Error {
  constructor(readonly problems: readonly string[]) {
    super(`Invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}

/** Parses the environment. Throws ConfigError listing every bad variable with the form it expects. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env, isTty = Boolean(process.stdout.isTTY)): Config {
  // An empty variable means "unset", as in most shells' `FOO= cmd`.
  const present = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ''));
  const parsed = envSchema.safeParse(present);
  if (!parsed.success) {
    throw new ConfigError(
      parsed.error.issues.map((issue) => {
        const name = String(issue.path[0] ?? '?');
        const shown = SENSITIVE.has(name) ? '<redacted>' : JSON.stringify(present[name]);
        return `${name}=${shown} is invalid: expected ${issue.message}`;
      }),
    );
  }
  return configFromEnv(parsed.data, isTty);
}

/** The api and worker need both servers' addresses; only the launcher may leave them unset. */
export function requireServers(config: Config): { mongoUri: string; temporalAddress: string } {
  const missing = [
    config.mongo.uri ? undefined : 'MONGODB_URI (a mongodb:// connection string)',
    config.temporal.address ? undefined : 'TEMPORAL_ADDRESS (host:port)',
  ].filter((m): m is string => m !== undefined);
  if (missing.length > 0) {
    throw new ConfigError(missing.map((m) => `${m} is required here; \`npm start\` sets it for the embedded servers`));
  }
  return { mongoUri: config.mongo.uri!, temporalAddress: config.temporal.address! };
}

/** The api and the admin CLI seal secrets; without a key they cannot start. */
export function requireSecretsKey(config: Config): string {
  if (!config.secretsKey) {
    throw new ConfigError([
      'SECRETS_KEY is required: 32 random bytes, base64 (`npm start` keeps one in DATA_DIR/secrets.key)',
    ]);
  }
  return config.secretsKey;
}
