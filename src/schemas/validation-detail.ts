/**
 * Turns zod issues into the entries of the spec's HTTPValidationError body (SPEC 2.7): `{loc, msg, type,
 * input, ctx}` with the error types and messages clients of the reference service already handle
 * (`missing`, `greater_than`, `less_than_equal`, `enum`, `uuid_parsing`, `extra_forbidden`, ...).
 *
 * A schema can name its own type through a custom issue: `ctx.addIssue({ code: 'custom', message,
 * params: { type: 'int_parsing', ctx: {...} } })`; `params: { withheld: true }` leaves the value out of
 * the answer (a credential refused in a request is not echoed).
 */
import type { z } from 'zod';

export type Loc = (string | number)[];

export interface ValidationDetail {
  loc: Loc;
  msg: string;
  type: string;
  input?: unknown;
  ctx?: Record<string, unknown>;
}

/** Where the value came from; the first element of every loc. */
export type InputPart = 'path' | 'query' | 'body' | 'header';

type Issue = z.core.$ZodIssue;

function valueAt(root: unknown, path: readonly PropertyKey[]): unknown {
  let v: unknown = root;
  for (const key of path) {
    if (v === null || typeof v !== 'object') return undefined;
    v = (v as Record<PropertyKey, unknown>)[key];
  }
  return v;
}

const quote = (v: unknown) => (typeof v === 'string' ? `'${v}'` : String(v));

/** "'A' or 'B'", "'A', 'B' or 'C'" as pydantic words it. */
export function expectedList(values: readonly unknown[]): string {
  const q = values.map(quote);
  return q.length <= 1 ? (q[0] ?? '') : `${q.slice(0, -1).join(', ')} or ${q[q.length - 1]}`;
}

const TYPE_NAMES: Record<string, [type: string, msg: string]> = {
  string: ['string_type', 'Input should be a valid string'],
  number: ['float_type', 'Input should be a valid number'],
  int: ['int_type', 'Input should be a valid integer'],
  bigint: ['int_type', 'Input should be a valid integer'],
  boolean: ['bool_type', 'Input should be a valid boolean'],
  object: ['model_attributes_type', 'Input should be a valid dictionary or object to extract fields from'],
  record: ['dict_type', 'Input should be a valid dictionary'],
  map: ['dict_type', 'Input should be a valid dictionary'],
  array: ['list_type', 'Input should be a valid list'],
  tuple: ['tuple_type', 'Input should be a valid tuple'],
  date: ['datetime_type', 'Input should be a valid datetime'],
  null: ['none_required', 'Input should be None'],
};

function sizeDetail(
  issue: Extract<Issue, { code: 'too_small' | 'too_big' }>,
  actual: unknown,
): Omit<ValidationDetail, 'loc' | 'input'> {
  const small = issue.code === 'too_small';
  const bound = small
    ? (issue as { minimum: number | bigint }).minimum
    : (issue as { maximum: number | bigint }).maximum;
  const n = Number(bound);
  switch (issue.origin) {
    case 'string':
      return small
        ? {
            type: 'string_too_short',
            msg: `String should have at least ${n} character${n === 1 ? '' : 's'}`,
            ctx: { min_length: n },
          }
        : {
            type: 'string_too_long',
            msg: `String should have at most ${n} character${n === 1 ? '' : 's'}`,
            ctx: { max_length: n },
          };
    case 'array':
    case 'set': {
      const len = Array.isArray(actual) ? actual.length : actual instanceof Set ? actual.size : undefined;
      return small
        ? {
            type: 'too_short',
            msg: `List should have at least ${n} item${n === 1 ? '' : 's'} after validation, not ${len}`,
            ctx: { field_type: 'List', min_length: n, actual_length: len },
          }
        : {
            type: 'too_long',
            msg: `List should have at most ${n} item${n === 1 ? '' : 's'} after validation, not ${len}`,
            ctx: { field_type: 'List', max_length: n, actual_length: len },
          };
    }
    default:
      if (small) {
        return issue.inclusive
          ? { type: 'greater_than_equal', msg: `Input should be greater than or equal to ${n}`, ctx: { ge: n } }
          : { type: 'greater_than', msg: `Input should be greater than ${n}`, ctx: { gt: n } };
      }
      return issue.inclusive
        ? { type: 'less_than_equal', msg: `Input should be less than or equal to ${n}`, ctx: { le: n } }
        : { type: 'less_than', msg: `Input should be less than ${n}`, ctx: { lt: n } };
  }
}

