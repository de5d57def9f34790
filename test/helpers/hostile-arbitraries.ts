/**
 * fast-check arbitraries of hostile requests, derived from the service's own OpenAPI 3.1 document: for
 * every operation, path parameters, query strings and bodies that are near-valid (built from the
 * schemas, then broken in one place), plainly wrong (other types, sizes, encodings), or malicious
 * (deep nesting, `$` and dotted keys, `__proto__`, malformed percent-escapes, huge strings).
 */
import fc from 'fast-check';

type Schema = Record<string, any>;
type Doc = { paths: Record<string, Record<string, any>>; components?: { schemas?: Record<string, Schema> } };

export interface Operation {
  method: string;
  /** OpenAPI path with `{name}` parameters. */
  path: string;
  operationId: string;
  security: 'APIKeyHeader' | 'SessionAPIKeyHeader' | null;
  pathParams: { name: string; schema: Schema }[];
  queryParams: { name: string; schema: Schema }[];
  body: Schema | null;
}

export interface HostileRequest {
  method: string;
  /** Path and query as sent (already encoded, possibly malformed on purpose). */
  url: string;
  headers: Record<string, string>;
  body?: string;
  /** Which credential the request carries, chosen by the test. */
  auth: 'own' | 'none' | 'wrong' | 'other-user';
}

const METHODS = ['get', 'post', 'put', 'patch', 'delete'];

export function operationsOf(doc: Doc): Operation[] {
  const ops: Operation[] = [];
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const method of METHODS) {
      const op = item[method];
      if (!op) continue;
      const params = (op.parameters ?? []) as { name: string; in: string; schema: Schema }[];
      const security = op.security?.[0] ? (Object.keys(op.security[0])[0] as Operation['security']) : null;
      ops.push({
        method: method.toUpperCase(),
        path,
        operationId: op.operationId,
        security,
        pathParams: params.filter((p) => p.in === 'path'),
        queryParams: params.filter((p) => p.in === 'query'),
        body: op.requestBody?.content?.['application/json']?.schema ?? null,
      });
    }
  }
  return ops;
}

/** Strings that have broken something somewhere: encodings, sizes, operators, traversal, controls. */
const NASTY_STRINGS = [
  '',
  ' ',
  '%',
  '%E0%A4%A',
  '%00',
  '%2F..%2F..%2Fetc%2Fpasswd',
  '../../etc/passwd',
  '$where',
  '{"$gt": ""}',
  'a.b.c',
  '__proto__',
  'constructor',
  'null',
  'undefined',
  'NaN',
  '-1',
  '0',
  '1e309',
  '9007199254740993',
  '0001-01-01T00:00:00',
  '9999-12-31T23:59:59.999999Z',
  '2024-02-30T00:00:00Z',
  '00000000-0000-0000-0000-000000000000',
  '\u0000',
  '\uD800',
  '\u202E',
  'x'.repeat(10_000),
  '<script>alert(1)</script>',
  "' OR 1=1 --",
];

const nastyString = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom(...NASTY_STRINGS) },
  { weight: 2, arbitrary: fc.string({ maxLength: 40 }) },
  { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 40 }) },
  { weight: 1, arbitrary: fc.uuid() },
);

/** A JSON value nested `depth` levels. */
const nestedValue = (depth: number): unknown => {
  let v: unknown = 0;
  for (let i = 0; i < depth; i++) v = i % 2 ? [v] : { k: v };
  return v;
};

/** Objects whose keys MongoDB-wire servers refuse or JavaScript treats specially. */
const nastyObject = fc.dictionary(
  fc.constantFrom('$gt', '$where', 'a.b', '.', '$', '__proto__', 'constructor', '%24', '\u0000k', 'ok'),
  fc.jsonValue({ maxDepth: 2 }),
  {
    maxKeys: 4,
  },
);

const anyJson = fc.oneof(
  { weight: 4, arbitrary: fc.jsonValue({ maxDepth: 3 }) },
  { weight: 1, arbitrary: nastyObject },
  { weight: 1, arbitrary: fc.constantFrom(nestedValue(63), nestedValue(65), nestedValue(300)) },
  { weight: 1, arbitrary: nastyString },
);

