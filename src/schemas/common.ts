/** Small zod building blocks shared by request schemas: query integers, UUIDs, page limits. */
import { z } from 'zod';
import { normalizeEventTime } from './event-time';

/** The name of an environment variable, as a secret's name and a sandbox's initial_env keys are. */
export const ENV_VAR_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

const UUID_RE = /^[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}$/;

/**
 * A conversation id as a runtime may spell it: the OpenHands agent server writes UUIDs as 32 hex
 * digits; conversations are stored under the hyphenated lower-case form. Anything else is unchanged.
 */
export function canonicalConversationId(id: string): string {
  if (!/^[0-9a-fA-F]{32}$/.test(id)) return id;
  const h = id.toLowerCase();
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

/** A UUID in any version, as pydantic accepts it; normalised to lower-case hyphenated form. */
export function uuidString() {
  return z
    .string()
    .transform((v, ctx) => {
      if (!UUID_RE.test(v)) {
        const bad = v.match(/[^0-9a-fA-F-]/);
        const error = bad
          ? `invalid character: expected [0-9a-fA-F-], found \`${bad[0]}\` at ${bad.index! + 1}`
          : `invalid length: expected 32 hex digits, found ${v.replace(/-/g, '').length}`;
        ctx.addIssue({
          code: 'custom',
          message: `Input should be a valid UUID, ${error}`,
          params: { type: 'uuid_parsing', ctx: { error } },
        });
        return z.NEVER;
      }
      const h = v.replace(/-/g, '').toLowerCase();
      return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
    })
    .meta({ type: 'string', format: 'uuid' });
}

/** An integer sent as a query string; "abc" or "1.5" is `int_parsing`, as in the reference service. */
export function queryInt() {
  return z
    .string()
    .transform((v, ctx) => {
      if (!/^\s*[-+]?\d+\s*$/.test(v)) {
        ctx.addIssue({
          code: 'custom',
          message: 'Input should be a valid integer, unable to parse string as an integer',
          params: { type: 'int_parsing' },
        });
        return z.NEVER;
      }
      return Number(v);
    })
    .pipe(z.number().int());
}

/** SPEC 8: `limit` greater than 0, at most 100, default 100. */
export const pageLimit = () =>
  queryInt().pipe(z.number().int().gt(0).lte(100)).optional().default(100).meta({
    description: 'Maximum number of results in the page (1..100).',
    type: 'integer',
    minimum: 1,
    maximum: 100,
    default: 100,
  });

/** A date-time query parameter, as its sortable UTC key (`YYYY-MM-DDTHH:MM:SS.ffffffZ`). A value without zone is read as UTC. */
export const dateTimeQuery = (description: string) =>
  z
    .string()
    .transform((v, ctx) => {
      const key = normalizeEventTime(v);
      if (key === null) {
        ctx.addIssue({
          code: 'custom',
          message: 'Input should be a valid datetime or date, in ISO 8601 form such as 2024-05-01T12:00:00Z',
          params: { type: 'datetime_from_date_parsing', ctx: { error: 'invalid datetime' } },
        });
        return z.NEVER;
      }
      return key;
    })
    .optional()
    .meta({
      type: 'string',
      format: 'date-time',
      description: `${description} ISO 8601; without a zone it is read as UTC.`,
    });
