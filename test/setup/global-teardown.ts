import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/** Stops the servers; their logs of the last run stay in $TMPDIR/agent-control-test-logs for a post-mortem. */
export default async function globalTeardown(): Promise<void> {
  const servers = globalThis.__agentControlServers;
  if (!servers) return;
  for (const c of servers.children) await c.stop(5000); // in order: FerretDB before its PostgreSQL
  const keep = path.join(os.tmpdir(), 'agent-control-test-logs');
  fs.rmSync(keep, { recursive: true, force: true });
  fs.mkdirSync(keep, { recursive: true });
  for (const c of servers.children) fs.copyFileSync(c.logFile, path.join(keep, path.basename(c.logFile)));
  fs.rmSync(servers.dir, { recursive: true, force: true });
}
