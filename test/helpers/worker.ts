/** Runs the real worker (bundled workflows, real activities) in this process for a test file. */
import { Client, Connection } from '@temporalio/client';
import { NativeConnection } from '@temporalio/worker';
import { spawn, type ChildProcess } from 'node:child_process';
import type { Config } from '../../src/config';
import { openDatabase } from '../../src/store/mongo';
import { createWorker, type HostWorker, type WorkerDeps } from '../../worker/worker';
import { testEnv, TEST_SECRETS_KEY } from './env';
import { distPath } from './run';
import { quietTemporalRuntime } from './temporal-runtime';

export interface TestWorker {
  worker: HostWorker;
  stop(): Promise<void>;
}

/** `workflowBundlePath`: another bundle than the build's (a test that bundles its own interceptors). */
export async function startTestWorker(
  config: Config,
  tracing?: WorkerDeps['tracing'],
  workflowBundlePath?: string,
): Promise<TestWorker> {
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
    workflowBundlePath: workflowBundlePath ?? env.workflowBundlePath,
    config,
    secretsKey: TEST_SECRETS_KEY,
    shutdownGraceMs: 2000,
    tracing,
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

/**
 * A built entry point (dist/<entry>) as a process of its own, configured as `config` says with `dataDir`
 * (so a test can kill -9 it); `ready` once it has printed `readyLine`.
 */
export function startServiceProcess(
  entry: string[],
  readyLine: string,
  config: Config,
  dataDir: string,
  extraEnv: Record<string, string> = {},
): { child: ChildProcess; ready: Promise<void> } {
  const child = spawn(process.execPath, [distPath(...entry)], {
    env: {
      ...process.env,
      MONGODB_URI: config.mongo.uri,
      MONGODB_DB: config.mongo.db,
      TEMPORAL_ADDRESS: config.temporal.address,
      TEMPORAL_TASK_QUEUE: config.temporal.taskQueue,
      WORKFLOW_BUNDLE_PATH: testEnv().workflowBundlePath,
      SECRETS_KEY: TEST_SECRETS_KEY,
      DATA_DIR: dataDir,
      API_PORT: String(config.api.port),
      ...(config.sandboxes.processIsolation === 'restricted'
        ? {}
        : { SANDBOX_PROCESS_ISOLATION: config.sandboxes.processIsolation }),
      SANDBOX_CGROUPS: config.sandboxes.cgroups,
      SANDBOX_CGROUP_PARENT: config.sandboxes.cgroupParent,
      SANDBOX_DISKS: config.sandboxes.disks,
      LOG_FORMAT: 'json',
      LOG_LEVEL: 'info',
      ...extraEnv,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  const ready = new Promise<void>((resolve, reject) => {
    const look = (d: Buffer) => {
      out += d.toString();
      if (out.includes(readyLine)) resolve();
    };
    child.stdout!.on('data', look);
    child.stderr!.on('data', look);
    child.once('exit', (code) => reject(new Error(`${entry.join('/')} exited with ${code}: ${out}`)));
  });
  return { child, ready };
}

/** The built worker as a process of its own (so a test can kill -9 it); `ready` once it polls. */
export function startWorkerProcess(
  config: Config,
  dataDir: string,
  extraEnv: Record<string, string> = {},
): { child: ChildProcess; ready: Promise<void> } {
  return startServiceProcess(['worker', 'main.js'], 'worker polling', config, dataDir, extraEnv);
}

/**
 * Worker processes a test starts, kills with SIGKILL and replaces: `start()` answers a ready one,
 * `kill(w)` returns once it is gone, `killAll()` (afterAll) ends those still running.
 */
export function workerProcesses(
  config: () => Config,
  dataDir: () => string,
  extraEnv: () => Record<string, string> = () => ({}),
) {
  const all: ChildProcess[] = [];
  const kill = async (w: ChildProcess) => {
    if (w.exitCode !== null || w.signalCode !== null) return;
    const gone = new Promise((r) => w.once('exit', r));
    w.kill('SIGKILL');
    await gone;
  };
  return {
    all,
    async start(): Promise<ChildProcess> {
      const w = startWorkerProcess(config(), dataDir(), extraEnv());
      all.push(w.child);
      await w.ready;
      return w.child;
    },
    kill,
    killAll: () => Promise.all(all.map(kill)),
  };
}
