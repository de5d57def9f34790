/**
 * A sandbox's limits (SandboxLimits) as the files of its cgroup: memory (swap included), processes and
 * CPU time, in v2's files or v1's, per controller.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { SandboxLimits } from './provider';

const CFS_PERIOD_US = 100_000;

/** Writes the limits into the sandbox's cgroup directories (one in v2; memory, pids, cpu in v1); null is no limit. */
export function writeLimits(version: 1 | 2, dirs: string[], limits: SandboxLimits): void {
  const set = (dir: string, file: string, value: string) => fs.writeFileSync(path.join(dir, file), value);
  if (version === 2) {
    const [dir] = dirs as [string];
    set(dir, 'memory.max', limits.memoryMb ? String(limits.memoryMb * 1024 * 1024) : 'max');
    if (fs.existsSync(path.join(dir, 'memory.swap.max'))) set(dir, 'memory.swap.max', limits.memoryMb ? '0' : 'max');
    set(dir, 'pids.max', limits.pidsLimit ? String(limits.pidsLimit) : 'max');
    set(
      dir,
      'cpu.max',
      limits.cpus
        ? `${Math.max(1000, Math.round(limits.cpus * CFS_PERIOD_US))} ${CFS_PERIOD_US}`
        : `max ${CFS_PERIOD_US}`,
    );
  } else {
    const [memory, pids, cpu] = dirs as [string, string, string];
    const bytes = limits.memoryMb ? String(limits.memoryMb * 1024 * 1024) : '-1';
    // Swap included, where the kernel accounts for it (memsw). memsw may never be below the limit, so order
    // matters: lifted first, then the limit, then memsw (a raised limit too).
    const memsw = fs.existsSync(path.join(memory, 'memory.memsw.limit_in_bytes'));
    if (memsw) set(memory, 'memory.memsw.limit_in_bytes', '-1');
    set(memory, 'memory.limit_in_bytes', bytes);
    if (memsw && limits.memoryMb) set(memory, 'memory.memsw.limit_in_bytes', bytes);
    set(pids, 'pids.max', limits.pidsLimit ? String(limits.pidsLimit) : 'max');
    set(cpu, 'cpu.cfs_period_us', String(CFS_PERIOD_US));
    set(cpu, 'cpu.cfs_quota_us', limits.cpus ? String(Math.max(1000, Math.round(limits.cpus * CFS_PERIOD_US))) : '-1');
  }
}
