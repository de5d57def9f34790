/** The worker runs the bundled workflows and their activities on its own task queue, and stops cleanly. */
import { Client, Connection } from '@temporalio/client';
import { NativeConnection } from '@temporalio/worker';
import { spawn } from 'node:child_process';
import path from 'node:path';
import { openDatabase } from '../src/store/mongo';
import { SEARCH_ATTRIBUTES } from '../src/temporal/search-attributes';
import { ensureSearchAttributes } from '../src/temporal/search-attributes-ensure';
import { WORKFLOW_TYPES, type DiagnosticsResult } from '../src/temporal/shared';
import { createWorker } from '../worker/worker';
import { TEST_SECRETS_KEY, testConfig, testEnv, uniqueName } from './helpers/env';
import { eventually } from './helpers/eventually';
import { quietTemporalRuntime } from './helpers/temporal-runtime';

describe('worker', () => {
  const env = testEnv();
  quietTemporalRuntime();

  it('runs the diagnostics workflow end to end against the real database', async () => {
    const taskQueue = uniqueName('tq');
    const database = openDatabase(env.mongoUri, uniqueName('test'));
    const nativeConnection = await NativeConnection.connect({ address: env.temporalAddress });
    const worker = await createWorker({
      connection: nativeConnection,
      client: new Client({ connection: Connection.lazy({ address: env.temporalAddress }), namespace: env.namespace }),
      namespace: env.namespace,
      taskQueue,
      db: database.db,
      workflowBundlePath: env.workflowBundlePath,
      config: testConfig(),
      secretsKey: TEST_SECRETS_KEY,
      identity: 'test-worker',
    });
    const connection = await Connection.connect({ address: env.temporalAddress });
    try {
      const client = new Client({ connection, namespace: env.namespace });
      const result = await worker.runUntil(
        client.workflow.execute<() => Promise<DiagnosticsResult>>(WORKFLOW_TYPES.diagnostics, {
          taskQueue,
          workflowId: uniqueName('diag'),
        }),
      );
      expect(result.worker).toEqual({ identity: 'test-worker', taskQueue });
      expect(result.database).toEqual({ ok: true, latencyMs: expect.any(Number) });
    } finally {
      await connection.close();
      await nativeConnection.close();
      await database.close();
    }
  });

  it('finds the project search attributes registered (and registering again is a no-op)', async () => {
    const connection = await NativeConnection.connect({ address: env.temporalAddress });
    try {
      expect(await ensureSearchAttributes(connection, env.namespace)).toEqual([]);
      const listed = await connection.operatorService.listSearchAttributes({ namespace: env.namespace });
      expect(Object.keys(listed.customAttributes ?? {})).toEqual(
        expect.arrayContaining(Object.keys(SEARCH_ATTRIBUTES)),
      );
    } finally {
      await connection.close();
    }
  });

  it('the worker process polls, then drains and exits 0 on SIGTERM', async () => {
    const child = spawn(process.execPath, [path.resolve(__dirname, '..', 'dist', 'worker', 'main.js')], {
      env: {
        ...process.env,
        MONGODB_URI: env.mongoUri,
        TEMPORAL_ADDRESS: env.temporalAddress,
        MONGODB_DB: uniqueName('test'),
        TEMPORAL_TASK_QUEUE: uniqueName('tq'),
        WORKFLOW_BUNDLE_PATH: env.workflowBundlePath,
        SECRETS_KEY: TEST_SECRETS_KEY,
        LOG_FORMAT: 'json',
        LOG_LEVEL: 'info',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    await eventually(() => expect(out).toContain('worker polling'), { timeoutMs: 20_000, intervalMs: 100 });
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
    expect(out).toContain('worker stopped');
  });
});
