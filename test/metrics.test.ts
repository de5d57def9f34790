/**
 * Prometheus metrics of the api (METRICS_ADDRESS): requests by route and status, ingest, streams,
 * websocket subscribers and their delivery lag, the live channel's lag, the process; read as text and
 * through Prometheus' own parser. Where they are served, and the worker's: metrics-listeners.test.ts.
 */
import { freePort } from '../src/process/net';
import { startTestApi, type TestApi } from './helpers/api';
import { testConfig } from './helpers/env';
import { eventually } from './helpers/eventually';
import { messages } from './helpers/event-samples';
import { metricsUrl, sample, scrapeMetrics, t, useMetricsApi } from './helpers/metrics-api';
import { connect } from './helpers/ws-client';
import { parsePrometheus, sampleOf } from './helpers/prometheus';

describe('metrics', () => {
  useMetricsApi();

  const scrape = () => scrapeMetrics(metricsUrl);

  it('counts answers by method, route pattern and status, and never by raw path', async () => {
    const u = await t.newUser();
    const before = await scrape();
    const unauthorized =
      'agent_control_http_requests_total{method="GET",route="/api/v1/sandboxes/search",status="401"}';
    const ok = 'agent_control_http_requests_total{method="GET",route="/api/v1/sandboxes/search",status="200"}';
    const byId = 'agent_control_http_requests_total{method="POST",route="/api/v1/sandboxes/:id/pause",status="404"}';
    const unmatched = 'agent_control_http_requests_total{method="GET",route="unmatched",status="404"}';
    for (let i = 0; i < 3; i++) expect((await t.request('GET', '/api/v1/sandboxes/search')).status).toBe(401);
    expect((await t.request('GET', '/api/v1/sandboxes/search', { key: u.key })).status).toBe(200);
    for (const id of ['a', 'b', 'c'])
      expect((await t.request('POST', `/api/v1/sandboxes/${id}/pause`, { key: u.key })).status).toBe(404);
    expect((await t.request('GET', '/no/such/path/x1')).status).toBe(404);
    expect((await t.request('GET', '/no/such/path/x2')).status).toBe(404);

    const after = await scrape();
    expect((sample(after, unauthorized) ?? 0) - (sample(before, unauthorized) ?? 0)).toBe(3);
    expect((sample(after, ok) ?? 0) - (sample(before, ok) ?? 0)).toBe(1);
    expect((sample(after, byId) ?? 0) - (sample(before, byId) ?? 0)).toBe(3);
    expect((sample(after, unmatched) ?? 0) - (sample(before, unmatched) ?? 0)).toBe(2);
    expect(after).not.toContain('x1'); // raw paths never become label values
    expect(after).toMatch(
      /agent_control_http_request_duration_seconds_bucket\{le="0\.005",method="GET",route="\/api\/v1\/sandboxes\/search",status="401"\} \d+/,
    );
    expect(after).toContain('agent_control_api_process_cpu_seconds_total');
  });

  it('counts stored batches and events, and shows streams and websocket subscribers', async () => {
    const u = await t.newUser();
    const c = await t.newConversation(u.userId);
    const before = await scrape();
    const batch = messages(4);
    expect((await t.ingest(c.conversationId, c.sessionKey, batch)).body.stored).toBe(4);
    expect((await t.ingest(c.conversationId, c.sessionKey, batch)).body.stored).toBe(0); // the same four again
    const after = await scrape();
    expect(
      sample(after, 'agent_control_ingest_batches_total')! -
        (sample(before, 'agent_control_ingest_batches_total') ?? 0),
    ).toBe(2);
    expect(
      sample(after, 'agent_control_ingest_events_total')! - (sample(before, 'agent_control_ingest_events_total') ?? 0),
    ).toBe(4);
    expect(sample(after, 'agent_control_start_streams_open')).toBe(0);
    expect(sample(after, 'agent_control_websocket_subscribers')).toBe(0);
  });

  it('measures websocket delivery lag and the live channel lag from another api process', async () => {
    // A second api on the same database: events ingested through the first reach its subscriber over the live channel.
    const address2 = `127.0.0.1:${await freePort()}`;
    const t2 = await startTestApi(testConfig({ METRICS_ADDRESS: address2, MONGODB_DB: t.config.mongo.db }));
    const scrape2 = async () => (await fetch(`http://${address2}/metrics`)).text();
    try {
      const u = await t.newUser();
      const c = await t.newConversation(u.userId);
      const socketUrl = (api: TestApi) =>
        `${api.url.replace('http', 'ws')}/api/v1/conversation/${c.conversationId}/events/socket`;
      const local = connect(socketUrl(t), { 'X-Access-Token': u.key });
      const remote = connect(socketUrl(t2), { 'X-Access-Token': u.key });
      await Promise.all([local.opened, remote.opened]);
      // Subscribed when each process counts the subscriber.
      await eventually(async () => {
        expect(sample(await scrape(), 'agent_control_websocket_subscribers')).toBe(1);
        expect(sample(await scrape2(), 'agent_control_websocket_subscribers')).toBe(1);
      });
      const [before1, before2] = [await scrape(), await scrape2()];
      const delivered = 'agent_control_websocket_delivery_lag_seconds_count';
      const channel = 'agent_control_live_channel_lag_seconds_count';
      expect((await t.ingest(c.conversationId, c.sessionKey, messages(5))).body.stored).toBe(5);
      await Promise.all([local.waitFor(5), remote.waitFor(5)]);
      const [after1, after2] = await eventually(async () => {
        const pair = [await scrape(), await scrape2()] as const;
        expect(sample(pair[1], delivered)! - (sample(before2, delivered) ?? 0)).toBe(5);
        return pair;
      });
      // Each subscriber's five events were sent live, so each process timed five deliveries.
      expect(sample(after1, delivered)! - (sample(before1, delivered) ?? 0)).toBe(5);
      // The second process read the first one's slot(s): at least one lag, all small on one machine.
      const read = sample(after2, channel)! - (sample(before2, channel) ?? 0);
      expect(read).toBeGreaterThanOrEqual(1);
      expect(read).toBeLessThanOrEqual(5);
      const within = (text: string, name: string, le: string) =>
        sample(text, `${name}_bucket{le="${le}"}`)! -
        (sample(text === after1 ? before1 : before2, `${name}_bucket{le="${le}"}`) ?? 0);
      expect(within(after2, 'agent_control_live_channel_lag_seconds', '5')).toBe(read);
      expect(within(after2, 'agent_control_websocket_delivery_lag_seconds', '5')).toBe(5);
      expect(sample(after2, 'agent_control_websocket_delivery_lag_seconds_sum')!).toBeGreaterThan(
        sample(before2, 'agent_control_websocket_delivery_lag_seconds_sum') ?? 0,
      );
      // The first process published those slots itself: no channel lag there.
      expect(sample(after1, channel) ?? 0).toBe(sample(before1, channel) ?? 0);
      const mean = (after: string, before: string, name: string) =>
        ((sample(after, `${name}_sum`)! - (sample(before, `${name}_sum`) ?? 0)) /
          (sample(after, `${name}_count`)! - (sample(before, `${name}_count`) ?? 0))) *
        1000;
      console.log(
        `lag on one machine: websocket delivery mean ${mean(after1, before1, 'agent_control_websocket_delivery_lag_seconds').toFixed(1)} ms (same process), ` +
          `${mean(after2, before2, 'agent_control_websocket_delivery_lag_seconds').toFixed(1)} ms (other process); live channel mean ${mean(after2, before2, 'agent_control_live_channel_lag_seconds').toFixed(1)} ms over ${read} slot(s)`,
      );
      local.ws.close();
      remote.ws.close();
    } finally {
      // Not t2.close(): that drops the database, which is t's too.
      await t2.api.close();
      await t2.database.close();
    }
  });

  it("parses with Prometheus' own parser: every named series of the api present, typed, and moving", async () => {
    const u = await t.newUser();
    const c = await t.newConversation(u.userId);
    const before = await parsePrometheus(await scrape());
    const socket = connect(`${t.url.replace('http', 'ws')}/api/v1/conversation/${c.conversationId}/events/socket`, {
      'X-Access-Token': u.key,
    });
    await socket.opened;
    await eventually(async () =>
      expect(sampleOf(await parsePrometheus(await scrape()), 'agent_control_websocket_subscribers')?.value).toBe(1),
    );
    expect((await t.ingest(c.conversationId, c.sessionKey, messages(3))).body.stored).toBe(3);
    await socket.waitFor(3);
    expect((await t.request('GET', '/api/v1/sandboxes/search', { key: u.key })).status).toBe(200);
    const after = await parsePrometheus(await scrape());
    socket.ws.close();

    const types = Object.fromEntries(
      [
        'agent_control_http_requests_total',
        'agent_control_http_request_duration_seconds',
        'agent_control_ingest_batches_total',
        'agent_control_ingest_events_total',
        'agent_control_websocket_subscribers',
        'agent_control_websocket_delivery_lag_seconds',
        'agent_control_live_channel_lag_seconds',
        'agent_control_start_streams_open',
      ].map((name) => [name, after.get(name)?.type]),
    );
    expect(types).toEqual({
      agent_control_http_requests_total: 'COUNTER',
      agent_control_http_request_duration_seconds: 'HISTOGRAM',
      agent_control_ingest_batches_total: 'COUNTER',
      agent_control_ingest_events_total: 'COUNTER',
      agent_control_websocket_subscribers: 'GAUGE',
      agent_control_websocket_delivery_lag_seconds: 'HISTOGRAM',
      agent_control_live_channel_lag_seconds: 'HISTOGRAM',
      agent_control_start_streams_open: 'GAUGE',
    });
    const moved = (family: string, labels: Record<string, string> = {}, field: 'value' | 'count' = 'value') =>
      (sampleOf(after, family, labels)?.[field] ?? 0) - (sampleOf(before, family, labels)?.[field] ?? 0);
    const search = { method: 'GET', route: '/api/v1/sandboxes/search', status: '200' };
    expect(moved('agent_control_http_requests_total', search)).toBe(1);
    expect(moved('agent_control_http_request_duration_seconds', search, 'count')).toBe(1);
    expect(moved('agent_control_ingest_batches_total')).toBe(1);
    expect(moved('agent_control_ingest_events_total')).toBe(3);
    expect(moved('agent_control_websocket_delivery_lag_seconds', {}, 'count')).toBe(3);
    expect(sampleOf(after, 'agent_control_websocket_delivery_lag_seconds')!.buckets!.at(-1)).toEqual({
      le: '+Inf',
      count: sampleOf(after, 'agent_control_websocket_delivery_lag_seconds')!.count,
    });
    // Text Prometheus would refuse is refused here too: the parser is not a pass-through.
    await expect(parsePrometheus('agent_control_x{le="1" 2\n')).rejects.toThrow(/text format parsing error/);
  });
});
