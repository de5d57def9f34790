/**
 * What the Temporal server and its UI server share: a directory of their own with a `config` folder of
 * 0600 files, and a start as a child with `--root <dir> --config config --env <name>` and PATH and TZ only.
 */
import fs from 'node:fs';
import path from 'node:path';
import { startChild, type Child, type ChildSpec } from './child';

/**
 * A server's `config` directory under `dir` (both 0700, neither a link), and a writer of its files: each
 * written anew (0600: a node's holds the password), never through a link left there.
 */
export function configFiles(dir: string): (name: string, text: string) => void {
  const configDir = path.join(dir, 'config');
  fs.mkdirSync(configDir, { recursive: true, mode: 0o700 });
  for (const d of [dir, configDir]) {
    if (!fs.lstatSync(d).isDirectory()) throw new Error(`${d} is not a directory of its own (a link?)`);
    fs.chmodSync(d, 0o700);
  }
  return (name, text) => {
    const file = path.join(configDir, name);
    fs.rmSync(file, { force: true });
    fs.writeFileSync(file, text, { mode: 0o600, flag: 'wx' });
  };
}

/** Where a Temporal binary runs: its program, its own directory, and whether it writes a pid file there. */
export interface TemporalBinaryPlace {
  binary: string;
  dir: string;
  pidFile?: boolean;
  onSpawn?: (child: Child) => void;
}

export interface TemporalBinaryStart extends Pick<ChildSpec, 'readyTimeoutMs' | 'ready' | 'alive'> {
  /** The child's name, and its log's and pid file's in the directory (`<name>.log`, `<name>.pid`). */
  name: string;
  /** Its configuration file in `config/` (`<configName>.yaml`), given as `--env`. */
  configName: string;
  /** Flags after the configuration's, before `start`. */
  flags?: string[];
}

/** Starts a Temporal binary on its directory's configuration and resolves once `ready` answers. */
export function startTemporalBinary(place: TemporalBinaryPlace, o: TemporalBinaryStart): Promise<Child> {
  return startChild({
    name: o.name,
    command: place.binary,
    args: ['--root', place.dir, '--config', 'config', '--env', o.configName, ...(o.flags ?? []), 'start'],
    // Nothing of the launcher's environment (its secrets; a TEMPORAL_* variable would change what it loads).
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', TZ: process.env.TZ ?? 'UTC' },
    cwd: place.dir,
    logFile: path.join(place.dir, `${o.name}.log`),
    pidFile: place.pidFile ? path.join(place.dir, `${o.name}.pid`) : undefined,
    onSpawn: place.onSpawn,
    readyTimeoutMs: o.readyTimeoutMs,
    ready: o.ready,
    alive: o.alive,
  });
}