function formatDetail(issue: Extract<Issue, { code: 'invalid_format' }>): Omit<ValidationDetail, 'loc' | 'input'> {
  switch (issue.format) {
    case 'uuid':
    case 'guid':
      return { type: 'uuid_parsing', msg: 'Input should be a valid UUID', ctx: { error: issue.message } };
    case 'datetime':
    case 'date':
      return {
        type: 'datetime_from_date_parsing',
        msg: 'Input should be a valid datetime or date',
        ctx: { error: issue.message },
      };
    case 'url':
      return { type: 'url_parsing', msg: 'Input should be a valid URL', ctx: { error: issue.message } };
    case 'email':
      return { type: 'value_error', msg: 'value is not a valid email address', ctx: { reason: issue.message } };
    case 'regex':
      return {
        type: 'string_pattern_mismatch',
        msg: `String should match pattern '${(issue as { pattern?: string }).pattern ?? ''}'`,
        ctx: { pattern: (issue as { pattern?: string }).pattern },
      };
    default:
      return { type: 'value_error', msg: `Value error, ${issue.message}`, ctx: { error: issue.message } };
  }
}

/**
 * Fields whose value must not be sent, so is not sent back inside any input a 422 echoes (an object or
 * list holding one, a union that did not match): a credential put in a request.
 */
export const WITHHELD_FIELDS: ReadonlySet<string> = new Set(['decrypted_api_key']);

/** `input` with every withheld field's value replaced (a copy; the input itself is left as it is). */
function withheld(input: unknown, depth = 0): unknown {
  if (input === null || typeof input !== 'object' || depth > 20) return input;
  if (Array.isArray(input)) return input.map((v) => withheld(v, depth + 1));
  return Object.fromEntries(
    Object.entries(input).map(([k, v]) => [k, WITHHELD_FIELDS.has(k) ? '<withheld>' : withheld(v, depth + 1)]),
  );
}

/** An `invalid_type` issue in pydantic's words: the type's own error, or a number that is not whole. */
function typeDetail(issue: Issue & { code: 'invalid_type' }, value: unknown): Omit<ValidationDetail, 'loc' | 'input'> {
  if (issue.expected === 'int' && typeof value === 'number') {
    return { type: 'int_from_float', msg: 'Input should be a valid integer, got a number with a fractional part' };
  }
  const known = TYPE_NAMES[issue.expected];
  return known
    ? { type: known[0], msg: known[1] }
    : { type: `${issue.expected}_type`, msg: `Input should be a valid ${issue.expected}` };
}

type DetailOf = (d: Omit<ValidationDetail, 'loc' | 'input'>, l?: Loc, input?: unknown) => ValidationDetail;

/**
 * A discriminated union that matched no branch: at the union's own location, as pydantic gives it (zod
 * points at the tag): not an object, no tag, or a tag of none of the branches.
 */
function discriminatorDetail(
  discriminator: string,
  options: unknown[],
  root: unknown,
  path: readonly PropertyKey[],
  loc: Loc,
  prefix: Loc,
  detail: DetailOf,
): ValidationDetail {
  const unionPath = path[path.length - 1] === discriminator ? path.slice(0, -1) : path;
  const unionLoc = loc.slice(0, prefix.length + unionPath.length);
  const obj = valueAt(root, unionPath);
  const d = `'${discriminator}'`;
  if (obj === null || typeof obj !== 'object' || Array.isArray(obj)) {
    return detail({ type: 'model_attributes_type', msg: TYPE_NAMES.object![1] }, unionLoc, obj);
  }
  const tag = (obj as Record<string, unknown>)[discriminator];
  if (tag === undefined) {
    return detail(
      { type: 'union_tag_not_found', msg: `Unable to extract tag using discriminator ${d}`, ctx: { discriminator: d } },
      unionLoc,
      obj,
    );
  }
  const expectedTags = options.map(quote).join(', ');
  return detail(
    {
      type: 'union_tag_invalid',
      msg: `Input tag ${quote(tag)} found using ${d} does not match any of the expected tags: ${expectedTags}`,
      ctx: { discriminator: d, tag: String(tag), expected_tags: expectedTags },
    },
    unionLoc,
    obj,
  );
}

/**
 * The field every branch of a union refused as a literal of its own (each branch one value of it), with
 * those values; undefined when the branches failed otherwise too.
 */
function sharedTagMiss(branches: readonly (readonly Issue[])[]): { field: string; values: unknown[] } | undefined {
  const misses = branches.map((b) =>
    b.length === 1 && b[0]!.code === 'invalid_value' && b[0]!.path.length === 1 ? b[0]! : undefined,
  );
  const field = misses[0]?.path[0];
  if (typeof field !== 'string' || misses.some((m) => m?.path[0] !== field)) return undefined;
  return { field, values: misses.flatMap((m) => (m as Issue & { values: unknown[] }).values) };
}

/** A refinement's own issue: its type and context when it names them, else a `value_error`. */
function customDetail(issue: Issue & { code: 'custom' }, detail: DetailOf): ValidationDetail {
  const params = (issue.params ?? {}) as { type?: string; ctx?: Record<string, unknown>; withheld?: boolean };
  const found = params.type
    ? detail({ type: params.type, msg: issue.message, ctx: params.ctx })
    : detail({ type: 'value_error', msg: `Value error, ${issue.message}`, ctx: { error: issue.message } });
  // A value refused because it must not be sent (a credential) is not sent back either.
  if (params.withheld) delete found.input;
  return found;
}

