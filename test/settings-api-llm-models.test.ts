/**
 * Models from the LLM endpoint (LLM_MODELS_FROM_ENDPOINT) through the real api: /api/v1/config/models/search
 * lists what the caller's LLM endpoint serves, asked with the caller's key, and only the caller's own model
 * when the endpoint does not answer. Called with the client generated from the published document.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { startTestApi, type TestApi } from './helpers/api';
import { testConfig } from './helpers/env';
import { publishedClient } from './helpers/published-client';

describe('models from the LLM endpoint', () => {
  let t: TestApi;
  let endpoint: http.Server;
  let url = '';
  const seen: (string | undefined)[] = [];

  beforeAll(async () => {
    endpoint = http.createServer((req, res) => {
      seen.push(req.headers.authorization);
      if (req.url !== '/v1/models') return void res.writeHead(404).end();
      res
        .writeHead(200, { 'Content-Type': 'application/json' })
        .end(JSON.stringify({ object: 'list', data: [{ id: 'vendor/served-1' }, { id: 'served-2' }, { nope: 1 }] }));
    });
    await new Promise<void>((r) => endpoint.listen(0, '127.0.0.1', () => r()));
    url = `http://127.0.0.1:${(endpoint.address() as AddressInfo).port}/v1`;
    t = await startTestApi(testConfig({ LLM_MODELS_FROM_ENDPOINT: 'true' }));
  });

  afterAll(async () => {
    await t?.close();
    await new Promise((r) => endpoint.close(r));
  });

  it("lists what the caller's LLM endpoint serves, asked with the caller's key", async () => {
    const u = await t.newUser();
    const api = publishedClient(t.url, u.key);
    await api.POST('/api/v1/settings', {
      body: { agent_settings_diff: { llm: { model: 'vendor/served-1', base_url: url } }, llm_api_key: 'sk-endpoint' },
    });
    const models = await api.GET('/api/v1/config/models/search');
    expect(models.data!.items.map((m) => `${m.provider ?? ''}/${m.name}`)).toEqual(['/served-2', 'vendor/served-1']);
    expect(seen).toEqual(['Bearer sk-endpoint']);
    // An endpoint that does not answer leaves the caller's own model.
    await api.POST('/api/v1/settings', {
      body: { agent_settings_diff: { llm: { model: 'x/only', base_url: 'http://127.0.0.1:9/v1' } } },
    });
    expect((await api.GET('/api/v1/config/models/search')).data!.items.map((m) => m.name)).toEqual(['only']);
  });
});
