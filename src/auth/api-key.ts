import { createHash, randomBytes } from 'node:crypto';

/** Prefix that makes a leaked key recognisable to secret scanners and people. */
export const API_KEY_PREFIX = 'acp_';

/** A new raw key: shown once to its owner and never stored. */
export function generateApiKey(): string {
  return API_KEY_PREFIX + randomBytes(32).toString('base64url');
}

/** What is stored and looked up: the SHA-256 of the raw key, hex. */
export function hashApiKey(raw: string): string {
  return createHash('sha256').update(raw, 'utf8').digest('hex');
}
