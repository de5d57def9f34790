import { z } from 'zod';
import { toValidationDetail } from '../src/schemas/validation-detail';
import { pageLimit, queryInt, uuidString } from '../src/schemas/common';

const detail = (schema: z.ZodType, input: unknown, part: 'query' | 'body' | 'path' = 'body') => {
  const r = schema.safeParse(input);
  if (r.success) throw new Error('expected a failure');
  return toValidationDetail(r.error.issues, input, part);
};

describe('zod issues as HTTPValidationError entries', () => {
  const query = z.object({ limit: pageLimit(), sort_order: z.enum(['TIMESTAMP', 'TIMESTAMP_DESC']).optional() });

  it('limit: greater_than, less_than_equal, int_parsing, with loc and raw input', () => {
    expect(detail(query, { limit: '0' }, 'query')).toEqual([
      {
        loc: ['query', 'limit'],
        msg: 'Input should be greater than 0',
        type: 'greater_than',
        input: '0',
        ctx: { gt: 0 },
      },
    ]);
    expect(detail(query, { limit: '101' }, 'query')).toEqual([
      {
        loc: ['query', 'limit'],
        msg: 'Input should be less than or equal to 100',
        type: 'less_than_equal',
        input: '101',
        ctx: { le: 100 },
      },
    ]);
    expect(detail(query, { limit: 'ten' }, 'query')).toEqual([
      {
        loc: ['query', 'limit'],
        msg: 'Input should be a valid integer, unable to parse string as an integer',
        type: 'int_parsing',
        input: 'ten',
      },
    ]);
    expect(detail(query, { limit: '2.5' }, 'query')[0]!.type).toBe('int_parsing');
    expect(query.parse({})).toEqual({ limit: 100 });
    expect(query.parse({ limit: '7' })).toEqual({ limit: 7 });
  });

  it('enum', () => {
    expect(detail(query, { sort_order: 'NEWEST' }, 'query')).toEqual([
      {
        loc: ['query', 'sort_order'],
        msg: "Input should be 'TIMESTAMP' or 'TIMESTAMP_DESC'",
        type: 'enum',
        input: 'NEWEST',
        ctx: { expected: "'TIMESTAMP' or 'TIMESTAMP_DESC'" },
      },
    ]);
    const three = z.object({ a: z.enum(['x', 'y', 'z']) });
    expect(detail(three, { a: 'w' })[0]!.msg).toBe("Input should be 'x', 'y' or 'z'");
  });

  it('uuid_parsing', () => {
    const params = z.object({ org_id: uuidString() });
    const [d] = detail(params, { org_id: 'not-a-uuid' }, 'path');
    expect(d).toMatchObject({ loc: ['path', 'org_id'], type: 'uuid_parsing', input: 'not-a-uuid' });
    expect(d!.msg).toMatch(/^Input should be a valid UUID, invalid character/);
    expect(d!.ctx).toEqual({ error: expect.stringContaining('invalid character') });
    expect(params.parse({ org_id: '0F8FAD5B-D9CB-469F-A165-70867728950E' })).toEqual({
      org_id: '0f8fad5b-d9cb-469f-a165-70867728950e',
    });
  });

  it('missing reports the object that lacks the field', () => {
    const body = z.object({ name: z.string(), inner: z.object({ n: z.number() }) });
    expect(detail(body, { inner: {} })).toEqual([
      { loc: ['body', 'name'], msg: 'Field required', type: 'missing', input: { inner: {} } },
      { loc: ['body', 'inner', 'n'], msg: 'Field required', type: 'missing', input: {} },
    ]);
    expect(detail(body, undefined)).toEqual([{ loc: ['body'], msg: 'Field required', type: 'missing', input: null }]);
  });

  it('extra_forbidden for each unknown key of a closed object', () => {
    const closed = z.object({ a: z.string() }).strict();
    expect(detail(closed, { a: 'x', b: 1, c: 2 })).toEqual([
      { loc: ['body', 'b'], msg: 'Extra inputs are not permitted', type: 'extra_forbidden', input: 1 },
      { loc: ['body', 'c'], msg: 'Extra inputs are not permitted', type: 'extra_forbidden', input: 2 },
    ]);
  });

  it('types, string and list lengths, literals', () => {
    const s = z.object({
      str: z.string().min(2).max(3),
      list: z.array(z.number()).min(1),
      flag: z.boolean(),
      lit: z.literal('text'),
    });
    const ds = detail(s, { str: 5, list: [], flag: 'yes', lit: 'x' });
    expect(ds.map((d) => [d.loc.join('.'), d.type])).toEqual([
      ['body.str', 'string_type'],
      ['body.list', 'too_short'],
      ['body.flag', 'bool_type'],
      ['body.lit', 'literal_error'],
    ]);
    expect(detail(s, { str: 'abcd', list: [1], flag: true, lit: 'text' })).toEqual([
      {
        loc: ['body', 'str'],
        msg: 'String should have at most 3 characters',
        type: 'string_too_long',
        input: 'abcd',
        ctx: { max_length: 3 },
      },
    ]);
  });

  it('array positions appear in loc, as in ["body", 3, "tool_name"]', () => {
    const batch = z.array(z.object({ tool_name: z.string() }));
    expect(detail(batch, [{ tool_name: 'a' }, {}])[0]!.loc).toEqual(['body', 1, 'tool_name']);
  });

  it('discriminated unions: union_tag_invalid and union_tag_not_found at the union loc', () => {
    const ev = z.array(
      z.discriminatedUnion('kind', [z.object({ kind: z.literal('A') }), z.object({ kind: z.literal('B') })]),
    );
    expect(detail(ev, [{ kind: 'A' }, { kind: 'C' }])).toEqual([
      {
        loc: ['body', 1],
        msg: "Input tag 'C' found using 'kind' does not match any of the expected tags: 'A', 'B'",
        type: 'union_tag_invalid',
        input: { kind: 'C' },
        ctx: { discriminator: "'kind'", tag: 'C', expected_tags: "'A', 'B'" },
      },
    ]);
    expect(detail(ev, [{}])[0]).toMatchObject({ loc: ['body', 0], type: 'union_tag_not_found' });
  });

  it('custom checks name their own type or fall back to value_error', () => {
    const s = z.object({ a: z.string().refine((v) => v === 'ok', 'must be ok') });
    expect(detail(s, { a: 'no' })).toEqual([
      {
        loc: ['body', 'a'],
        msg: 'Value error, must be ok',
        type: 'value_error',
        input: 'no',
        ctx: { error: 'must be ok' },
      },
    ]);
    expect(detail(z.object({ n: queryInt() }), { n: 'x' }, 'query')[0]!.type).toBe('int_parsing');
  });
});
