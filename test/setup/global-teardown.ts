import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { cleanUpDocker } from './docker';

/** Stops the servers; their logs of the last run stay in $TMPDIR/agent-control-test-logs for a post-mortem. */
export default async function globalTeardown(): Promise<void> {
  const servers = globalThis.__agentControlServers;
  if (!servers) return;
  for (const c of servers.children) await c.stop(5000); // in order: FerretDB before its PostgreSQL
  if (servers.docker) {
    const left = await cleanUpDocker(servers.docker.host).catch((e: Error) => [`(the clean-up failed: ${e.message})`]);
    if (left.length > 0) console.error(`[teardown] tests left these on the Docker engine (now removed): ${left.join('; ')}`);
    await servers.docker.engine.stop();
  }
  const keep = path.join(os.tmpdir(), 'agent-control-test-logs');
  fs.rmSync(keep, { recursive: true, force: true });
  fs.mkdirSync(keep, { recursive: true });
  for (const c of servers.children) fs.copyFileSync(c.logFile, path.join(keep, path.basename(c.logFile)));
  fs.rmSync(servers.dir, { recursive: true, force: true });
}
