/**
 * Prometheus metrics of the api (METRICS_ADDRESS: requests by route and status, ingest, streams,
 * websocket subscribers, the process) and of the worker (WORKER_METRICS_ADDRESS: the Temporal SDK's own),
 * each on a listener of its own, never on the api's port and never behind an API key.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePort } from '../src/process/net';
import { startTestApi, type TestApi } from './helpers/api';
import { testConfig } from './helpers/env';
import { eventually } from './helpers/eventually';
import { messages } from './helpers/event-samples';
import { startWorkerProcess } from './helpers/worker';

/** The value of one sample line (`name{labels} value`), or undefined when it is not there. */
function sample(text: string, line: string): number | undefined {
  const found = text.split('\n').find((l) => l.startsWith(`${line} `));
  return found === undefined ? undefined : Number(found.slice(line.length + 1));
}

describe('metrics', () => {
  let t: TestApi;
  let metricsUrl: string;

  beforeAll(async () => {
    const address = `127.0.0.1:${await freePort()}`;
    t = await startTestApi(testConfig({ METRICS_ADDRESS: address }));
    metricsUrl = `http://${address}/metrics`;
  });

  afterAll(async () => {
    await t?.close();
  });

  const scrape = async () => {
    const r = await fetch(metricsUrl);
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    return r.text();
  };

  it('counts answers by method, route pattern and status, and never by raw path', async () => {
    const u = await t.newUser();
    const before = await scrape();
    const unauthorized = 'agent_control_http_requests_total{method="GET",route="/api/v1/sandboxes/search",status="401"}';
    const ok = 'agent_control_http_requests_total{method="GET",route="/api/v1/sandboxes/search",status="200"}';
    const byId = 'agent_control_http_requests_total{method="POST",route="/api/v1/sandboxes/:id/pause",status="404"}';
    const unmatched = 'agent_control_http_requests_total{method="GET",route="unmatched",status="404"}';
    for (let i = 0; i < 3; i++) expect((await t.request('GET', '/api/v1/sandboxes/search')).status).toBe(401);
    expect((await t.request('GET', '/api/v1/sandboxes/search', { key: u.key })).status).toBe(200);
    for (const id of ['a', 'b', 'c']) expect((await t.request('POST', `/api/v1/sandboxes/${id}/pause`, { key: u.key })).status).toBe(404);
    expect((await t.request('GET', '/no/such/path/x1')).status).toBe(404);
    expect((await t.request('GET', '/no/such/path/x2')).status).toBe(404);

    const after = await scrape();
    expect((sample(after, unauthorized) ?? 0) - (sample(before, unauthorized) ?? 0)).toBe(3);
    expect((sample(after, ok) ?? 0) - (sample(before, ok) ?? 0)).toBe(1);
    expect((sample(after, byId) ?? 0) - (sample(before, byId) ?? 0)).toBe(3);
    expect((sample(after, unmatched) ?? 0) - (sample(before, unmatched) ?? 0)).toBe(2);
    expect(after).not.toContain('x1'); // raw paths never become label values
    expect(after).toMatch(/agent_control_http_request_duration_seconds_bucket\{le="0\.005",method="GET",route="\/api\/v1\/sandboxes\/search",status="401"\} \d+/);
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
    expect(sample(after, 'agent_control_ingest_batches_total')! - (sample(before, 'agent_control_ingest_batches_total') ?? 0)).toBe(2);
    expect(sample(after, 'agent_control_ingest_events_total')! - (sample(before, 'agent_control_ingest_events_total') ?? 0)).toBe(4);
    expect(sample(after, 'agent_control_start_streams_open')).toBe(0);
    expect(sample(after, 'agent_control_websocket_subscribers')).toBe(0);
  });

  it('is served only on its own listener: not on the api port, and nothing else on its own', async () => {
    expect((await t.request('GET', '/metrics')).status).toBe(404);
    expect((await fetch(metricsUrl.replace('/metrics', '/'))).status).toBe(404);
    expect((await fetch(metricsUrl, { method: 'POST' })).status).toBe(404);
  });

  it('a METRICS_ADDRESS in use stops the api before it listens, naming the variable', async () => {
    const busy = new URL(metricsUrl).host;
    await expect(startTestApi(testConfig({ METRICS_ADDRESS: busy }))).rejects.toThrow(`METRICS_ADDRESS=${busy}: listen EADDRINUSE`);
  });

  it('an api port in use stops the start with the error, and what it began in the background ends', async () => {
    const config = testConfig({ API_PORT: String(new URL(t.url).port) });
    const before = process.getActiveResourcesInfo().filter((r) => r === 'TCPSocketWrap').length;
    await expect(startTestApi(config)).rejects.toThrow('EADDRINUSE');
    // Its database and Temporal connections are closed: no socket more than before the attempt.
    expect(process.getActiveResourcesInfo().filter((r) => r === 'TCPSocketWrap').length).toBeLessThanOrEqual(before);
  });

  it('the worker exporter binds addresses, not host names: a name is a configuration error', () => {
    expect(() => testConfig({ WORKER_METRICS_ADDRESS: 'localhost:9464' })).toThrow(/WORKER_METRICS_ADDRESS="localhost:9464" is invalid: expected IP:port/);
    expect(testConfig({ WORKER_METRICS_ADDRESS: '[::1]:9464' }).metrics.workerAddress).toBe('[::1]:9464');
  });

  it("the worker serves the Temporal SDK's metrics", async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'metrics-worker-'));
    const address = `127.0.0.1:${await freePort()}`;
    const worker = startWorkerProcess(t.config, dataDir, { WORKER_METRICS_ADDRESS: address });
    try {
      await worker.ready;
      const text = await eventually(
        async () => {
          const body = await (await fetch(`http://${address}/metrics`)).text();
          return /^temporal_\w+/m.test(body) ? body : false;
        },
        { timeoutMs: 20_000, intervalMs: 250, what: "the worker's temporal_ metrics" },
      );
      expect(text).toMatch(new RegExp(`task_queue="${t.config.temporal.taskQueue}"`));
    } finally {
      worker.child.kill('SIGTERM');
      await new Promise((r) => worker.child.once('exit', r));
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  }, 60_000);
});
