/**
 * The service itself, supervised: the worker (ready once its log says it polls, alive while its heartbeat
 * file is fresh) and the api (ready on /ready, alive on /health).
 */
import fs from 'node:fs';
import path from 'node:path';
import { heartbeatFresh, workerHeartbeatFile } from '../src/process/heartbeat';
import { distDir, type Launch } from './launch-context';
import { startChild } from './servers/child';

/** Starts the worker, then the api, both with `env`; answers the folder of their logs. */
export async function launchService(launch: Launch, env: NodeJS.ProcessEnv): Promise<string> {
  await launch.portFree(launch.config.api.port, 'API_PORT');
  const logs = path.join(launch.config.dataDir, 'logs');
  await startWorker(launch, env, path.join(logs, 'worker.log'));
  await startApi(launch, env, path.join(logs, 'api.log'));
  return logs;
}

async function startWorker({ config, supervision }: Launch, env: NodeJS.ProcessEnv, workerLog: string): Promise<void> {
  const heartbeat = workerHeartbeatFile(config.dataDir);
  fs.rmSync(heartbeat, { force: true });
  await supervision.start('worker', (onSpawn) => {
    // Each start reads only what it wrote: the log is appended to across restarts.
    const from = sizeOf(workerLog);
    return startChild({
      onSpawn,
      name: 'worker',
      command: process.execPath,
      args: [path.join(distDir, 'worker', 'main.js')],
      // The worker makes no PostgreSQL indexes: no POSTGRES_URL (its MONGODB_URI has the credentials FerretDB needs).
      env: { ...env, POSTGRES_URL: '' },
      logFile: workerLog,
      pidFile: path.join(config.dataDir, 'worker.pid'),
      ready: async () => logSince(workerLog, from).includes('worker polling'),
      // It has no port: it touches a file every 2 s while its event loop runs (src/process/heartbeat.ts).
      alive: async () => heartbeatFresh(heartbeat, 10_000),
    });
  });
}

async function startApi(
  { config, supervision, reclaiming }: Launch,
  env: NodeJS.ProcessEnv,
  logFile: string,
): Promise<void> {
  await supervision.start(
    'api',
    reclaiming([config.api.port], (onSpawn) =>
      startChild({
        onSpawn,
        name: 'api',
        command: process.execPath,
        args: [path.join(distDir, 'src', 'api', 'main.js')],
        env,
        logFile,
        pidFile: path.join(config.dataDir, 'api.pid'),
        ready: async () => (await fetch(`http://${config.api.host}:${config.api.port}/ready`)).ok,
        // Its own liveness, not its dependencies' (/ready): an api whose database is away answers 503 and
        // waits for it; restarting it would not help and could not pass /ready meanwhile.
        alive: async () =>
          (await fetch(`http://${config.api.host}:${config.api.port}/health`, { signal: AbortSignal.timeout(4000) }))
            .ok,
      }),
    ),
  );
}

/** What `file` got after its first `from` bytes: the file is appended to across restarts. */
function logSince(file: string, from: number): string {
  try {
    const fd = fs.openSync(file, 'r');
    try {
      const size = fs.fstatSync(fd).size;
      const buf = Buffer.alloc(Math.max(0, size - from));
      fs.readSync(fd, buf, 0, buf.length, from);
      return buf.toString('utf8');
    } finally {
      fs.closeSync(fd);
    }
  } catch {
    return '';
  }
}

const sizeOf = (file: string) => (fs.existsSync(file) ? fs.statSync(file).size : 0);
