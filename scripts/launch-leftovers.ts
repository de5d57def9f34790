/**
 * What a launcher killed with -9 leaves running: its servers (its api and worker stop by themselves),
 * found by the launcher's own pid files and stopped before a new start.
 */
import fs from 'node:fs';
import path from 'node:path';
import { reapStale } from './servers/child';
import { distDir } from './launch-context';

/**
 * Only the launcher's own pid files are read, and a pid is stopped only if it still runs the same program;
 * each pid file is removed after.
 */
export async function reapLeftovers(dataDir: string): Promise<void> {
  const known: [file: string, program: string, signal?: NodeJS.Signals][] = [
    [path.join(dataDir, 'api.pid'), path.join(distDir, 'src', 'api', 'main.js')],
    [path.join(dataDir, 'worker.pid'), path.join(distDir, 'worker', 'main.js')],
    [path.join(dataDir, 'temporal', 'temporal.pid'), 'temporal-cli-'],
    // Its directory, on its command line after --root: no other data directory's server matches.
    [path.join(dataDir, 'temporal-server', 'temporal.pid'), path.join(dataDir, 'temporal-server')],
    [path.join(dataDir, 'temporal-ui', 'temporal-ui.pid'), path.join(dataDir, 'temporal-ui')],
    [path.join(dataDir, 'ferretdb', 'ferretdb.pid'), 'ferretdb-'],
    // Its cluster's path, on its command line after -D: no other PostgreSQL on the machine matches.
    [path.join(dataDir, 'postgres', 'postgres.pid'), path.join(dataDir, 'postgres', 'data'), 'SIGINT'],
  ];
  for (const [file, program, signal] of known) {
    await reapStale(file, program, signal); // PostgreSQL's fast shutdown is SIGINT: it stops its backends itself
    fs.rmSync(file, { force: true });
  }
}
