/**
 * The service under test in one call: a data directory of its own, the api and a worker over it (real
 * Temporal and FerretDB from the global setup), and one close() that ends all three and the sandboxes'
 * runtimes under the directory.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Config } from '../../src/config';
import { freePort } from '../../src/process/net';
import { startTestApi, type TestApi } from './api';
import { testConfig } from './env';
import { killRuntimesUnder } from './sandboxes';
import { startTestWorker, type TestWorker } from './worker';

export interface ServiceUnderTest {
  t: TestApi;
  worker: TestWorker;
  dataDir: string;
  config: Config;
  close(): Promise<void>;
}

/** Starts the api and a worker on a new data directory (`prefix` names it), with `env` over the test defaults. */
export async function startServiceUnderTest(
  prefix: string,
  env: Record<string, string> = {},
): Promise<ServiceUnderTest> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  const removeDir = () => {
    killRuntimesUnder(dataDir);
    fs.rmSync(dataDir, { recursive: true, force: true });
  };
  const config = testConfig({ DATA_DIR: dataDir, API_PORT: String(await freePort()), ...env });
  let t: TestApi | undefined;
  try {
    t = await startTestApi(config);
    const worker = await startTestWorker(config);
    const api = t;
    return {
      t: api,
      worker,
      dataDir,
      config,
      close: async () => {
        await worker.stop();
        await api.close();
        removeDir();
      },
    };
  } catch (e) {
    await t?.close();
    removeDir();
    throw e;
  }
}
