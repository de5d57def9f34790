/** /health is liveness; /ready turns 503 when MongoDB or Temporal stops answering. */
import path from 'node:path';
import { freePort } from '../src/process/net';
import { startFerretdb } from '../scripts/servers/ferretdb-server';
import { startTestApi } from './helpers/api';
import { testConfig, testEnv } from './helpers/env';
import { eventually } from './helpers/eventually';

describe('health and readiness', () => {
  it('/ready is 200 with both servers, 503 once the database stops; /health stays 200', async () => {
    const env = testEnv();
    // A FerretDB of this test's own (on the shared PostgreSQL), so stopping it disturbs no other test.
    const ferret = await startFerretdb({
      binary: env.binaries.ferretdb,
      backend: env.postgresUrl ? { kind: 'postgresql', url: env.postgresUrl } : { kind: 'sqlite' },
      dataDir: path.join(env.dir, 'ready-ferretdb'),
      port: await freePort(),
    });
    const t = await startTestApi(testConfig({ MONGODB_URI: ferret.uri }));
    try {
      // Indexes are created in the background.
      const ready = await eventually(
        async () => {
          const r = await t.request('GET', '/ready');
          expect(r.status).toBe(200);
          return r;
        },
        { timeoutMs: 10_000, intervalMs: 250 },
      );
      expect(ready.body).toEqual({ ready: true, checks: { mongodb: { ok: true }, temporal: { ok: true } } });

      await ferret.stop();
      const started = Date.now();
      const down = await t.request('GET', '/ready');
      expect(down.status).toBe(503);
      expect(down.body.ready).toBe(false);
      expect(down.body.checks.mongodb).toEqual({ ok: false, error: expect.any(String) });
      expect(down.body.checks.temporal).toEqual({ ok: true });
      expect(Date.now() - started).toBeLessThan(5000); // bounded by READY_TIMEOUT_MS, not the driver's timeouts

      const health = await t.request('GET', '/health');
      expect(health.status).toBe(200);
      expect(health.body).toEqual({ status: 'ok' });
    } finally {
      await ferret.stop();
      await t.api.close();
      await t.database.close();
    }
  });

  it('/ready does not wait for the PostgreSQL indexes: an unreachable POSTGRES_URL is an error in the log, not a 503', async () => {
    const t = await startTestApi(
      testConfig({ POSTGRES_URL: `postgres://nobody:wrong@127.0.0.1:${await freePort()}/ferretdb` }),
    );
    try {
      await eventually(async () => expect((await t.request('GET', '/ready')).status).toBe(200), {
        timeoutMs: 10_000,
        intervalMs: 250,
      });
    } finally {
      await t.close();
    }
  });

  it('/ready is 503 naming Temporal when Temporal does not answer', async () => {
    const t = await startTestApi(testConfig({ TEMPORAL_ADDRESS: `127.0.0.1:${await freePort()}` }));
    try {
      const r = await t.request('GET', '/ready');
      expect(r.status).toBe(503);
      expect(r.body.checks.temporal).toEqual({ ok: false, error: expect.any(String) });
    } finally {
      await t.close();
    }
  });

  it('closes at once while clients keep their connections busy (answers end their connection while closing)', async () => {
    const t = await startTestApi(testConfig());
    let stop = false;
    let served = 0;
    // Keep-alive connections that are never idle: what runtimes' outboxes look like to the api.
    const client = async () => {
      while (!stop) {
        const r = await fetch(`${t.url}/api/v1/webhooks/events/c1`, {
          method: 'POST',
          headers: { 'Content-Type': 'application/json', 'X-Session-API-Key': 'k' },
          body: '[]',
        }).catch(() => null);
        if (!r) break;
        await r.text();
        served++;
      }
    };
    const busy = Promise.all([client(), client(), client(), client()]);
    try {
      await eventually(() => served >= 20, { what: '20 answers', timeoutMs: 60_000, intervalMs: 5 }); // the test's own bound
      const started = Date.now();
      await t.api.close();
      expect(Date.now() - started).toBeLessThan(2000); // without it: the whole grace period
    } finally {
      stop = true;
      await busy;
      await t.database.close();
    }
  });
});