function resolve(schema: Schema, doc: Doc): Schema {
  let s = schema;
  for (let i = 0; i < 10 && s?.$ref; i++) s = doc.components?.schemas?.[String(s.$ref).split('/').pop()!] ?? {};
  return s ?? {};
}

/** Values that satisfy the schema most of the time (a starting point to break). */
export function valid(schema: Schema, doc: Doc, depth = 0): fc.Arbitrary<unknown> {
  const s = resolve(schema, doc);
  if (depth > 6) return fc.constant(null);
  if (s.const !== undefined) return fc.constant(s.const);
  if (s.enum) return fc.constantFrom(...(s.enum as unknown[]));
  const alternatives = (s.anyOf ?? s.oneOf) as Schema[] | undefined;
  if (alternatives?.length) return fc.oneof(...alternatives.map((a) => valid(a, doc, depth + 1)));
  if (s.allOf?.length) return valid(s.allOf[0], doc, depth + 1);
  const type = Array.isArray(s.type) ? (s.type.find((t: string) => t !== 'null') ?? 'null') : s.type;
  switch (type) {
    case 'string':
      if (s.format === 'uuid') return fc.uuid();
      if (s.format === 'date-time')
        return fc
          .date({ min: new Date('2000-01-01'), max: new Date('2100-01-01'), noInvalidDate: true })
          .map((d) => d.toISOString());
      return fc.string({ minLength: s.minLength ?? 0, maxLength: Math.min(s.maxLength ?? 20, 20) });
    case 'integer':
      return fc.integer({
        min: s.minimum ?? (s.exclusiveMinimum !== undefined ? s.exclusiveMinimum + 1 : -5),
        max: s.maximum ?? (s.exclusiveMaximum !== undefined ? s.exclusiveMaximum - 1 : 1000),
      });
    case 'number':
      return fc.double({ min: s.minimum ?? -5, max: s.maximum ?? 1000, noNaN: true });
    case 'boolean':
      return fc.boolean();
    case 'null':
      return fc.constant(null);
    case 'array':
      return fc.array(valid(s.items ?? {}, doc, depth + 1), {
        minLength: s.minItems ?? 0,
        maxLength: Math.min(s.maxItems ?? 3, 3),
      });
    case 'object': {
      const props = Object.entries((s.properties ?? {}) as Record<string, Schema>);
      if (props.length === 0)
        return fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 1 }), { maxKeys: 3 });
      const required = new Set((s.required ?? []) as string[]);
      return fc.record(Object.fromEntries(props.map(([k, v]) => [k, valid(v, doc, depth + 1)])), {
        requiredKeys: props.map(([k]) => k).filter((k) => required.has(k)),
      });
    }
    default:
      return fc.jsonValue({ maxDepth: 2 });
  }
}

/** A near-valid value with one place broken: a field replaced by hostile JSON, removed, or added. */
function broken(schema: Schema, doc: Doc): fc.Arbitrary<unknown> {
  return fc
    .tuple(valid(schema, doc), anyJson, fc.nat(), fc.constantFrom('replace', 'remove', 'add'))
    .map(([value, junk, n, how]) => {
      if (value === null || typeof value !== 'object' || Array.isArray(value)) return junk;
      const obj = { ...(value as Record<string, unknown>) };
      const keys = Object.keys(obj);
      const k = keys.length ? keys[n % keys.length]! : 'extra';
      if (how === 'remove') delete obj[k];
      else if (how === 'replace') obj[k] = junk;
      else
        Object.defineProperty(obj, ['$set', 'a.b', '__proto__', 'unknown_field'][n % 4]!, {
          value: junk,
          enumerable: true,
        });
      return obj;
    });
}

/** Percent-encodes the UTF-8 bytes of any string, lone surrogates included (encodeURIComponent throws on those). */
const encode = (v: string) =>
  Array.from(Buffer.from(v, 'utf8'), (b) =>
    /[A-Za-z0-9\-_.~]/.test(String.fromCharCode(b))
      ? String.fromCharCode(b)
      : `%${b.toString(16).toUpperCase().padStart(2, '0')}`,
  ).join('');

