/**
 * The service under test in one call: a data directory of its own, the api and a worker over it (real
 * Temporal and FerretDB from the global setup), a Temporal client on demand, and one close() that ends
 * them all, the sandboxes' runtimes too. Options for the few suites that need more: no worker, the api's
 * logger, the worker's tracing, another workflow bundle, something of their own to end at the close.
 */
import { Client, Connection } from '@temporalio/client';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Config } from '../../src/config';
import type { Logger } from '../../src/logger';
import { freePort } from '../../src/process/net';
import type { WorkerDeps } from '../../worker/worker';
import { startTestApi, type TestApi } from './api';
import { testConfig } from './env';
import { killRuntimesUnder } from './sandboxes';
import { startTestWorker, type TestWorker } from './worker';

/** Variables over the test defaults; a function of the data directory when they name files made in it. */
export type ServiceEnv =
  Record<string, string> | ((dataDir: string) => Record<string, string> | Promise<Record<string, string>>);

export interface ServiceOptions {
  /** The api's logger (silent by default). */
  logger?: Logger;
  /** The worker's tracing (an exporter of the test's). */
  tracing?: WorkerDeps['tracing'];
  /** The code of another workflow bundle than the build's, written into the data directory for the worker. */
  workflowBundleCode?: string;
  /** `false`: the api alone, no worker (what happens when none answers, or workers the test runs itself). */
  worker?: boolean;
  /** What else the test made that must end before the directory goes (containers, mounts, uids), after the runtimes. */
  beforeRemove?: (dataDir: string) => void | Promise<void>;
}

export interface ServiceUnderTest {
  t: TestApi;
  /** Absent with `worker: false`. */
  worker?: TestWorker;
  dataDir: string;
  config: Config;
  /** A Temporal client on the service's namespace, connected at the first call and closed by close(). */
  temporal(): Promise<Client>;
  close(): Promise<void>;
}

/** Runtimes run under the data directory, or under SANDBOXES_DIR where that is elsewhere (isolated as root). */
function endRuntimes(dataDir: string, config: Config | undefined): void {
  killRuntimesUnder(dataDir);
  const sandboxes = config?.sandboxes.dir;
  if (sandboxes && path.relative(dataDir, sandboxes).startsWith('..')) killRuntimesUnder(sandboxes);
}

/**
 * Starts the api and a worker on a new data directory, with `env` over the test defaults. `prefix` names
 * the directory: under the system's temporary folder, or where it says when it is an absolute path.
 */
export async function startServiceUnderTest(
  prefix: string,
  env: ServiceEnv = {},
  options: ServiceOptions = {},
): Promise<ServiceUnderTest> {
  const dataDir = fs.mkdtempSync(path.isAbsolute(prefix) ? prefix : path.join(os.tmpdir(), prefix));
  let config: Config | undefined;
  const removeDir = async () => {
    endRuntimes(dataDir, config);
    await options.beforeRemove?.(dataDir);
    fs.rmSync(dataDir, { recursive: true, force: true });
  };
  let t: TestApi | undefined;
  try {
    const overrides = typeof env === 'function' ? await env(dataDir) : env;
    config = testConfig({ DATA_DIR: dataDir, API_PORT: String(await freePort()), ...overrides });
    t = await startTestApi(config, options.logger);
    const worker =
      options.worker === false
        ? undefined
        : await startTestWorker(config, options.tracing, bundleIn(dataDir, options.workflowBundleCode));
    return running(t, worker, dataDir, removeDir);
  } catch (e) {
    await t?.close();
    await removeDir();
    throw e;
  }
}

/** The started service, with its Temporal client made on demand and the close() that ends it all. */
function running(
  t: TestApi,
  worker: TestWorker | undefined,
  dataDir: string,
  removeDir: () => Promise<void>,
): ServiceUnderTest {
  let connection: Promise<Connection> | undefined;
  return {
    t,
    worker,
    dataDir,
    config: t.config,
    async temporal() {
      connection ??= Connection.connect({ address: t.config.temporal.address! });
      return new Client({ connection: await connection, namespace: t.config.temporal.namespace });
    },
    async close() {
      await worker?.stop();
      await t.close();
      await (await connection?.catch(() => undefined))?.close();
      await removeDir();
    },
  };
}

/** The path of the other bundle once written, or undefined for the build's. */
function bundleIn(dataDir: string, code: string | undefined): string | undefined {
  if (code === undefined) return undefined;
  const file = path.join(dataDir, 'workflow-bundle.js');
  fs.writeFileSync(file, code);
  return file;
}
