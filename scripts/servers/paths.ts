/**
 * Pinned versions of the two servers the project builds from Go modules, and where their binaries are
 * cached: outside the checkout, keyed by version, so a second run (or a second clone) does not rebuild.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export const TEMPORAL_CLI_MODULE = 'github.com/temporalio/cli';
export const TEMPORAL_CLI_VERSION = 'v1.5.1';
export const FERRETDB_MODULE = 'github.com/FerretDB/FerretDB';
/** The real Temporal server and its schema tool: the version the CLI above embeds. */
export const TEMPORAL_SERVER_MODULE = 'go.temporal.io/server';
export const TEMPORAL_SERVER_VERSION = 'v1.29.1';
/** The Temporal web UI's server, the version the CLI embeds (its module graph is the CLI's). */
export const TEMPORAL_UI_MODULE = 'github.com/temporalio/ui-server/v2';
export const TEMPORAL_UI_VERSION = 'v2.42.1';
/** Must match scripts/ferretdb/go.mod, whose committed go.sum pins the module's checksum. */
export const FERRETDB_VERSION = 'v1.24.2';

export function serversCacheRoot(override?: string): string {
  if (override) return override;
  const base = process.env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache');
  return path.join(base, 'agent-control', 'servers');
}

export function temporalBinaryPath(cacheRoot: string): string {
  return path.join(cacheRoot, `temporal-cli-${TEMPORAL_CLI_VERSION}`, 'temporal');
}

/** The directory of the real server's two binaries: `temporal-server` and `temporal-sql-tool`. */
export function temporalServerDir(cacheRoot: string): string {
  return path.join(cacheRoot, `temporal-server-${TEMPORAL_SERVER_VERSION}`);
}

export function temporalUiBinaryPath(cacheRoot: string): string {
  return path.join(cacheRoot, `temporal-ui-${TEMPORAL_UI_VERSION}`, 'temporal-ui-server');
}

export function ferretdbBinaryPath(cacheRoot: string): string {
  return path.join(cacheRoot, `ferretdb-${FERRETDB_VERSION}`, 'ferretdb');
}

/** The checkout's root, found from a source file or its compiled copy under dist/. */
export function repoRoot(from: string = __dirname): string {
  let dir = from;
  for (;;) {
    const manifest = path.join(dir, 'package.json');
    if (fs.existsSync(manifest) && fs.existsSync(path.join(dir, 'scripts', 'ferretdb', 'go.mod'))) return dir;
    const parent = path.dirname(dir);
    if (parent === dir) throw new Error(`cannot find the project root above ${from}`);
    dir = parent;
  }
}
