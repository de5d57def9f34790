/**
 * A process that has no port to probe (the worker) shows it is not frozen by touching a file in its
 * DATA_DIR every HEARTBEAT_MS while its event loop runs; the launcher's liveness probe and the compose
 * file's health check read how old it is.
 */
import fs from 'node:fs';
import path from 'node:path';

export const HEARTBEAT_MS = 2000;

/** The worker's heartbeat file in its DATA_DIR. */
export const workerHeartbeatFile = (dataDir: string) => path.join(dataDir, 'worker.alive');

export function beatWhileAlive(file: string): void {
  const beat = () => fs.promises.writeFile(file, String(Date.now()), { mode: 0o600 }).catch(() => undefined);
  void beat();
  setInterval(() => void beat(), HEARTBEAT_MS).unref();
}

/** Whether the heartbeat file was written within `withinMs` (a missing file is not). */
export function heartbeatFresh(file: string, withinMs: number): boolean {
  const st = fs.statSync(file, { throwIfNoEntry: false });
  return st !== undefined && Date.now() - st.mtimeMs < withinMs;
}