function mapIssue(issue: Issue, root: unknown, basePath: readonly PropertyKey[], prefix: Loc): ValidationDetail[] {
  const path = [...basePath, ...issue.path];
  const loc: Loc = [...prefix, ...path.map((p) => (typeof p === 'number' ? p : String(p)))];
  const value = valueAt(root, path);
  const detail: DetailOf = (d, l = loc, input = value) => ({
    loc: l,
    msg: d.msg,
    type: d.type,
    input: withheld(input),
    ...(d.ctx ? { ctx: d.ctx } : {}),
  });

  // A field that is absent is `missing`, whatever its type would have been (zod words an absent enum
  // as an invalid value); pydantic reports the object that lacks the field as the input.
  const absentTypes: Issue['code'][] = ['invalid_type', 'invalid_value', 'invalid_format'];
  if (value === undefined && absentTypes.includes(issue.code)) {
    const parent = prefix[0] === 'body' && path.length > 0 ? valueAt(root, path.slice(0, -1)) : null;
    return [detail({ type: 'missing', msg: 'Field required' }, loc, parent)];
  }

  switch (issue.code) {
    case 'invalid_type':
      return [detail(typeDetail(issue, value))];
    case 'too_small':
    case 'too_big':
      return [detail(sizeDetail(issue, value))];
    case 'invalid_value': {
      const expected = expectedList(issue.values);
      return issue.values.length === 1
        ? [detail({ type: 'literal_error', msg: `Input should be ${expected}`, ctx: { expected } })]
        : [detail({ type: 'enum', msg: `Input should be ${expected}`, ctx: { expected } })];
    }
    case 'invalid_format':
      return [detail(formatDetail(issue))];
    case 'not_multiple_of':
      return [
        detail({
          type: 'multiple_of',
          msg: `Input should be a multiple of ${issue.divisor}`,
          ctx: { multiple_of: Number(issue.divisor) },
        }),
      ];
    case 'unrecognized_keys':
      return issue.keys.map((key) =>
        detail(
          { type: 'extra_forbidden', msg: 'Extra inputs are not permitted' },
          [...loc, key],
          valueAt(root, [...path, key]),
        ),
      );
    case 'invalid_union': {
      const u = issue as Issue & { note?: string; discriminator?: string; options?: unknown[] };
      if (u.discriminator !== undefined)
        return [discriminatorDetail(u.discriminator, u.options ?? [], root, path, loc, prefix, detail)];
      // A union of objects told apart by a field none of them takes as given (a diff's agent_kind): a tag error.
      const tag = sharedTagMiss(issue.errors);
      if (tag) return [discriminatorDetail(tag.field, tag.values, root, path, loc, prefix, detail)];
      // A plain union: report the branch that came closest: not one that refused a field's value which
      // another object branch took (a diff's agent_kind that names another variant), then the fewest issues.
      const tookField = (b: readonly Issue[], k: PropertyKey) => !b.some((i) => i.path.length === 0 || i.path[0] === k);
      const outvoted = (b: readonly Issue[]) =>
        b.some(
          (i) =>
            i.code === 'invalid_value' &&
            i.path.length === 1 &&
            issue.errors.some((other) => other !== b && tookField(other, i.path[0]!)),
        )
          ? 1
          : 0;
      const branches = issue.errors
        .filter((b) => b.length > 0)
        .sort((a, b) => outvoted(a) - outvoted(b) || a.length - b.length);
      const best = branches[0];
      if (!best) return [detail({ type: 'union_error', msg: issue.message })];
      return best.flatMap((i) => mapIssue(i, root, path, prefix));
    }
    case 'invalid_key':
    case 'invalid_element':
      return issue.issues.flatMap((i) => mapIssue(i, root, path, prefix));
    case 'custom':
      return [customDetail(issue, detail)];
    default:
      return [detail({ type: 'value_error', msg: (issue as Issue).message })];
  }
}

/** Maps every issue of one request part; `root` is that part's raw input, so `input` is what was sent. */
export function toValidationDetail(issues: readonly Issue[], root: unknown, part: InputPart): ValidationDetail[] {
  return issues.flatMap((issue) => mapIssue(issue, root, [], [part]));
}

/** Validation details in one sentence (at most `max` of them), for a conflict that carries them as text. */
export function detailsInWords(details: readonly ValidationDetail[], max = 5): string {
  const said = details.slice(0, max).map((d) => `${d.loc.slice(1).join('.') || d.loc.join('.')}: ${d.msg}`);
  return said.join('; ') + (details.length > max ? ` (and ${details.length - max} more)` : '');
}
