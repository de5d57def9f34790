/** Starts `temporal server start-dev` with its SQLite file, UI port and the project's search attributes. */
import { Connection } from '@temporalio/client';
import path from 'node:path';
import { SEARCH_ATTRIBUTES } from '../../src/temporal/search-attributes';
import { portOpen } from '../../src/process/net';
import { startChild, type Child } from './child';

export interface TemporalDevServerOptions {
  binary: string;
  dataDir: string;
  port: number;
  uiPort: number;
  namespace: string;
  /** Write a pid file so a later start can stop an orphan (the launcher does; tests do not). */
  pidFile?: boolean;
  onSpawn?: (child: Child) => void;
  /** SQLite pragmas of its database file. @default TEMPORAL_SQLITE_PRAGMAS */
  sqlitePragmas?: Record<string, string>;
}

/**
 * Write-ahead log, synced at checkpoints rather than at each commit: a commit survives a crash or a
 * kill -9 of the server (the log is replayed at the next start); only a crash of the machine itself may
 * lose the last ones. SQLite's defaults (a rollback journal, `synchronous=FULL`) sync several times per
 * commit. Measured in bench/temporal-sqlite.ts.
 */
export const TEMPORAL_SQLITE_PRAGMAS: Record<string, string> = { journal_mode: 'wal', synchronous: 'normal' };

/** True when the frontend answers and the namespace exists (within `timeoutMs`, connecting included). */
export async function temporalAnswers(address: string, namespace: string, timeoutMs = 1500): Promise<boolean> {
  let connection: Connection | undefined;
  try {
    connection = await Connection.connect({ address, connectTimeout: Math.min(timeoutMs, 3000) });
    await connection.withDeadline(Date.now() + timeoutMs, () =>
      connection!.workflowService.describeNamespace({ namespace }),
    );
    return true;
  } finally {
    await connection?.close().catch(() => undefined);
  }
}

export async function startTemporalDevServer(
  o: TemporalDevServerOptions,
): Promise<Child & { address: string; uiUrl: string }> {
  const address = `127.0.0.1:${o.port}`;
  const args = [
    'server',
    'start-dev',
    '--db-filename',
    path.join(o.dataDir, 'temporal.db'),
    '--ip',
    '127.0.0.1',
    '--port',
    String(o.port),
    '--ui-port',
    String(o.uiPort),
    '--log-level',
    'warn',
    ...(o.namespace === 'default' ? [] : ['--namespace', o.namespace]),
    ...Object.entries(o.sqlitePragmas ?? TEMPORAL_SQLITE_PRAGMAS).flatMap(([k, v]) => ['--sqlite-pragma', `${k}=${v}`]),
    ...Object.entries(SEARCH_ATTRIBUTES).flatMap(([name, type]) => ['--search-attribute', `${name}=${type}`]),
    // A workflow task that schedules an activity gets the activity back in its answer when this worker can
    // run it (eager dispatch): one poll less per step of a start. Off by default on the server.
    '--dynamic-config-value',
    'system.enableActivityEagerExecution=true',
  ];
  const child = await startChild({
    name: 'temporal',
    command: o.binary,
    args,
    cwd: o.dataDir,
    logFile: path.join(o.dataDir, 'temporal.log'),
    pidFile: o.pidFile ? path.join(o.dataDir, 'temporal.pid') : undefined,
    onSpawn: o.onSpawn,
    readyTimeoutMs: 90_000,
    ready: async () => (await portOpen(o.port)) && (await temporalAnswers(address, o.namespace)),
    alive: () => temporalAnswers(address, o.namespace, 4000),
  });
  return Object.assign(child, { address, uiUrl: `http://127.0.0.1:${o.uiPort}` });
}
