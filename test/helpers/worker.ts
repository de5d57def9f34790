/** Runs the real worker (bundled workflows, real activities) in this process for a test file. */
import { Client, Connection } from '@temporalio/client';
import { NativeConnection, type Worker } from '@temporalio/worker';
import type { Config } from '../../src/config';
import { openDatabase } from '../../src/store/mongo';
import { createWorker } from '../../worker/worker';
import { testEnv, TEST_SECRETS_KEY } from './env';
import { quietTemporalRuntime } from './temporal-runtime';

export interface TestWorker {
  worker: Worker;
  stop(): Promise<void>;
}

export async function startTestWorker(config: Config): Promise<TestWorker> {
  quietTemporalRuntime();
  const env = testEnv();
  const database = openDatabase(config.mongo.uri!, config.mongo.db);
  const connection = await NativeConnection.connect({ address: config.temporal.address! });
  const clientConnection = await Connection.connect({ address: config.temporal.address! });
  const worker = await createWorker({
    connection,
    client: new Client({ connection: clientConnection, namespace: config.temporal.namespace }),
    namespace: config.temporal.namespace,
    taskQueue: config.temporal.taskQueue,
    db: database.db,
    workflowBundlePath: env.workflowBundlePath,
    config,
    secretsKey: TEST_SECRETS_KEY,
    shutdownGraceMs: 2000,
  });
  const running = worker.run();
  return {
    worker,
    async stop() {
      worker.shutdown();
      await running;
      await connection.close();
      await clientConnection.close();
      await database.close();
    },
  };
}
