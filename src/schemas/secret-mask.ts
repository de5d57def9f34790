/**
 * What the project shows in place of a secret. There are two values, on purpose, and both live here so
 * neither is ever spelled out again elsewhere:
 *
 * - SECRET_MASK replaces a whole stored secret in API answers. It is part of the API's contract: a client
 *   that sends it back in an update keeps the stored value (see sealSecrets), docs/api.md documents it, and
 *   clients and tests compare answers with it.
 * - AGENT_SECRET_MASK replaces a secret wherever it appears inside what the agent sees and records (tool
 *   output, hook output) in the sandbox runtime. It says in words what happened because the LLM reads it,
 *   and events already in conversation logs carry it, so changing it would make old and new logs disagree.
 */

/** What a response shows in place of a stored secret; sending it back in an update keeps the secret. */
export const SECRET_MASK = '**********';

/** What the agent's events (and so the LLM) show in place of a secret value found in text. */
export const AGENT_SECRET_MASK = '<secret-hidden>';
