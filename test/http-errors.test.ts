/** Every error body of the api, against the real servers. */
import pino from 'pino';
import { testConfig } from './helpers/env';
import { startTestApi, type TestApi } from './helpers/api';
import { raw, statusOf } from './helpers/raw-http';

describe('error bodies', () => {
  let t: TestApi;
  let key: string;
  const logLines: string[] = [];

  beforeAll(async () => {
    const logger = pino({ level: 'info' }, { write: (line: string) => void logLines.push(line) });
    t = await startTestApi(testConfig({ MAX_BODY_BYTES: '2000' }), logger);
    ({ key } = await t.newUser());
  });
  afterAll(() => t.close());

  describe('401 on /api routes', () => {
    it('without X-Access-Token', async () => {
      const r = await t.request('GET', '/api/v1/users/me');
      expect(r.status).toBe(401);
      expect(r.body).toEqual({ detail: 'Missing X-Access-Token header' });
    });

    it('with an unknown key', async () => {
      const r = await t.request('GET', '/api/v1/users/me', { key: 'acp_' + 'x'.repeat(43) });
      expect(r.status).toBe(401);
      expect(r.body).toEqual({ detail: 'Invalid API key' });
    });

    it('before validating anything', async () => {
      const r = await t.request('GET', '/api/v1/api-keys/search?limit=0');
      expect(r.status).toBe(401);
    });

    it('with a valid key the route answers', async () => {
      const r = await t.request('GET', '/api/v1/users/me', { key });
      expect(r.status).toBe(200);
      expect(r.body).toMatchObject({
        id: expect.any(String),
        email: expect.stringMatching(/@example\.com$/),
        current_org_id: expect.any(String),
        created_at: expect.any(String),
      });
    });
  });

  describe('422 HTTPValidationError', () => {
    it('query: every invalid parameter at once, each with loc, msg, type, input, ctx', async () => {
      const r = await t.request('GET', '/api/v1/api-keys/search?limit=101&page_id=%%%', { key });
      expect(r.status).toBe(422);
      expect(r.body).toEqual({
        detail: [
          {
            loc: ['query', 'page_id'],
            msg: 'Invalid page_id: pass the next_page_id of a previous page unchanged',
            type: 'value_error',
            input: '%%%',
            ctx: { error: 'invalid page_id' },
          },
          {
            loc: ['query', 'limit'],
            msg: 'Input should be less than or equal to 100',
            type: 'less_than_equal',
            input: '101',
            ctx: { le: 100 },
          },
        ],
      });
    });

    it('query: limit=0 is greater_than', async () => {
      const r = await t.request('GET', '/api/v1/api-keys/search?limit=0', { key });
      expect(r.status).toBe(422);
      expect(r.body.detail).toEqual([
        {
          loc: ['query', 'limit'],
          msg: 'Input should be greater than 0',
          type: 'greater_than',
          input: '0',
          ctx: { gt: 0 },
        },
      ]);
    });

    it('path: uuid_parsing', async () => {
      const r = await t.request('DELETE', '/api/v1/api-keys/not-a-uuid', { key });
      expect(r.status).toBe(422);
      expect(r.body.detail).toEqual([
        expect.objectContaining({
          loc: ['path', 'key_id'],
          type: 'uuid_parsing',
          input: 'not-a-uuid',
          msg: expect.stringMatching(/^Input should be a valid UUID/),
        }),
      ]);
    });

    it('body: missing and extra fields', async () => {
      const r = await t.request('POST', '/api/v1/api-keys', { key, body: { nam: 'x' } });
      expect(r.status).toBe(422);
      expect(r.body.detail).toEqual([
        { loc: ['body', 'name'], msg: 'Field required', type: 'missing', input: { nam: 'x' } },
        { loc: ['body', 'nam'], msg: 'Extra inputs are not permitted', type: 'extra_forbidden', input: 'x' },
      ]);
    });

    it('body: absent altogether', async () => {
      const r = await t.request('POST', '/api/v1/api-keys', { key });
      expect(r.status).toBe(422);
      expect(r.body.detail).toEqual([{ loc: ['body'], msg: 'Field required', type: 'missing', input: null }]);
    });

    it('body: malformed JSON has loc ["body"]', async () => {
      const r = await t.request('POST', '/api/v1/api-keys', {
        key,
        rawBody: '{"name": "x",',
        headers: { 'Content-Type': 'application/json' },
      });
      expect(r.status).toBe(422);
      expect(r.body.detail).toEqual([
        {
          loc: ['body'],
          msg: 'JSON decode error',
          type: 'json_invalid',
          input: {},
          ctx: { error: expect.any(String) },
        },
      ]);
    });

    it('changes nothing', async () => {
      const before = await t.database.db.collection('api_keys').countDocuments();
      await t.request('POST', '/api/v1/api-keys', { key, body: { name: 'x', extra: true } });
      expect(await t.database.db.collection('api_keys').countDocuments()).toBe(before);
    });
  });

  it('413 for a body over MAX_BODY_BYTES, before reading it whole', async () => {
    const r = await t.request('POST', '/api/v1/api-keys', { key, body: { name: 'x'.repeat(3000) } });
    expect(r.status).toBe(413);
    expect(r.body).toEqual({ detail: 'Request body is larger than the limit of 2000 bytes' });
  });

  it('415 for a body that is not JSON', async () => {
    const r = await t.request('POST', '/api/v1/api-keys', {
      key,
      rawBody: 'name=x',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
    });
    expect(r.status).toBe(415);
    expect(r.body.detail).toMatch(/application\/json/);
  });

  it('404 {detail} for an unknown route, 405 for a wrong method', async () => {
    const nf = await t.request('GET', '/api/v1/nothing-here', { key });
    expect(nf.status).toBe(404);
    expect(nf.body).toEqual({ detail: 'Not Found' });
    const na = await t.request('PUT', '/health');
    expect(na.status).toBe(405);
    expect(na.body).toEqual({ detail: 'Method Not Allowed' });
    // A standard method no route serves is as wrong as PUT: 405 with what is allowed; one of another protocol (WebDAV) is a 501.
    const trace = (await raw(t.url, 'TRACE /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n')).text;
    expect([statusOf(trace), /^allow: (.*)$/im.exec(trace)?.[1]?.trim()]).toEqual([405, 'HEAD, GET']);
    const unknown = (await raw(t.url, 'PROPFIND /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n')).text;
    expect(statusOf(unknown)).toBe(501);
  });

  it('500 {detail} without a stack; the stack goes to the log with the request id', async () => {
    // A damaged record makes the handler fail in a way no route expects.
    const { userId, key: damagedKey } = await t.newUser();
    await t.database.db
      .collection<{ _id: string }>('users')
      .updateOne({ _id: userId }, { $set: { created_at: 'not a date' } });
    const r = await t.request('GET', '/api/v1/users/me', {
      key: damagedKey,
      undocumented: 'a 500 is what no operation documents: this one is provoked to see its body',
    });
    expect(r.status).toBe(500);
    expect(r.body).toEqual({ detail: 'Internal Server Error' });
    const requestId = r.headers.get('x-request-id');
    expect(requestId).toBeTruthy();
    const logged = logLines
      .map((l) => JSON.parse(l))
      .find((l) => l.msg === 'unhandled error' && l.request_id === requestId);
    expect(logged.err.stack).toMatch(/TypeError/);
  });

  it('logs one line per request with its id, and honours an incoming X-Request-Id', async () => {
    const r = await t.request('GET', '/api/v1/sandbox-specs', { headers: { 'X-Request-Id': 'trace-abc-123' } });
    expect(r.headers.get('x-request-id')).toBe('trace-abc-123');
    const line = logLines
      .map((l) => JSON.parse(l))
      .find((l) => l.msg === 'request' && l.request_id === 'trace-abc-123');
    expect(line).toMatchObject({ method: 'GET', path: '/api/v1/sandbox-specs', status: 401 });
  });

  it('logs the probes answered 200 (/health, /ready) below info: a supervisor asks every few seconds', async () => {
    for (const probe of ['/health', '/ready']) {
      const r = await t.request('GET', probe, { headers: { 'X-Request-Id': `probe-${probe.slice(1)}` } });
      expect(r.status).toBe(200);
    }
    const probeLines = logLines.map((l) => JSON.parse(l)).filter((l) => String(l.request_id).startsWith('probe-'));
    expect(probeLines).toEqual([]);
  });
});
