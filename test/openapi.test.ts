/** The OpenAPI document is generated from the zod schemas, valid, and describes what the api does. */
import { Validator } from '@seriousme/openapi-schema-validator';
import { startTestApi, type TestApi } from './helpers/api';
import { answerCheck } from './helpers/openapi-answers';

describe('OpenAPI', () => {
  let t: TestApi;
  let doc: any;
  beforeAll(async () => {
    t = await startTestApi();
    const r = await t.request('GET', '/openapi.json');
    expect(r.status).toBe(200);
    doc = r.body;
  });
  afterAll(() => t.close());

  it('is a valid OpenAPI 3.1 document', async () => {
    const validator = new Validator();
    const result = await validator.validate(structuredClone(doc));
    expect(result.errors).toBeUndefined();
    expect(result.valid).toBe(true);
    expect(validator.version).toBe('3.1');
  });

  it("declares version 0.0.1, the APIKeyHeader scheme on X-Access-Token, and the runtimes' session key", () => {
    expect(doc.info.version).toBe('0.0.1');
    expect(doc.components.securitySchemes).toEqual({
      APIKeyHeader: { type: 'apiKey', in: 'header', name: 'X-Access-Token' },
      SessionAPIKeyHeader: { type: 'apiKey', in: 'header', name: 'X-Session-API-Key' },
    });
  });

  it('every /api operation needs APIKeyHeader (webhooks: the session key) and documents 401', () => {
    const ops = Object.entries(doc.paths as Record<string, Record<string, any>>)
      .filter(([p]) => p.startsWith('/api/'))
      .flatMap(([p, methods]) => Object.values(methods).map((op) => [p, op] as const));
    expect(ops.length).toBeGreaterThanOrEqual(8);
    for (const [p, op] of ops) {
      expect(op.security).toEqual([
        p.startsWith('/api/v1/webhooks/') ? { SessionAPIKeyHeader: [] } : { APIKeyHeader: [] },
      ]);
      expect(op.responses['401']).toBeDefined();
    }
    const search = doc.paths['/api/v1/conversation/{conversation_id}/events/search'].get;
    expect(search.parameters.map((p: any) => p.name).sort()).toEqual(
      ['conversation_id', 'kind__eq', 'limit', 'page_id', 'sort_order', 'timestamp__gte', 'timestamp__lt'].sort(),
    );
    expect(search.responses['200'].content['application/json'].schema).toEqual({
      $ref: '#/components/schemas/EventPage',
    });
    expect(doc.components.schemas.Event.oneOf ?? doc.components.schemas.Event.anyOf).toHaveLength(19);
    const keys = doc.paths['/api/v1/api-keys/search'].get;
    expect(keys.responses['422'].content['application/json'].schema).toEqual({
      $ref: '#/components/schemas/HTTPValidationError',
    });
    expect(keys.parameters.find((p: any) => p.name === 'limit').schema).toMatchObject({
      type: 'integer',
      minimum: 1,
      maximum: 100,
      default: 100,
    });
  });

  it('shows no value made at build time as a default (a UUID, a date-time): events say what is filled in instead', () => {
    const UUID = /^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$/i;
    const DATE_TIME = /^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}/;
    const found: string[] = [];
    let defaults = 0;
    const walk = (node: unknown, at: string) => {
      if (Array.isArray(node)) return node.forEach((v, i) => walk(v, `${at}/${i}`));
      if (node === null || typeof node !== 'object') return;
      for (const [k, v] of Object.entries(node)) {
        if (k === 'default') {
          defaults++;
          if (typeof v === 'string' && (UUID.test(v) || DATE_TIME.test(v))) found.push(`${at}: ${v}`);
        }
        walk(v, `${at}/${k}`);
      }
    };
    walk(doc, '#');
    expect(found).toEqual([]);
    expect(defaults).toBeGreaterThan(10); // the walk saw the document's other defaults
    for (const kind of ['MessageEvent', 'PauseEvent', 'ObservationEvent']) {
      const { id, timestamp } = doc.components.schemas[kind].properties;
      expect(id).not.toHaveProperty('default');
      expect(id.description).toMatch(/a new UUID when absent/);
      expect(timestamp).not.toHaveProperty('default');
      expect(timestamp).toMatchObject({ format: 'date-time' });
      expect(timestamp.description).toMatch(/the time of receipt when absent/);
      expect(doc.components.schemas[kind].required ?? []).not.toContain('id');
    }
  });

  it("its own answers validate against it: a batch get's null for an unknown id, an organization's masked key", async () => {
    const check = answerCheck(doc);
    const { key } = await t.newUser();
    const unknown = '00000000-0000-4000-8000-000000000000';
    for (const [path, query] of [
      ['/api/v1/sandboxes', `id=${unknown}`],
      ['/api/v1/sandbox-specs', 'id=nope'],
      ['/api/v1/app-conversations', `ids=${unknown}`],
      ['/api/v1/app-conversations/start-tasks', `ids=${unknown}`],
    ] as const) {
      const r = await t.request('GET', `${path}?${query}`, { key });
      expect({ path, status: r.status, body: r.body }).toEqual({ path, status: 200, body: [null] });
      expect({ path, errors: check.errors('GET', path, 200, r.body) }).toEqual({ path, errors: [] });
    }
    const me = await t.request('GET', '/api/v1/users/me', { key });
    const orgId = me.body.org_id ?? me.body.current_org_id ?? me.body.organization?.id;
    expect(typeof orgId).toBe('string');
    const patched = await t.request('PATCH', `/api/organizations/${orgId}`, {
      key,
      body: { llm_api_key: 'sk-secret' },
    });
    expect(patched.status).toBe(200);
    expect(patched.body.agent_settings.llm.api_key).toBe('**********');
    expect(check.errors('PATCH', '/api/organizations/{org_id}', 200, patched.body)).toEqual([]);
  });

  it('documents what Node, the body reader and the answer deadline answer before a route: 431 and 503 on every operation, 413 and 415 where a body is read', () => {
    const missing: string[] = [];
    for (const [p, ops] of Object.entries<any>(doc.paths))
      for (const [method, op] of Object.entries<any>(ops)) {
        const wanted = ['431', '503', ...(op.requestBody ? ['413', '415'] : [])];
        for (const status of wanted) if (!op.responses[status]) missing.push(`${method.toUpperCase()} ${p} ${status}`);
      }
    expect(missing).toEqual([]);
  });

  it('has the HTTPValidationError shape of SPEC 2.7', () => {
    const ve = doc.components.schemas.ValidationError;
    expect(ve.required).toEqual(expect.arrayContaining(['loc', 'msg', 'type']));
    expect(Object.keys(ve.properties).sort()).toEqual(['ctx', 'input', 'loc', 'msg', 'type']);
    expect(doc.components.schemas.HTTPValidationError.properties.detail.items).toEqual({
      $ref: '#/components/schemas/ValidationError',
    });
  });

  it('serves a readable docs page with its assets', async () => {
    const page = await fetch(`${t.url}/docs`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/text\/html/);
    const html = await page.text();
    expect(html).toContain("url: '/openapi.json'");
    for (const asset of ['swagger-ui.css', 'swagger-ui-bundle.js']) {
      const r = await fetch(`${t.url}/docs/${asset}`);
      expect(r.status).toBe(200);
      expect((await r.arrayBuffer()).byteLength).toBeGreaterThan(1000);
    }
    expect((await fetch(`${t.url}/docs/package.json`)).status).toBe(404);
  });
});
