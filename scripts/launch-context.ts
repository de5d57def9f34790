/**
 * What every step of the launcher shares: the configuration, its log, the supervisor of its children,
 * and the taking back of a fixed port that a sandbox holds.
 */
import path from 'node:path';
import type { Config } from '../src/config';
import type { Logger } from '../src/logger';
import { portOpen, reclaimPort } from '../src/process/net';
import type { Child } from './servers/child';
import type { Supervisor } from './servers/supervisor';
import type { StartFn } from './servers/supervisor-options';

/** The compiled tree the launcher runs from (dist/, this file being in dist/scripts). */
export const distDir = path.join(__dirname, '..');

export interface Launch {
  config: Config;
  log: Logger;
  supervision: Supervisor;
  /** Every start of a child on fixed `ports`, the first and each restart, first takes them back from a sandbox. */
  reclaiming: <C extends Child>(ports: number[], start: StartFn<C>) => StartFn<C>;
  /** Takes `port` back from a sandbox, then fails unless it is free (naming `variable`, which moves it). */
  portFree: (port: number, variable: string) => Promise<void>;
}

async function ensurePortFree(port: number, variable: string): Promise<void> {
  if (await portOpen(port)) {
    throw new Error(`port ${port} is already in use: stop what listens there, or set ${variable} to another port`);
  }
}

export function launchContext(config: Config, log: Logger, supervision: Supervisor): Launch {
  // A port of the service held by a sandbox (bound while the service's process was down) is taken back.
  const reclaim = async (port: number) => {
    if (config.sandboxes.processIsolation !== 'user') return;
    for (const uid of await reclaimPort(port, config.sandboxes.uidRange))
      log.warn(`port ${port} was held by sandbox uid ${uid}: its processes were stopped`);
  };
  return {
    config,
    log,
    supervision,
    reclaiming:
      <C extends Child>(ports: number[], start: StartFn<C>): StartFn<C> =>
      async (onSpawn) => {
        for (const port of ports) await reclaim(port);
        return start(onSpawn);
      },
    portFree: async (port, variable) => {
      await reclaim(port);
      await ensurePortFree(port, variable);
    },
  };
}
