/**
 * Regression tests of issue 13's defects in request bodies and what they store, against the real api:
 * each input here once stopped the process, held a connection, or answered 500 or a body that is not
 * JSON. Deep nesting, $ and dotted keys, U+0000, pages of large events, transfer codings, bodies never
 * read or never finished; and timestamps of years 0001-0099 in events and queries.
 */
import { sample } from './helpers/event-samples';
import { healthy, key, t, useHostileInput, userId } from './helpers/hostile-input';
import { bodyOf, raw, statusOf } from './helpers/raw-http';
import { connect } from './helpers/ws-client';

function nested(depth: number, leaf: unknown = 1): unknown {
  let v = leaf;
  for (let i = 0; i < depth; i++) v = i % 2 ? [v] : { a: v };
  return v;
}

describe('hostile input at the edge (issue 13)', () => {
  useHostileInput();

  describe('bodies', () => {
    it('JSON nested 10,000 deep is a 422 on every route that reads a body, not a 500', async () => {
      const deep = '{"a":['.repeat(5_000) + '1' + ']}'.repeat(5_000); // 10,000 deep
      const { conversationId, sessionKey } = await t.newConversation(userId);
      const me = await t.request('GET', '/api/v1/users/me', { key });
      const routes: [string, string, Record<string, string>][] = [
        ['POST', '/api/v1/api-keys', { 'X-Access-Token': key }],
        ['PATCH', `/api/organizations/${me.body.current_org_id}`, { 'X-Access-Token': key }],
        ['POST', `/api/v1/webhooks/events/${conversationId}`, { 'X-Session-API-Key': sessionKey }],
      ];
      for (const [method, path, headers] of routes) {
        const r = await t.request(method, path, {
          rawBody: deep,
          headers: { ...headers, 'Content-Type': 'application/json' },
        });
        expect({ path, status: r.status }).toEqual({ path, status: 422 });
        expect(r.body.detail).toEqual([
          expect.objectContaining({ loc: ['body'], type: 'json_invalid', msg: 'JSON nested deeper than 64 levels' }),
        ]);
      }
    });

    it('nesting inside the limit in free-form fields is stored and echoed, the ACP raw input included', async () => {
      const { conversationId, sessionKey } = await t.newConversation(userId);
      const event = sample('ACPToolCallEvent', { raw_input: nested(60, 'leaf') });
      expect((await t.ingest(conversationId, sessionKey, [event])).status).toBe(200);
      const got = await t.request('GET', `/api/v1/conversation/${conversationId}/events?id=${event.id as string}`, {
        key,
      });
      expect(got.body[0].raw_input).toEqual(nested(60, 'leaf'));
      const me = await t.request('GET', '/api/v1/users/me', { key });
      const bad = await t.request('PATCH', `/api/organizations/${me.body.current_org_id}`, {
        key,
        body: { agent_settings: { llm: { temperature: nested(55) } } },
      });
      expect(bad.status).toBe(422); // echoed in the 422 without overflowing anything
      expect(bad.body.detail[0].input).toEqual(nested(55));
    });

    it('keys starting with $ or holding a dot in free-form objects round-trip; __proto__ is dropped by validation, harmlessly', async () => {
      const me = await t.request('GET', '/api/v1/users/me', { key });
      const orgId = me.body.current_org_id as string;
      const overrides = JSON.parse(
        '{"$where": {"a.b": [{"$gt": 1}]}, "50%.off": true, "__proto__": {"x": 1}, "%24": "literal"}',
      );
      const headers = { '$x-header': 'v', 'x.y': 'w' };
      const r = await t.request('PATCH', `/api/organizations/${orgId}`, {
        key,
        rawBody: JSON.stringify({
          agent_settings: { llm: { capability_overrides: overrides, extra_headers: headers } },
        }),
        headers: { 'Content-Type': 'application/json' },
      });
      expect(r.status).toBe(200);
      const again = await t.request('GET', `/api/organizations/${orgId}`, { key });
      for (const body of [r.body, again.body]) {
        // zod's record parser drops a key named __proto__ (it never becomes a prototype, nor is stored).
        expect(Object.keys(body.agent_settings.llm.capability_overrides).sort()).toEqual(['$where', '%24', '50%.off']);
        expect(body.agent_settings.llm.capability_overrides.x).toBeUndefined();
        expect(body.agent_settings.llm.capability_overrides.$where).toEqual({ 'a.b': [{ $gt: 1 }] });
        expect(body.agent_settings.llm.capability_overrides['%24']).toBe('literal');
        expect(body.agent_settings.llm.extra_headers).toEqual(headers);
      }
    });

    it('nested arrays, deep mixes and $ and dotted keys in every free-form field round-trip unchanged (FerretDB refuses [[...]] as stored)', async () => {
      // The values FerretDB refuses as stored (an array in an array), next to keys it refuses and the
      // key the stores wrap inner arrays in, given by a user.
      const free = JSON.parse(
        '{"a":[[1]],"m":[[[1,[2]],[]],{"b":[[{"c.d":[[null]]}]]}],"$k":{"%A":[1]},"%A":[[true]],"x":{"y":[["z"]]}}',
      );
      // A user of its own: an organization PATCH merges into what the other tests stored.
      const { key } = await t.newUser();
      const me = await t.request('GET', '/api/v1/users/me', { key });
      const orgId = me.body.current_org_id as string;
      const org = await t.request('PATCH', `/api/organizations/${orgId}`, {
        key,
        body: { agent_settings: { llm: { capability_overrides: free, gateway_extra_body: free }, mcp_config: free } },
      });
      expect(org.status).toBe(200);
      const orgAgain = await t.request('GET', `/api/organizations/${orgId}`, { key });
      for (const body of [org.body, orgAgain.body]) {
        expect(body.agent_settings.llm.capability_overrides).toEqual(free);
        expect(body.agent_settings.llm.gateway_extra_body).toEqual(free);
        expect(body.agent_settings.mcp_config).toEqual(free);
      }

      const settings = await t.request('POST', '/api/v1/settings', {
        key,
        body: { agent_settings_diff: { llm: { gateway_extra_body: free }, mcp_config: free } },
      });
      expect(settings.status).toBe(200);
      const settingsAgain = await t.request('GET', '/api/v1/settings', { key });
      expect(settingsAgain.body.agent_settings.llm.gateway_extra_body).toEqual(free);
      expect(settingsAgain.body.agent_settings.mcp_config).toEqual(free);

      const profile = await t.request('POST', '/api/v1/settings/profiles/nested', {
        key,
        body: { llm: { model: 'm', gateway_extra_body: free, capability_overrides: free } },
      });
      expect(profile.status).toBe(201);
      const profileAgain = await t.request('GET', '/api/v1/settings/profiles/nested', { key });
      expect(profileAgain.body.config.gateway_extra_body).toEqual(free);
      expect(profileAgain.body.config.capability_overrides).toEqual(free);

      const start = await t.request('POST', '/api/v1/app-conversations', {
        key,
        body: { plugins: [{ source: 'github:owner/plugin', parameters: free }] }, // observability_metadata: scalars only
      });
      expect(start.status).toBe(200);
      const [task] = (
        await t.request('GET', `/api/v1/app-conversations/start-tasks?ids=${start.body.id as string}`, { key })
      ).body;
      expect(task.request.plugins[0].parameters).toEqual(free);
    });

    it('a start whose plugin parameters and observability metadata have $ and dotted keys is stored and echoed as sent', async () => {
      const parameters = { 'a.b': { $in: [1] }, $x: 'y' };
      const metadata = { 'team.name': 'core', $cost: 1 };
      const body = { plugins: [{ source: 'github:owner/plugin', parameters }], observability_metadata: metadata };
      const r = await t.request('POST', '/api/v1/app-conversations', { key, body });
      expect(r.status).toBe(200);
      const [again] = (
        await t.request('GET', `/api/v1/app-conversations/start-tasks?ids=${r.body.id as string}`, { key })
      ).body;
      for (const task of [r.body, again]) {
        expect(task.request.plugins[0].parameters).toEqual(parameters);
        expect(task.request.observability_metadata).toEqual(metadata);
      }
    });

    it('U+0000, which PostgreSQL under FerretDB cannot store: 404 in a path, 422 in a query or a body, kept inside events', async () => {
      const { conversationId, sessionKey } = await t.newConversation(userId);
      // A path: no id can hold it, with or without a credential (once a 500: the lookup failed in the database).
      for (const [method, path, headers] of [
        ['POST', '/api/v1/webhooks/events/%00', { 'X-Session-API-Key': 'wrong' }],
        ['GET', '/api/v1/sandboxes/a%00b', { 'X-Access-Token': key }],
      ] as const) {
        const r = await t.request(method, path, {
          rawBody: method === 'POST' ? '[]' : undefined,
          headers: { ...headers, 'Content-Type': 'application/json' },
        });
        expect([path, r.status, r.body]).toEqual([path, 404, { detail: 'Not Found' }]);
      }
      const q = await t.request('GET', `/api/v1/conversation/${conversationId}/events?id=a%00b`, { key });
      expect(q.status).toBe(422);
      expect(q.body.detail[0]).toMatchObject({ loc: ['query'], type: 'string_nul' });
      // A body: refused whole, nothing stored (a start would have been stored in part).
      const tasks = () => t.database.db.collection('start_tasks').countDocuments();
      const before = await tasks();
      const start = await t.request('POST', '/api/v1/app-conversations', {
        key,
        rawBody: '{"title":"a\\u0000b"}',
        headers: { 'Content-Type': 'application/json' },
      });
      expect(start.status).toBe(422);
      expect(start.body.detail[0]).toMatchObject({ loc: ['body'], type: 'string_nul' });
      expect(await tasks()).toBe(before);
      // An escaped backslash before "u0000" is no NUL.
      expect(
        (
          await t.request('POST', '/api/v1/app-conversations', {
            key,
            rawBody: '{"title":"a\\\\u0000b"}',
            headers: { 'Content-Type': 'application/json' },
          })
        ).status,
      ).toBe(200);
      // An event's content may hold it (terminal output does): stored as JSON text, read back as sent.
      const event = sample('MessageEvent', {
        llm_message: { role: 'user', content: [{ type: 'text', text: 'before\u0000after' }] },
      });
      expect((await t.ingest(conversationId, sessionKey, [event])).status).toBe(200);
      const got = await t.request('GET', `/api/v1/conversation/${conversationId}/events?id=${event.id as string}`, {
        key,
      });
      expect(got.body[0].llm_message.content[0].text).toBe('before\u0000after');
      // Its id may not: the batch is refused before anything of it is stored.
      const count = () => t.request('GET', `/api/v1/conversation/${conversationId}/events/count`, { key });
      const stored = (await count()).body;
      const bad = await t.ingest(conversationId, sessionKey, [
        sample('MessageEvent'),
        sample('MessageEvent', { id: 'a\u0000b' }),
      ]);
      expect(bad.status).toBe(422);
      expect(bad.body.detail[0].loc).toEqual(['body', 1, 'id']);
      expect((await count()).body).toBe(stored);
      await healthy();
    });

    it('a page of large events is cut by bytes: pages neither skip nor repeat, and a catch-up sends them all', async () => {
      const { conversationId, sessionKey } = await t.newConversation(userId);
      const big = Array.from({ length: 12 }, (_, i) =>
        sample('ServerErrorEvent', {
          timestamp: new Date(Date.UTC(2030, 0, 1, 0, 0, i)).toISOString(),
          detail: 'x'.repeat(1_000_000),
        }),
      );
      for (let i = 0; i < big.length; i += 4)
        expect((await t.ingest(conversationId, sessionKey, big.slice(i, i + 4))).status).toBe(200);
      const seen: string[] = [];
      let page = await t.request('GET', `/api/v1/conversation/${conversationId}/events/search?limit=100`, { key });
      expect(page.body.items.length).toBeLessThan(12); // 8 MB of text per page, not 12 MB
      expect(page.body.next_page_id).toEqual(expect.any(String));
      for (let n = 0; n < 12; n++) {
        seen.push(...page.body.items.map((e: { id: string }) => e.id));
        if (!page.body.next_page_id) break;
        page = await t.request(
          'GET',
          `/api/v1/conversation/${conversationId}/events/search?limit=100&page_id=${page.body.next_page_id as string}`,
          { key },
        );
      }
      expect(seen).toEqual(big.map((e) => e.id));
      const sub = connect(
        `${t.url.replace('http', 'ws')}/api/v1/conversation/${conversationId}/events/socket?resend_all=true`,
        { 'X-Access-Token': key },
      );
      expect((await sub.waitFor(12, 30_000)).map((e) => e.id)).toEqual(big.map((e) => e.id));
      sub.ws.close();
    });

    it('a transfer coding other than chunked is a 501; Content-Length beside chunked is a 400 and no server error', async () => {
      const gz = await raw(
        t.url,
        `POST /api/v1/api-keys HTTP/1.1\r\nHost: x\r\nX-Access-Token: ${key}\r\nContent-Type: application/json\r\nTransfer-Encoding: gzip, chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n`,
      );
      expect(statusOf(gz.text)).toBe(501);
      expect(JSON.parse(bodyOf(gz.text)).detail).toMatch(/Transfer-Encoding gzip, chunked is not supported/);
      const both = await raw(
        t.url,
        `POST /api/v1/api-keys HTTP/1.1\r\nHost: x\r\nX-Access-Token: ${key}\r\nContent-Type: application/json\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n`,
      );
      expect(statusOf(both.text)).toBe(400);
      expect(JSON.parse(bodyOf(both.text)).detail).toEqual(expect.any(String));
      await healthy();
    });

    it('an unauthenticated body is never read: 401 at once and the connection closed', async () => {
      const head =
        'POST /api/v1/api-keys HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 5000000\r\n\r\n';
      const r = await raw(t.url, Buffer.concat([Buffer.from(head), Buffer.alloc(64 * 1024, ' ')]), { timeoutMs: 5000 });
      expect(r.closedBy).toBe('server');
      expect(r.ms).toBeLessThan(1000); // not held until the request timeout
      expect(statusOf(r.text)).toBe(401);
      expect(JSON.parse(bodyOf(r.text))).toEqual({ detail: 'Missing X-Access-Token header' });
    });

    it('a body that never finishes arriving gets a JSON 408 within REQUEST_TIMEOUT_MS, and its connection is closed', async () => {
      const head = `POST /api/v1/api-keys HTTP/1.1\r\nHost: x\r\nX-Access-Token: ${key}\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"name":`;
      const r = await raw(t.url, head, { timeoutMs: 10_000 });
      expect(r.closedBy).toBe('server');
      expect(r.ms).toBeGreaterThanOrEqual(1400);
      expect(r.ms).toBeLessThan(4000);
      expect(statusOf(r.text)).toBe(408);
      expect(JSON.parse(bodyOf(r.text)).detail).toMatch(/Request Timeout/);
      await healthy();
    });
  });

  it("timestamps of years 0001-0099 (Python's datetime.min) are kept as written, in events and queries", async () => {
    const { conversationId, sessionKey } = await t.newConversation(userId);
    const old = [
      sample('MessageEvent', { timestamp: '0001-01-01T00:00:00' }),
      sample('MessageEvent', { timestamp: '0099-12-31T23:59:59.5+00:00' }),
    ];
    expect((await t.ingest(conversationId, sessionKey, old)).body).toMatchObject({ stored: 2 });
    const page = await t.request(
      'GET',
      `/api/v1/conversation/${conversationId}/events/search?timestamp__lt=0100-01-01T00:00:00Z`,
      { key },
    );
    expect(page.status).toBe(200);
    expect(page.body.items.map((e: { id: string }) => e.id)).toEqual(old.map((e) => e.id));
    const none = await t.request(
      'GET',
      `/api/v1/conversation/${conversationId}/events/count?timestamp__gte=1900-01-01T00:00:00Z`,
      { key },
    );
    expect(none.body).toBe(0);
  });
});
