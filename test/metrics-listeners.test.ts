/**
 * Where the metrics are served: the api's (METRICS_ADDRESS) on a listener of its own, never on the api's
 * port and never behind an API key; an address in use stops the start; the worker's exporter
 * (WORKER_METRICS_ADDRESS) binds addresses only, and serves the Temporal SDK's metrics and activity outcomes.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePort } from '../src/process/net';
import { startTestApi } from './helpers/api';
import { testConfig } from './helpers/env';
import { eventually } from './helpers/eventually';
import { metricsUrl, t, useMetricsApi } from './helpers/metrics-api';
import { parsePrometheus, type PromFamily } from './helpers/prometheus';
import { killRuntimesUnder, waitForStatus } from './helpers/sandboxes';
import { waitForStartTask } from './helpers/start-tasks';
import { startWorkerProcess } from './helpers/worker';

describe('metrics', () => {
  useMetricsApi();

  it('is served only on its own listener: not on the api port, and nothing else on its own', async () => {
    expect((await t.request('GET', '/metrics')).status).toBe(404);
    expect((await fetch(metricsUrl.replace('/metrics', '/'))).status).toBe(404);
    expect((await fetch(metricsUrl, { method: 'POST' })).status).toBe(404);
  });

  it('a METRICS_ADDRESS in use stops the api before it listens, naming the variable', async () => {
    const busy = new URL(metricsUrl).host;
    await expect(startTestApi(testConfig({ METRICS_ADDRESS: busy }))).rejects.toThrow(
      `METRICS_ADDRESS=${busy}: listen EADDRINUSE`,
    );
  });

  it('an api port in use stops the start with the error, and what it began in the background ends', async () => {
    const config = testConfig({ API_PORT: String(new URL(t.url).port) });
    const before = process.getActiveResourcesInfo().filter((r) => r === 'TCPSocketWrap').length;
    await expect(startTestApi(config)).rejects.toThrow('EADDRINUSE');
    // Its database and Temporal connections are closed: no socket more than before the attempt.
    expect(process.getActiveResourcesInfo().filter((r) => r === 'TCPSocketWrap').length).toBeLessThanOrEqual(before);
  });

  it('the worker exporter binds addresses, not host names: a name is a configuration error', () => {
    expect(() => testConfig({ WORKER_METRICS_ADDRESS: 'localhost:9464' })).toThrow(
      /WORKER_METRICS_ADDRESS="localhost:9464" is invalid: expected IP:port/,
    );
    expect(testConfig({ WORKER_METRICS_ADDRESS: '[::1]:9464' }).metrics.workerAddress).toBe('[::1]:9464');
  });

  it("the worker serves the Temporal SDK's metrics and activity outcomes by type, parsed by Prometheus' parser", async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'metrics-worker-'));
    const address = `127.0.0.1:${await freePort()}`;
    const worker = startWorkerProcess(t.config, dataDir, { WORKER_METRICS_ADDRESS: address });
    const workerScrape = async () => parsePrometheus(await (await fetch(`http://${address}/metrics`)).text());
    try {
      await worker.ready;
      const before = await eventually(
        async () => {
          const families = await workerScrape();
          expect([...families.keys()].some((n) => n.startsWith('temporal_'))).toBe(true);
          return families;
        },
        { timeoutMs: 20_000, intervalMs: 250, what: "the worker's temporal_ metrics" },
      );
      // A sandbox brought up runs activities that complete; a start of a repository that is not there fails one.
      const u = await t.newUser();
      const created = await t.request('POST', '/api/v1/sandboxes', { key: u.key, body: {} });
      if (created.status !== 200)
        throw new Error(`POST /api/v1/sandboxes: ${created.status} ${JSON.stringify(created.body)}`);
      await waitForStatus(t, u.key, created.body.id, 'RUNNING');
      const failed = await t.request('POST', '/api/v1/app-conversations', {
        key: u.key,
        body: { selected_repository: path.join(dataDir, 'no-such-repo.git') },
      });
      expect(failed.status).toBe(200);
      await waitForStartTask(t, u.key, failed.body.id, (s) => s.status === 'ERROR' || s.status === 'READY');

      const after = await eventually(
        async () => {
          const families = await workerScrape();
          expect(
            families.get('agent_control_activity_outcomes_total')?.samples.some((s) => s.labels.outcome === 'failed'),
          ).toBe(true);
          return families;
        },
        { timeoutMs: 20_000, intervalMs: 250, what: 'a failed activity counted' },
      );
      const outcomes = after.get('agent_control_activity_outcomes_total')!;
      expect(outcomes.type).toBe('COUNTER');
      // The shared task queue's, or this host's (the sandbox's start ran there).
      const queue = expect.stringMatching(new RegExp(`^${t.config.temporal.taskQueue}(@[\\w.-]+)?$`));
      for (const s of outcomes.samples) {
        expect(s.labels).toEqual({
          activity_type: expect.stringMatching(/^\w+$/),
          task_queue: queue,
          namespace: t.config.temporal.namespace,
          local: expect.stringMatching(/^(true|false)$/),
          outcome: expect.stringMatching(/^(completed|failed|cancelled)$/),
          failure_type: expect.any(String),
        });
      }
      expect(outcomes.samples.find((s) => s.labels.activity_type === 'startSandboxRuntime')?.labels.task_queue).toMatch(
        /@/,
      );
      const completed = outcomes.samples
        .filter((s) => s.labels.outcome === 'completed')
        .map((s) => s.labels.activity_type);
      expect(completed.length).toBeGreaterThan(0);
      const failure = outcomes.samples.find((s) => s.labels.outcome === 'failed')!;
      expect(failure.labels.failure_type).not.toBe('');
      expect(failure.value).toBeGreaterThanOrEqual(1);
      // The SDK's own series, typed, and moved by the same work (its histograms carry no unit suffix: seconds).
      expect(after.get('temporal_activity_execution_latency')?.type).toBe('HISTOGRAM');
      const executions = (f: Map<string, PromFamily>) =>
        (f.get('temporal_activity_execution_latency')?.samples ?? []).reduce((n, s) => n + (s.count ?? 0), 0);
      expect(executions(after)).toBeGreaterThan(executions(before));
      expect(after.get('temporal_workflow_task_execution_latency')?.type).toBe('HISTOGRAM');
    } finally {
      worker.child.kill('SIGTERM');
      await new Promise((r) => worker.child.once('exit', r));
      killRuntimesUnder(dataDir);
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  }, 90_000);
});
