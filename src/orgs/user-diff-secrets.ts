/**
 * The secrets inside a user's agent settings diff: sealed on the way in (the mask keeps the stored value),
 * and dropped when cleared with "" so that the organization's value applies again.
 */
import { SecretBox } from '../auth/secret-box';
import { SECRET_MASK } from '../schemas/secret-mask';
import { SECRET_PATHS } from './organization-secrets';

type Json = Record<string, unknown>;

/** Secret paths inside agent_settings (SECRET_PATHS are the organization's, from its root). */
const AGENT_SECRET_PATHS = SECRET_PATHS.filter((p) => p[0] === 'agent_settings').map((p) => p.slice(1));

const isPlainObject = (v: unknown): v is Json => v !== null && typeof v === 'object' && !Array.isArray(v);

function getAt(obj: unknown, path: readonly string[]): unknown {
  let v: unknown = obj;
  for (const k of path) {
    if (!isPlainObject(v)) return undefined;
    v = v[k];
  }
  return v;
}

function deleteAt(obj: unknown, path: readonly string[]): void {
  const parent = getAt(obj, path.slice(0, -1));
  if (isPlainObject(parent)) delete parent[path[path.length - 1]!];
}

function setAt(obj: unknown, path: readonly string[], value: unknown): void {
  const parent = getAt(obj, path.slice(0, -1));
  if (isPlainObject(parent)) parent[path[path.length - 1]!] = value;
}

/** Seals the secrets of a new agent diff: the mask keeps the user's stored value (or none), "" removes it. */
export function sealDiffSecrets(patch: Json, previous: Json, box: SecretBox): Json {
  const out = structuredClone(patch);
  for (const path of AGENT_SECRET_PATHS) {
    const v = getAt(out, path);
    if (typeof v !== 'string') continue;
    if (v === SECRET_MASK || SecretBox.isSealed(v)) {
      const before = getAt(previous, path);
      if (typeof before === 'string') setAt(out, path, before);
      else deleteAt(out, path);
    } else if (v !== '') {
      setAt(out, path, box.seal(v));
    }
  }
  return out;
}

/** Removes the secrets set to "" (after merging): the organization's value applies again. */
export function dropClearedSecrets(diff: Json): Json {
  for (const path of AGENT_SECRET_PATHS) if (getAt(diff, path) === '') deleteAt(diff, path);
  return diff;
}