/** A path parameter: valid, foreign, nonsense, or a malformed escape left as it is. */
function pathValue(p: { schema: Schema }, doc: Doc, foreignIds: string[]): fc.Arbitrary<string> {
  return fc.oneof(
    valid(p.schema, doc).map((v) => encode(String(v))),
    nastyString.map(encode),
    fc.constantFrom('%E0%A4%A', '%', '%zz', '..', '%2e%2e', 'a%2Fb'),
    ...(foreignIds.length ? [fc.constantFrom(...foreignIds)] : []),
  );
}

function queryString(params: { name: string; schema: Schema }[], doc: Doc): fc.Arbitrary<string> {
  const one = (p: { name: string; schema: Schema }) =>
    fc.oneof(
      {
        weight: 3,
        arbitrary: valid(p.schema, doc).map((v) =>
          Array.isArray(v)
            ? v.map((x) => `${p.name}=${encode(String(x))}`).join('&')
            : `${p.name}=${encode(String(v))}`,
        ),
      },
      { weight: 2, arbitrary: nastyString.map((v) => `${p.name}=${encode(v)}`) },
      {
        weight: 1,
        arbitrary: fc
          .array(nastyString, { minLength: 2, maxLength: 150 })
          .map((vs) => vs.map((v) => `${p.name}=${encode(v)}`).join('&')),
      },
      { weight: 1, arbitrary: fc.constantFrom(`${p.name}=%`, `${p.name}`, `${p.name}[]=1`, `${p.name}[$gt]=`) },
    );
  const extra = fc.constantFrom('', 'unknown=1', '__proto__[x]=1', 'page_id=%ZZ', 'limit=1e9');
  return fc
    .tuple(
      fc.subarray(params).chain((ps) => (ps.length ? fc.tuple(...ps.map(one)) : fc.constant([] as string[]))),
      extra,
    )
    .map(([parts, x]) => [...parts, x].filter(Boolean).join('&'));
}

type BodyText = { body?: string; contentType?: string };

function bodyText(schema: Schema | null, doc: Doc): fc.Arbitrary<BodyText> {
  const json = (a: fc.Arbitrary<unknown>) =>
    a.map((v): BodyText => ({ body: JSON.stringify(v), contentType: 'application/json' }));
  return fc.oneof(
    { weight: 4, arbitrary: json(schema ? broken(schema, doc) : anyJson) },
    { weight: 2, arbitrary: json(schema ? valid(schema, doc) : anyJson) },
    { weight: 1, arbitrary: json(anyJson) },
    {
      weight: 1,
      arbitrary: fc
        .constantFrom('{', '[1,', '{"a":1}}', '\u0000', 'null', '"', 'nul', '{"a":1,"a":2}')
        .map((b) => ({ body: b, contentType: 'application/json' })),
    },
    { weight: 1, arbitrary: fc.constant({ body: '['.repeat(50_000), contentType: 'application/json' }) },
    { weight: 1, arbitrary: fc.constant({ body: 'a=1&b=2', contentType: 'application/x-www-form-urlencoded' }) },
    { weight: 1, arbitrary: fc.constant<BodyText>({}) },
  );
}

/** Hostile requests for one operation; `foreignIds` are ids that belong to another user. */
export function requestsFor(op: Operation, doc: Doc, foreignIds: string[]): fc.Arbitrary<HostileRequest> {
  const pathArb = op.pathParams.length
    ? fc
        .tuple(...op.pathParams.map((p) => pathValue(p, doc, foreignIds)))
        .map((values) => op.pathParams.reduce((path, p, i) => path.replace(`{${p.name}}`, values[i]!), op.path))
    : fc.constant(op.path);
  const auth = op.security
    ? fc.constantFrom<HostileRequest['auth']>('own', 'own', 'own', 'own', 'none', 'wrong', 'other-user')
    : fc.constant<HostileRequest['auth']>('none');
  const withBody = ['POST', 'PUT', 'PATCH', 'DELETE'].includes(op.method);
  return fc
    .tuple(
      pathArb,
      queryString(op.queryParams, doc),
      withBody ? bodyText(op.body, doc) : fc.constant<BodyText>({}),
      auth,
    )
    .map(([path, query, b, who]): HostileRequest => ({
      method: op.method,
      url: query ? `${path}?${query}` : path,
      headers: b.contentType ? { 'Content-Type': b.contentType } : ({} as Record<string, string>),
      ...(b.body !== undefined ? { body: b.body } : {}),
      auth: who,
    }));
}
