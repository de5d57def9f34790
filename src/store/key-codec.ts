/**
 * Free-form objects (extra_headers, capability_overrides, observability_metadata, plugin parameters, ...)
 * may have any JSON key, but MongoDB-wire servers refuse keys that start with `$` or hold a `.` (FerretDB
 * always; MongoDB in many places), and a NUL ends a BSON key. Stores write such objects with their keys
 * escaped and read them back unescaped, so every key round-trips:
 *
 *   `%` -> `%25`, `.` -> `%2E`, a leading `$` -> `%24`, NUL -> `%00`
 *
 * FerretDB also refuses an array directly inside an array (`{"a": [[1]]}`: "nested arrays are not
 * supported", which escaped as a 500). Such an inner array is stored wrapped, as `{"%A": [...]}`: a key no
 * escaped key can be (every `%` of a given key is written `%25`), so reading unwraps exactly what was
 * wrapped and every JSON value round-trips on FerretDB and MongoDB alike.
 *
 * The keys the schemas define contain none of these characters, so the fields that queries name are
 * stored as they are. Values are untouched but for the wrapping; Dates and other non-plain objects pass
 * through.
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

/** The key of the object an array inside an array is stored in. */
const NESTED_ARRAY = '%A';

/** A property that stays a key even when it is named __proto__ (never the object's prototype). */
function setKey(out: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(out, key, { value, enumerable: true, writable: true, configurable: true });
}

function encode(value: unknown, inArray: boolean): unknown {
  if (Array.isArray(value)) {
    const items = value.map((v) => encode(v, true));
    return inArray ? { [NESTED_ARRAY]: items } : items;
  }
  if (!isPlainObject(value)) return value;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) setKey(out, escapeKey(k), encode(v, false));
  return out;
}

function decode(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(decode);
  if (!isPlainObject(value)) return value;
  const keys = Object.keys(value);
  if (keys.length === 1 && keys[0] === NESTED_ARRAY && Array.isArray(value[NESTED_ARRAY]))
    return decode(value[NESTED_ARRAY]);
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) setKey(out, unescapeKey(k), decode(v));
  return out;
}

/** The value with every object key escaped and every array inside an array wrapped, ready to be stored. */
export const encodeKeys = <T>(value: T): T => encode(value, false) as T;

/** A stored value as it was given: keys unescaped, inner arrays unwrapped. */
export const decodeKeys = <T>(value: T): T => decode(value) as T;
