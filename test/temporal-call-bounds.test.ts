/**
 * Calls to a frozen Temporal server are bounded (src/temporal/call-bounds.ts). A dev server of this file's
 * own, stopped with SIGSTOP (alive, its socket open, answering nothing): a start, a signal, a describe and
 * a terminate each fail within the bound, as Unavailable once translated; a caller's own deadline wins;
 * the calls that wait on purpose are left to their caller's signal; after SIGCONT the same connection
 * works again. Through the api: a start sent while the server is frozen is accepted within the bound (its
 * record), and the reconciler runs it once the server answers again; a sandbox made meanwhile is a 503,
 * and ends ERROR or RUNNING, never STARTING for good.
 */
import { Client, Connection, ServiceError } from '@temporalio/client';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Unavailable } from '../src/errors';
import { freePort } from '../src/process/net';
import { boundedConnection, isTemporalUnreachable, translateTemporalError } from '../src/temporal/call-bounds';
import { startTemporalDevServer } from '../scripts/servers/temporal-dev-server';
import { testEnv } from './helpers/env';
import { eventually } from './helpers/eventually';
import { startServiceUnderTest, type ServiceUnderTest } from './helpers/service';
import { setUnusedOrgLlm, startTaskEnded, waitForStartTask } from './helpers/start-tasks';
import { setTimeout as sleep } from 'node:timers/promises';

const BOUND_MS = 1500;

/** How long `call` took, and what it threw (or 'ok'). */
async function timed(call: () => Promise<unknown>): Promise<{ ms: number; error: unknown }> {
  const t0 = Date.now();
  try {
    await call();
    return { ms: Date.now() - t0, error: 'ok' };
  } catch (e) {
    return { ms: Date.now() - t0, error: e };
  }
}

