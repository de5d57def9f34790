import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { detectCgroups, parentDirs } from '../../activities/sandbox-providers/cgroup-layout';
import { TEST_CGROUP_PARENT } from '../helpers/env';
import { cleanUpDocker } from './docker';

/** The cgroups the tests' process sandboxes left (their runtimes killed by the tests, not deleted): empty ones go. */
function removeTestCgroups(): void {
  const found = process.getuid?.() === 0 ? detectCgroups() : null;
  if (!found || !('layout' in found)) return;
  for (const parent of parentDirs(found.layout, TEST_CGROUP_PARENT)) {
    for (const name of fs.existsSync(parent) ? fs.readdirSync(parent, { withFileTypes: true }) : []) {
      try {
        if (name.isDirectory()) fs.rmdirSync(path.join(parent, name.name));
      } catch {
        // still holds a process (a sandbox a test left running): the next run's teardown tries again
      }
    }
  }
}

/** Stops the servers; their logs of the last run stay in $TMPDIR/agent-control-test-logs for a post-mortem. */
export default async function globalTeardown(): Promise<void> {
  const servers = globalThis.__agentControlServers;
  if (!servers) return;
  for (const c of servers.children) await c.stop(5000); // in order: FerretDB before its PostgreSQL
  if (servers.docker) {
    const left = await cleanUpDocker(servers.docker.host).catch((e: Error) => [`(the clean-up failed: ${e.message})`]);
    if (left.length > 0)
      console.error(`[teardown] tests left these on the Docker engine (now removed): ${left.join('; ')}`);
    await servers.docker.engine.stop();
  }
  removeTestCgroups();
  const keep = path.join(os.tmpdir(), 'agent-control-test-logs');
  fs.rmSync(keep, { recursive: true, force: true });
  fs.mkdirSync(keep, { recursive: true });
  for (const c of servers.children) fs.copyFileSync(c.logFile, path.join(keep, path.basename(c.logFile)));
  fs.rmSync(servers.dir, { recursive: true, force: true });
}
