/**
 * The api with its Prometheus metrics on a listener of its own (METRICS_ADDRESS on a free loopback port),
 * for the metrics suites: starting it, scraping its /metrics as text, and reading one sample line of that text.
 */
import { freePort } from '../../src/process/net';
import { startTestApi, type TestApi } from './api';
import { testConfig } from './env';

/** The api with METRICS_ADDRESS on a free port, and the URL of its /metrics there. */
export async function startMetricsApi(): Promise<{ t: TestApi; metricsUrl: string }> {
  const address = `127.0.0.1:${await freePort()}`;
  const t = await startTestApi(testConfig({ METRICS_ADDRESS: address }));
  return { t, metricsUrl: `http://${address}/metrics` };
}

/** One scrape of `metricsUrl`: answered 200 in the text format 0.0.4; its text. */
export async function scrapeMetrics(metricsUrl: string): Promise<string> {
  const r = await fetch(metricsUrl);
  expect(r.status).toBe(200);
  expect(r.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
  return r.text();
}

/** The value of one sample line (`name{labels} value`), or undefined when it is not there. */
export function sample(text: string, line: string): number | undefined {
  const found = text.split('\n').find((l) => l.startsWith(`${line} `));
  return found === undefined ? undefined : Number(found.slice(line.length + 1));
}