describe('bounded Temporal calls', () => {
  let dir: string;
  let server: Awaited<ReturnType<typeof startTemporalDevServer>>;
  let connection: Connection;
  let client: Client;

  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'call-bounds-'));
    server = await startTemporalDevServer({
      binary: testEnv().binaries.temporal,
      dataDir: dir,
      port: await freePort(),
      uiPort: await freePort(),
      namespace: 'default',
    });
    connection = boundedConnection(server.address, BOUND_MS);
    client = new Client({ connection, namespace: 'default' });
  }, 120_000);

  afterAll(async () => {
    if (server?.process.pid) process.kill(server.process.pid, 'SIGCONT');
    await connection?.close();
    await server?.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('a call that waits on purpose is cut by its caller, not by the bound', async () => {
    const handle = await client.workflow.start('nothing-runs-this', { workflowId: 'waits', taskQueue: 'nobody-polls' });
    // No worker: the result's history long poll waits until the caller's signal cuts it.
    const waited = await timed(() => client.withAbortSignal(AbortSignal.timeout(BOUND_MS * 2), () => handle.result()));
    expect(waited.error).not.toBe('ok');
    expect(waited.ms).toBeGreaterThanOrEqual(BOUND_MS * 2 - 100);
  });

  it('plain calls to a frozen server fail within the bound, as Unavailable; a caller deadline wins; thawed, it answers again', async () => {
    await client.workflow.start('nothing-runs-this', { workflowId: 'frozen', taskQueue: 'nobody-polls' });
    const pid = server.process.pid!;
    process.kill(pid, 'SIGSTOP');
    try {
      const handle = client.workflow.getHandle('frozen');
      const calls: Record<string, () => Promise<unknown>> = {
        start: () =>
          client.workflow.start('nothing-runs-this', { workflowId: 'during-the-freeze', taskQueue: 'nobody-polls' }),
        signal: () => handle.signal('anything'),
        describe: () => handle.describe(),
        terminate: () => handle.terminate('frozen'),
      };
      const outcomes = await Promise.all(
        Object.entries(calls).map(async ([name, call]) => ({ name, ...(await timed(call)) })),
      );
      for (const { name, ms, error } of outcomes) {
        expect({ name, failed: error !== 'ok', inTime: ms >= BOUND_MS - 100 && ms < BOUND_MS + 2000 }).toEqual({
          name,
          failed: true,
          inTime: true,
        });
        const translated = translateTemporalError(error);
        expect(translated).toBeInstanceOf(Unavailable);
        expect((translated as Unavailable).retryAfterSeconds).toBe(5);
        // No answer: nothing says the server did not take it (a start is left to the reconciler).
        expect(isTemporalUnreachable(error)).toBe(true);
      }
      const own = await timed(() => connection.withDeadline(Date.now() + BOUND_MS * 2, () => handle.describe()));
      expect(own.error).not.toBe('ok');
      expect(own.ms).toBeGreaterThanOrEqual(BOUND_MS * 2 - 100);
    } finally {
      process.kill(pid, 'SIGCONT');
    }
    const after = await client.workflow.getHandle('frozen').describe();
    expect(after.status.name).toBe('RUNNING');
  });

  it('a connection closed while a call waits to be retried: the call ends CANCELLED, nothing thrown from the timer', async () => {
    // Nothing listens on this port: the first attempt is UNAVAILABLE and the SDK retries it from a timer.
    const nowhere = boundedConnection(`127.0.0.1:${await freePort()}`, 10_000);
    const uncaught: Error[] = [];
    const onUncaught = (e: Error) => uncaught.push(e);
    process.prependListener('uncaughtException', onUncaught);
    try {
      const call = timed(() => nowhere.workflowService.getSystemInfo({}));
      await sleep(300);
      await nowhere.close();
      const pending = new Promise<{ ms: number; error: unknown }>((r) =>
        setTimeout(() => r({ ms: Infinity, error: 'still pending' }), 5000),
      );
      const { ms, error } = await Promise.race([call, pending]);
      expect(error).toBeInstanceOf(Error);
      expect(
        (error as ServiceError & { code?: number }).code ?? (error as { cause?: { code?: number } }).cause?.code,
      ).toBe(1); // CANCELLED
      expect(ms).toBeLessThan(5000); // settled, not left pending until the 10 s deadline or for ever
      await sleep(1000); // any retry timer still due has fired
      expect(uncaught).toEqual([]);
    } finally {
      process.removeListener('uncaughtException', onUncaught);
    }
  });

  it('a refusal stays a refusal, not Unavailable', async () => {
    // A search attribute the namespace does not have: the server answers INVALID_ARGUMENT.
    const refused = await timed(() =>
      client.workflow.start('nothing-runs-this', {
        workflowId: 'bad',
        taskQueue: 'nobody-polls',
        searchAttributes: { NoSuchAttribute: ['x'] },
      }),
    );
    expect(refused.error).toBeInstanceOf(ServiceError);
    expect(((refused.error as ServiceError).cause as { code?: number }).code).toBe(3);
    expect(isTemporalUnreachable(refused.error)).toBe(false);
    expect(translateTemporalError(refused.error)).toBe(refused.error);
  });

  it('a start while Temporal is frozen: accepted (its record) within the bound, and READY after the thaw', async () => {
    let service: ServiceUnderTest | undefined;
    const pid = server.process.pid!;
    try {
      service = await startServiceUnderTest('call-bounds-api-', {
        TEMPORAL_ADDRESS: server.address,
        START_TASK_RECONCILE_AFTER_MS: '1000',
      });
      const { t } = service;
      const user = await t.newUser();
      await setUnusedOrgLlm(t, user.key);
      process.kill(pid, 'SIGSTOP');
      const id = '5f0c7f4e-8d7e-4a8b-9c11-3e2d1f0a9b7c';
      const t0 = Date.now();
      const r = await t.request('POST', '/api/v1/app-conversations', {
        key: user.key,
        body: { conversation_id: id },
        signal: AbortSignal.timeout(60_000),
      });
      const ms = Date.now() - t0;
      process.kill(pid, 'SIGCONT');
      // Accepted within the bound: its record is the acceptance. Not ERROR: Temporal may have taken it, and
      // if not, the reconciler starts it from its record once Temporal answers.
      expect({ status: r.status, task: r.body.status, inTime: ms < 15_000 }).toEqual({
        status: 200,
        task: 'WORKING',
        inTime: true,
      });
      const ready = await waitForStartTask(t, user.key, id, startTaskEnded, 90_000);
      expect(ready).toMatchObject({ id, status: 'READY' });

      // A sandbox made while Temporal is frozen: a 503 within the bound, and the record never left STARTING
      // with nothing to move it: ERROR, or RUNNING when the thawed server still took its workflow.
      const before = new Set(
        ((await t.request('GET', '/api/v1/sandboxes/search', { key: user.key })).body.items as { id: string }[]).map(
          (x) => x.id,
        ),
      );
      process.kill(pid, 'SIGSTOP');
      const s0 = Date.now();
      const made = await t.request('POST', '/api/v1/sandboxes', {
        key: user.key,
        body: {},
        signal: AbortSignal.timeout(60_000),
      });
      const madeMs = Date.now() - s0;
      process.kill(pid, 'SIGCONT');
      expect({ status: made.status, retryAfter: made.headers.get('retry-after'), inTime: madeMs < 15_000 }).toEqual({
        status: 503,
        retryAfter: '5',
        inTime: true,
      });
      const fresh = (
        (await t.request('GET', '/api/v1/sandboxes/search', { key: user.key })).body.items as {
          id: string;
          status: string;
        }[]
      ).filter((x) => !before.has(x.id));
      expect(fresh).toHaveLength(1);
      const settled = await eventually(
        async () => {
          const status = (await t.request('GET', `/api/v1/sandboxes?id=${fresh[0]!.id}`, { key: user.key })).body[0]
            ?.status as string;
          return ['ERROR', 'RUNNING'].includes(status) && status;
        },
        { timeoutMs: 60_000 },
      );
      if (settled === 'RUNNING')
        expect((await t.request('DELETE', `/api/v1/sandboxes/${fresh[0]!.id}`, { key: user.key })).status).toBe(200);
    } finally {
      process.kill(pid, 'SIGCONT');
      await service?.close();
    }
  }, 180_000);
});
