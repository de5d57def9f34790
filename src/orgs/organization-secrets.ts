/**
 * Which organization fields are secrets, and the three things done to them: seal before storing (a
 * value equal to the mask keeps what was stored), mask in every response, open for a start.
 */
import { SecretBox } from '../auth/secret-box';
import { SECRET_MASK } from '../schemas/secret-mask';

type Json = Record<string, unknown>;

export const SECRET_PATHS: readonly (readonly string[])[] = [
  ['agent_settings', 'llm', 'api_key'],
  ['agent_settings', 'llm', 'cloud_access_key_id'],
  ['agent_settings', 'llm', 'cloud_secret_access_key'],
  ['agent_settings', 'llm', 'cloud_session_token'],
  ['agent_settings', 'verification', 'critic_api_key'],
  ['search_api_key'],
  ['sandbox_api_key'],
];

/** The secret fields of an LLM's settings (api_key, the cloud credentials). */
export const LLM_SECRET_FIELDS: readonly string[] = SECRET_PATHS.filter(
  (p) => p[0] === 'agent_settings' && p[1] === 'llm',
).map((p) => p[2]!);

function get(obj: unknown, path: readonly string[]): unknown {
  let v: unknown = obj;
  for (const k of path) {
    if (v === null || typeof v !== 'object') return undefined;
    v = (v as Json)[k];
  }
  return v;
}

/** Sets a value at a path that exists up to its last key (does nothing otherwise). */
function set(obj: unknown, path: readonly string[], value: unknown): void {
  const parent = get(obj, path.slice(0, -1));
  if (parent !== null && typeof parent === 'object') (parent as Json)[path[path.length - 1]!] = value;
}

/** A deep copy with each secret replaced by `f(value, path)`, where the secret is present. */
function mapSecrets<T>(obj: T, f: (value: string, path: readonly string[]) => string): T {
  const copy = structuredClone(obj);
  for (const path of SECRET_PATHS) {
    const v = get(copy, path);
    if (typeof v === 'string') set(copy, path, f(v, path));
  }
  return copy;
}

/** Encrypts new secrets; the mask (or an unchanged sealed value) keeps the previously stored one. */
export function sealSecrets<T>(next: T, previous: unknown, box: SecretBox): T {
  return mapSecrets(next, (v, path) => {
    if (v === SECRET_MASK || SecretBox.isSealed(v)) {
      const before = get(previous, path);
      return typeof before === 'string' ? before : '';
    }
    return v === '' ? '' : box.seal(v);
  });
}

/** What responses show: the mask for a stored secret, "" for none. */
export function maskSecrets<T>(stored: T): T {
  return mapSecrets(stored, (v) => (v === '' ? '' : SECRET_MASK));
}

/** Plain values, for a start that needs them. */
export function openSecrets<T>(stored: T, box: SecretBox): T {
  return mapSecrets(stored, (v) => (SecretBox.isSealed(v) ? box.open(v) : v));
}
