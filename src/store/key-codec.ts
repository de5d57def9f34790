/**
 * Free-form objects (extra_headers, capability_overrides, observability_metadata, plugin parameters, ...)
 * may have any JSON key, but MongoDB-wire servers refuse keys that start with `$` or hold a `.` (FerretDB
 * always; MongoDB in many places), and a NUL ends a BSON key. Stores write such objects with their keys
 * escaped and read them back unescaped, so every key round-trips:
 *
 *   `%` -> `%25`, `.` -> `%2E`, a leading `$` -> `%24`, NUL -> `%00`
 *
 * The keys the schemas define contain none of these characters, so the fields that queries name are
 * stored as they are. Values are untouched (only keys are rewritten); Dates and other non-plain objects
 * pass through.
 */
const NEEDS_ESCAPE = /[%.\0]|^\$/;
const ESCAPED = /%(25|2E|24|00)/g;
const UNESCAPE: Record<string, string> = { '25': '%', '2E': '.', '24': '$', '00': '\0' };

export const escapeKey = (key: string): string =>
  NEEDS_ESCAPE.test(key)
    ? key.replace(/%/g, '%25').replace(/\./g, '%2E').replace(/\0/g, '%00').replace(/^\$/, '%24')
    : key;

export const unescapeKey = (key: string): string =>
  key.includes('%') ? key.replace(ESCAPED, (_, hex: string) => UNESCAPE[hex]!) : key;

/** A plain object (of any realm: structuredClone's copies have the main realm's prototype), not a Date or a BSON value. */
function isPlainObject(v: unknown): v is Record<string, unknown> {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return false;
  const proto = Object.getPrototypeOf(v) as { constructor?: { name?: string } } | null;
  return proto === null || proto.constructor?.name === 'Object';
}

function mapKeys(value: unknown, rename: (key: string) => string): unknown {
  if (Array.isArray(value)) return value.map((v) => mapKeys(v, rename));
  if (!isPlainObject(value)) return value;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) {
    // defineProperty: a key named __proto__ stays a key, never the object's prototype.
    Object.defineProperty(out, rename(k), {
      value: mapKeys(v, rename),
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  return out;
}

/** The value with every object key escaped, ready to be stored. */
export const encodeKeys = <T>(value: T): T => mapKeys(value, escapeKey) as T;

/** A stored value with its keys as they were given. */
export const decodeKeys = <T>(value: T): T => mapKeys(value, unescapeKey) as T;
