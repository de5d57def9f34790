/**
 * Starts as a client generated from the published document sends them (issue 18): null for every field it
 * leaves out, the published SendMessageRequest as initial_message, the published start-task sort orders.
 * The api only accepts the starts here (no worker runs them: the tasks stay WORKING on this test's own
 * task queue); what a start does is tested in app-conversations.test.ts.
 */
import { randomUUID } from 'node:crypto';
import { startTestApi, type TestApi } from './helpers/api';
import { publishedClient } from './helpers/published-client';

describe('start requests of the published document', () => {
  let t: TestApi;
  let key: string;
  let client: ReturnType<typeof publishedClient>;
  beforeAll(async () => {
    t = await startTestApi();
    ({ key } = await t.newUser());
    client = publishedClient(t.url, key);
  });
  afterAll(() => t.close());

  it('null for every field it leaves out is "not given": the start is accepted with the defaults', async () => {
    const { data, error, response } = await client.POST('/api/v1/app-conversations', {
      body: {
        sandbox_id: null,
        conversation_id: null,
        initial_message: null,
        system_message_suffix: null,
        processors: null,
        llm_model: null,
        agent_profile_id: null,
        selected_repository: null,
        selected_branch: null,
        git_provider: null,
        suggested_task: null,
        title: null,
        trigger: null,
        parent_conversation_id: null,
        public: null,
        observability_metadata: null,
        observability_tags: null,
        observability_span_name: null,
        plugins: null,
        secrets: null,
        agent_type: 'default', // the generated types require the fields that have a default
      },
    });
    expect(error).toBeUndefined();
    expect(response.status).toBe(200);
    expect(data!.status).toBe('WORKING');
    const echo = data!.request as Record<string, unknown>;
    expect(echo).toMatchObject({
      processors: [],
      pr_number: [],
      agent_type: 'default',
      secrets: {},
      git_provider: null,
      trigger: 'platform_api',
    });
    // Nothing the client sent as null is echoed: absent, as if left out.
    for (const field of ['title', 'initial_message', 'suggested_task', 'plugins', 'sandbox_id', 'conversation_id'])
      expect(echo).not.toHaveProperty(field);
  });

  it('initial_message is the published SendMessageRequest: any role, image content, run false unless sent', async () => {
    const id = randomUUID();
    const { data, response } = await client.POST('/api/v1/app-conversations', {
      body: {
        conversation_id: id,
        initial_message: {
          role: 'system',
          content: [
            { type: 'text', text: 'Describe it.', cache_prompt: false },
            { type: 'image', image_urls: ['https://example.com/a.png'], cache_prompt: false },
          ],
          run: false,
        },
        plugins: [{ source: 'github:org/plugin', ref: null, repo_path: null, parameters: null }],
        agent_type: 'default',
      },
    });
    expect(response.status).toBe(200);
    expect(data!.request).toMatchObject({
      conversation_id: id,
      initial_message: {
        role: 'system',
        content: [
          { type: 'text', text: 'Describe it.', cache_prompt: false },
          { type: 'image', image_urls: ['https://example.com/a.png'], cache_prompt: false },
        ],
        run: false,
      },
      plugins: [{ source: 'github:org/plugin', parameters: {} }],
    });
    // Read back as stored: the same.
    const read = await t.request('GET', `/api/v1/app-conversations/start-tasks?ids=${id}`, { key });
    expect(read.body[0].request.initial_message).toEqual((data!.request as any).initial_message);
    // A client that leaves run out (the generated types always send it) gets the published default.
    const bare = await t.request('POST', '/api/v1/app-conversations', {
      key,
      body: { initial_message: { content: [{ text: 'Hi.' }] } },
    });
    expect(bare.status).toBe(200);
    expect(bare.body.request.initial_message).toEqual({
      role: 'user',
      content: [{ type: 'text', text: 'Hi.', cache_prompt: false }],
      run: false,
    });
  });

  it('initial_message may leave content out, as published: accepted, echoed with no content', async () => {
    const { data, response } = await client.POST('/api/v1/app-conversations', {
      body: { initial_message: { role: 'user', run: true }, agent_type: 'default' },
    });
    expect(response.status).toBe(200);
    expect(data!.request).toMatchObject({ initial_message: { role: 'user', content: [], run: true } });
  });

  it('stays closed: an unknown field, even null, is a 422; so is a role the published schema does not have', async () => {
    const unknown = await t.request('POST', '/api/v1/app-conversations', {
      key,
      body: { title: null, surprise: null },
    });
    expect(unknown.status).toBe(422);
    expect(unknown.body.detail).toEqual([
      expect.objectContaining({ loc: ['body', 'surprise'], type: 'extra_forbidden' }),
    ]);
    const role = await t.request('POST', '/api/v1/app-conversations', {
      key,
      body: { initial_message: { role: 'robot', content: [{ text: 'x' }] } },
    });
    expect(role.status).toBe(422);
    expect(role.body.detail[0].loc).toEqual(['body', 'initial_message', 'role']);
  });

  it('start-task search takes the four published sort orders and pages in each', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const r = await client.POST('/api/v1/app-conversations', {
        body: { title: `sorted ${i}`, agent_type: 'default' },
      });
      ids.push(r.data!.id!);
    }
    for (const sort_order of ['CREATED_AT', 'CREATED_AT_DESC', 'UPDATED_AT', 'UPDATED_AT_DESC'] as const) {
      const seen: string[] = [];
      let page_id: string | undefined;
      for (let pages = 0; pages < 20; pages++) {
        const { data, response } = await client.GET('/api/v1/app-conversations/start-tasks/search', {
          params: { query: { sort_order, limit: 1, ...(page_id ? { page_id } : {}) } },
        });
        expect(response.status).toBe(200);
        seen.push(...data!.items.map((i) => i.id!));
        if (!data!.next_page_id) break;
        page_id = data!.next_page_id;
      }
      const mine = seen.filter((id) => ids.includes(id));
      expect([sort_order, mine]).toEqual([sort_order, sort_order.endsWith('_DESC') ? [...ids].reverse() : ids]);
      expect(new Set(seen).size).toBe(seen.length);
    }
    const bad = await t.request('GET', '/api/v1/app-conversations/start-tasks/search?sort_order=TITLE', { key });
    expect(bad.status).toBe(422);
  });

  it("the served document shows the start request's optional fields as nullable", async () => {
    const doc = (await t.request('GET', '/openapi.json')).body;
    const start = doc.components.schemas.AppConversationStartRequest;
    for (const field of [
      'sandbox_id',
      'initial_message',
      'processors',
      'suggested_task',
      'plugins',
      'secrets',
      'observability_metadata',
    ]) {
      expect([field, start.properties[field].anyOf?.some((s: any) => s.type === 'null')]).toEqual([field, true]);
    }
    expect(start.properties.initial_message.anyOf[0]).toEqual({ $ref: '#/components/schemas/SendMessageRequest' });
    expect(doc.components.schemas.SendMessageRequest.properties.run.default).toBe(false);
  });
});
