/**
 * A child of the launcher that has no port to probe (the worker) shows it is not frozen by touching a
 * file the launcher names (AGENT_CONTROL_HEARTBEAT_FILE, in its own DATA_DIR) every HEARTBEAT_MS; the
 * launcher's liveness probe reads how old it is.
 */
import fs from 'node:fs';

export const HEARTBEAT_MS = 2000;

export function beatWhileAlive(env: NodeJS.ProcessEnv = process.env): void {
  const file = env.AGENT_CONTROL_HEARTBEAT_FILE;
  if (!file) return;
  const beat = () => fs.promises.writeFile(file, String(Date.now()), { mode: 0o600 }).catch(() => undefined);
  void beat();
  setInterval(() => void beat(), HEARTBEAT_MS).unref();
}

/** Whether the heartbeat file was written within `withinMs` (a missing file is not). */
export function heartbeatFresh(file: string, withinMs: number): boolean {
  const st = fs.statSync(file, { throwIfNoEntry: false });
  return st !== undefined && Date.now() - st.mtimeMs < withinMs;
}
