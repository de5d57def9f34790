/**
 * The launcher records where the embedded servers listen, so the admin CLI run beside it finds them
 * without the user exporting MONGODB_URI and TEMPORAL_ADDRESS.
 */
import fs from 'node:fs';
import path from 'node:path';
import { SecretBox } from '../auth/secret-box';
import type { Config } from '../config';

export interface EmbeddedServers {
  mongoUri: string;
  temporalAddress: string;
  /** The PostgreSQL FerretDB stores into (with its password), when FerretDB runs on PostgreSQL. */
  postgresUrl?: string;
  /** The port the launcher let isolated sandboxes reach for the demo's scripted LLM (DEMO_LLM_PORT). */
  demoLlmPort?: number;
}

export const embeddedServersFile = (dataDir: string) => path.join(dataDir, 'embedded-servers.json');

export function writeEmbeddedServers(dataDir: string, servers: EmbeddedServers): void {
  // Holds a connection string with credentials: readable by this user only, from its first byte (a new
  // file renamed over the old one, whatever mode the old one had).
  const file = embeddedServersFile(dataDir);
  fs.rmSync(`${file}.tmp`, { force: true });
  fs.writeFileSync(`${file}.tmp`, JSON.stringify(servers, null, 2) + '\n', { mode: 0o600, flag: 'wx' });
  fs.renameSync(`${file}.tmp`, file);
}

/** Configured servers win; otherwise those of a launcher running on the same data directory. */
export function resolveServers(config: Config): Partial<EmbeddedServers> {
  let embedded: Partial<EmbeddedServers> = {};
  try {
    embedded = JSON.parse(fs.readFileSync(embeddedServersFile(config.dataDir), 'utf8')) as EmbeddedServers;
  } catch {
    // no launcher has run here
  }
  return {
    mongoUri: config.mongo.uri ?? embedded.mongoUri,
    temporalAddress: config.temporal.address ?? embedded.temporalAddress,
    // Only the PostgreSQL of the launcher's own FerretDB: not when MONGODB_URI names another server.
    postgresUrl: config.postgres.url ?? (config.mongo.uri ? undefined : embedded.postgresUrl),
    // The launcher's only for the service it started: not when the servers are named by the environment.
    demoLlmPort: config.demoLlmPort || (config.mongo.uri ? undefined : embedded.demoLlmPort),
  };
}

export const secretsKeyFile = (dataDir: string) => path.join(dataDir, 'secrets.key');

/**
 * SECRETS_KEY when set; otherwise the key the launcher keeps in the data directory, created on the first
 * run (readable by this user only) when `create` is set.
 */
export function resolveSecretsKey(config: Config, create = false): string | undefined {
  if (config.secretsKey) return config.secretsKey;
  const file = secretsKeyFile(config.dataDir);
  try {
    return fs.readFileSync(file, 'utf8').trim();
  } catch {
    if (!create) return undefined;
    const key = SecretBox.generateKey();
    fs.writeFileSync(file, key + '\n', { mode: 0o600, flag: 'wx' });
    return key;
  }
}
