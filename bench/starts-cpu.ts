/**
 * The processes bench:starts counts the CPU of, one row each: the api, each worker, the sandbox's
 * runtime and each server; and the runtime processes found below the workers.
 */
import fs from 'node:fs';
import { detachedChildren, processGroup, processTree, processTrees, readProcs, type CpuScope } from './cpu';
import { progress } from './report';
import type { BenchServers } from './service-processes';
import { WORKERS } from './starts-options';

/** The runtime processes now: the workers' detached children (the process provider's spawn). */
export const runtimesBelow = (workerPids: number[]): number[] =>
  workerPids.flatMap((pid) => detachedChildren(readProcs(), pid));

/**
 * The runtimes below the workers, each said on the progress output with its command line; throws when
 * there is none.
 */
export function findRuntimes(workerPids: number[]): number[] {
  const runtimePids = runtimesBelow(workerPids);
  if (runtimePids.length === 0) throw new Error(`no runtime process below the workers (pids ${workerPids.join(', ')})`);
  const cmdline = (pid: number) => fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ').trim();
  for (const pid of runtimePids) progress(`runtime: pid ${pid}, ${cmdline(pid)}`);
  return runtimePids;
}

/**
 * CPU by process over the concurrent phase. The api and the worker run in this process's group: each
 * counted as its process tree. The runtime is the worker's detached child (the process provider's
 * spawn) and its commands start sessions of their own: its tree, out of the worker's. The servers were
 * spawned detached, each leading its process group: FerretDB and Temporal are one process each, counted
 * as their group. PostgreSQL is not: each process the postmaster forks (a backend per connection, the
 * checkpointer, the WAL writer, ...) calls setsid() first (InitPostmasterChild), so the postmaster's
 * group holds the postmaster alone: counted as its tree.
 */
export function startsCpuScopes(
  apiPid: number,
  workerPids: number[],
  runtimePids: number[],
  servers: BenchServers,
): CpuScope[] {
  const serverName: Record<string, string> = { postgres: 'PostgreSQL', ferretdb: 'FerretDB', temporal: 'Temporal' };
  return [
    processTree('api', apiPid),
    ...workerPids.map((pid, i) =>
      processTree(
        WORKERS > 1 ? `worker ${i}` : 'worker',
        pid,
        (procs) => detachedChildren(procs, pid),
        `pid ${pid} and descendants but the runtime`,
      ),
    ),
    processTrees('sandbox runtime', runtimePids),
    ...servers.processes.map((p) =>
      (p.name === 'postgres' ? processTree : processGroup)(serverName[p.name] ?? p.name, p.pid),
    ),
  ];
}
