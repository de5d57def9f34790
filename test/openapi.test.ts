/** The OpenAPI document is generated from the zod schemas, valid, and describes what the api does. */
import { Validator } from '@seriousme/openapi-schema-validator';
import { startTestApi, type TestApi } from './helpers/api';

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

  it('declares version 0.0.1 and the APIKeyHeader scheme on X-Access-Token', () => {
    expect(doc.info.version).toBe('0.0.1');
    expect(doc.components.securitySchemes).toEqual({ APIKeyHeader: { type: 'apiKey', in: 'header', name: 'X-Access-Token' } });
  });

  it('every /api operation needs APIKeyHeader and documents 401 and 422', () => {
    const ops = Object.entries(doc.paths as Record<string, Record<string, any>>)
      .filter(([p]) => p.startsWith('/api/'))
      .flatMap(([, methods]) => Object.values(methods));
    expect(ops.length).toBeGreaterThanOrEqual(4);
    for (const op of ops) {
      expect(op.security).toEqual([{ APIKeyHeader: [] }]);
      expect(op.responses['401']).toBeDefined();
    }
    const search = doc.paths['/api/v1/api-keys/search'].get;
    expect(search.responses['422'].content['application/json'].schema).toEqual({ $ref: '#/components/schemas/HTTPValidationError' });
    expect(search.parameters.find((p: any) => p.name === 'limit').schema).toMatchObject({ type: 'integer', minimum: 1, maximum: 100, default: 100 });
  });

  it('has the HTTPValidationError shape of SPEC 2.7', () => {
    const ve = doc.components.schemas.ValidationError;
    expect(ve.required).toEqual(expect.arrayContaining(['loc', 'msg', 'type']));
    expect(Object.keys(ve.properties).sort()).toEqual(['ctx', 'input', 'loc', 'msg', 'type']);
    expect(doc.components.schemas.HTTPValidationError.properties.detail.items).toEqual({ $ref: '#/components/schemas/ValidationError' });
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
