/**
 * The api with its Prometheus metrics on a listener of its own (METRICS_ADDRESS on a free loopback port),
 * for the metrics suites (test/metrics*.test.ts): starting it, scraping its /metrics as text, and reading
 * one sample line of that text.
 *
 * A suite calls `useMetricsApi()` inside its describe and imports `t` and `metricsUrl`: the beforeAll it
 * registers assigns them, its afterAll closes the api. Sharing them this way is safe: jest gives each test
 * file its own module registry, so each file has its own instance of this module and of its bindings; and
 * the SWC transform jest uses compiles an import to a property read of the module object at each use, so
 * the file sees the values the beforeAll assigned (live bindings).
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

/** The api `useMetricsApi` started, and the URL of its /metrics. */
export let t: TestApi;
export let metricsUrl: string;

/** Starts the api in a beforeAll of the describe it is called in, assigning `t` and `metricsUrl`; closes it in its afterAll. */
export function useMetricsApi(): void {
  beforeAll(async () => {
    ({ t, metricsUrl } = await startMetricsApi());
  });

  afterAll(async () => {
    await t?.close();
  });
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
