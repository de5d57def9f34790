/**
 * The api process of the events bench: started on the bench's servers and a database of its choosing,
 * with the limits the bench's load would hit lifted, and waited for until it is ready.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { dist, type BenchServers } from './service-processes';
import { SecretBox } from '../src/auth/secret-box';
import { freePort } from '../src/process/net';

export interface BenchApi {
  base: string;
  port: number;
  process: ChildProcess;
  /** Stops the api and waits until it is gone. */
  stop(): Promise<void>;
}

/**
 * Starts the api (dist/src/api/main.js) on the bench's servers and database and waits until it is
 * ready, which is after it made its indexes (with POSTGRES_URL, also the PostgreSQL ones).
 */
export async function startEventsApi(servers: BenchServers, dbName: string): Promise<BenchApi> {
  const port = await freePort();
  const child = spawn(process.execPath, [dist('src', 'api', 'main.js')], {
    // One bench user holds the live case's 1,000 websockets: the per-user cap (100 by default) is lifted.
    env: servers.serviceEnv({
      MONGODB_DB: dbName,
      API_PORT: String(port),
      MAX_BODY_BYTES: String(50 * 1024 * 1024),
      SECRETS_KEY: SecretBox.generateKey(),
      USER_MAX_WEBSOCKETS: '0',
    }),
    // Its log lines (warnings) go to stderr with the bench's progress: stdout holds only the table.
    stdio: ['ignore', 2, 2],
  });
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGTERM');
    await exited;
  };
  const base = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 60_000;
  for (;;) {
    if ((await fetch(`${base}/ready`).catch(() => null))?.status === 200) break;
    if (child.exitCode !== null || child.signalCode !== null)
      throw new Error(`the api exited (${child.exitCode ?? child.signalCode}) before it was ready`);
    if (Date.now() > deadline) {
      await stop();
      throw new Error('the api was not ready within 60 s');
    }
    await sleep(100);
  }
  return { base, port, process: child, stop };
}
