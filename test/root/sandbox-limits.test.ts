/**
 * A process sandbox's cgroup (as root, the machine's real hierarchy: v1 here, v2 where the host has it):
 * its memory, process and CPU limits hold against the usual runaways, its pause stops what forks, a
 * runtime killed by its memory limit says so, and delete leaves no process and no cgroup behind; a
 * hierarchy that refuses the parent cgroup is found out. One user's runaway sandbox beside another's
 * start, through the service: sandbox-limits-service.test.ts.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { SandboxCgroups, sandboxCgroups } from '../../activities/sandbox-providers/process-cgroups';
import { SandboxDisks } from '../../activities/sandbox-providers/process-disks';
import { SandboxTree } from '../../activities/sandbox-providers/sandbox-tree';
import { ProcessProvider } from '../../activities/sandbox-providers/process-provider';
import type { RuntimeHandle } from '../../src/store/runtime-handle';
import { readStat } from '../../src/process/process-tree';
import { usableCgroups } from '../helpers/cgroups';
import { eventually } from '../helpers/eventually';
import { killRuntimesUnder } from '../helpers/sandboxes';

const found = usableCgroups();
const layout = found.layout;
const cgroups = new SandboxCgroups(layout, `agent-control-test-${process.pid}`);

const cpuNs = (sandboxId: string) => cgroups.cpuUsageNs(sandboxId)!;

describe(`process sandboxes in a cgroup each (cgroup v${found.layout.version})`, () => {
  let root: string;
  let provider: ProcessProvider;
  const started: [string, RuntimeHandle][] = [];

  beforeAll(() => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'sandbox-limits-'));
    const tree = new SandboxTree({ sandboxesDir: path.join(root, 'sandboxes') });
    provider = new ProcessProvider({
      tree,
      runtimeEntry: '/nonexistent',
      cgroups,
      disks: new SandboxDisks(tree),
      defaultLimits: { memoryMb: 4096, cpus: 1, pidsLimit: 1024, diskMb: null },
    });
  });

  afterAll(async () => {
    for (const [id, handle] of started) await provider.delete(id, handle).catch(() => undefined);
    killRuntimesUnder(root);
    fs.rmSync(root, { recursive: true, force: true });
    for (const r of found.layout.version === 2 ? [found.layout.root] : Object.values(found.layout.roots))
      fs.rmdirSync(path.join(r, `agent-control-test-${process.pid}`));
  });

  const start = async (
    sandboxId: string,
    script: string,
    limits: { memory_mb?: number; cpus?: number; pids_limit?: number; disk_mb?: number },
  ) => {
    const spec = {
      id: 'limited',
      command: ['/bin/sh', '-c', script],
      working_dir: 'workspace',
      initial_env: {},
      memory_mb: null,
      cpus: null,
      pids_limit: null,
      disk_mb: null,
      ...limits,
    };
    const r = await provider.start({
      sandboxId,
      spec,
      sessionApiKey: 'key',
      controlPlaneUrl: 'http://127.0.0.1:9',
    } as never);
    started.push([sandboxId, r.handle]);
    return r.handle as RuntimeHandle & { pid: number; dir: string };
  };
  const log = (dir: string) => fs.readFileSync(path.join(dir, 'runtime.log'), 'utf8');

  it('a memory hog past the limit is killed by the kernel, the runtime lives on; one that takes the runtime down says why', async () => {
    // The hog: a child of the runtime that holds 400 MiB (tail keeps what it reads) under a limit of 128.
    const h = await start('hog', 'head -c 400000000 /dev/zero | tail > /dev/null; echo "hog ended $?"; sleep 600', {
      memory_mb: 128,
    });
    await eventually(() => expect(log(h.dir)).toContain('hog ended 137'), { timeoutMs: 30_000, intervalMs: 100 }); // 128 + 9: SIGKILL
    expect(readStat(h.pid)!.state).not.toBe('Z');
    expect(cgroups.oomKills('hog')).toBeGreaterThanOrEqual(1);
    expect(await provider.inspect(h)).toEqual({ state: 'running' });

    // The runtime itself the hog: gone, and its status says it was the memory limit.
    const self = await start('self-hog', 'exec tail /dev/zero', { memory_mb: 96 });
    const gone = await eventually(
      async () => {
        const s = await provider.inspect(self);
        expect(s.state).toBe('missing');
        return s;
      },
      { timeoutMs: 30_000, intervalMs: 100 },
    );
    expect((gone as { detail: string }).detail).toMatch(
      /after reaching its memory limit of 96 MiB \(\d+ process\(es\) killed by the kernel\)/,
    );
  }, 90_000);

  it('a fork loop stops at the process limit', async () => {
    // The loop's shell gives up at the first fork the kernel refuses; the runtime goes on (exec: no fork).
    const h = await start(
      'forks',
      '( i=0; while [ $i -lt 300 ]; do sleep 600 & i=$((i+1)); done ); echo "loop ended $?"; exec sleep 600',
      { pids_limit: 64 },
    );
    await eventually(() => expect(log(h.dir)).toMatch(/loop ended [1-9]/), { timeoutMs: 30_000, intervalMs: 100 });
    const members = cgroups.members('forks');
    expect(members.length).toBeLessThanOrEqual(64);
    expect(members.length).toBeGreaterThan(32); // it did fork, up to the limit
    expect(log(h.dir)).toMatch(/Cannot fork/i);
    expect(readStat(h.pid)!.state).not.toBe('Z');
  }, 60_000);

  it('spinners on every core get the cores of the limit, not the machine', async () => {
    const cores = os.availableParallelism();
    const spinners = Array.from({ length: cores * 2 }, () => '( while :; do :; done ) &').join(' ');
    await start('spin', `${spinners} sleep 600`, { cpus: 0.5 });
    const before = cpuNs('spin');
    const t0 = process.hrtime.bigint();
    await new Promise((r) => setTimeout(r, 3000));
    const used = (cpuNs('spin') - before) / Number(process.hrtime.bigint() - t0);
    expect(used).toBeGreaterThan(0.3);
    expect(used).toBeLessThan(0.65); // 0.5 of a core, with the period's slack
  }, 30_000);

  it('pause stops everything in the cgroup, also what forks in a loop; resume continues it', async () => {
    const h = await start('pause', '( while :; do sleep 0.01 & done ) & sleep 600', { pids_limit: 512 });
    await eventually(() => expect(cgroups.members('pause').length).toBeGreaterThan(3), {
      timeoutMs: 10_000,
      intervalMs: 50,
    });
    await provider.pause(h);
    const members = cgroups.members('pause');
    expect(members.filter((pid) => !['T', 'Z'].includes(readStat(pid)?.state ?? 'Z'))).toEqual([]);
    await new Promise((r) => setTimeout(r, 300));
    expect(cgroups.members('pause').sort()).toEqual(members.sort()); // nothing forked while paused
    await provider.resume(h);
    expect(cgroups.members('pause').filter((pid) => readStat(pid)?.state === 'T')).toEqual([]);
  }, 30_000);

  it('a disk filler past the limit gets "No space left on device" on its own file system; the host and the other sandboxes keep theirs', async () => {
    const other = await start('disk-other', 'sleep 600', { disk_mb: 64 });
    const h = await start('disk', 'head -c 200000000 /dev/zero > fill; echo "filler ended $?"; sleep 600', {
      disk_mb: 64,
    });
    await eventually(() => expect(log(h.dir)).toMatch(/No space left on device[\s\S]*filler ended 1/), {
      timeoutMs: 30_000,
      intervalMs: 100,
    });
    expect(readStat(h.pid)!.state).not.toBe('Z');
    const full = fs.statfsSync(h.dir);
    expect((full.blocks * full.bsize) / 1024 / 1024).toBeLessThanOrEqual(64);
    expect(fs.statSync(path.join(h.dir, 'workspace', 'fill')).size).toBeLessThan(64 * 1024 * 1024);
    // The other sandbox's file system is untouched; the image on the host holds only what was written.
    const free = fs.statfsSync(other.dir);
    expect(free.bfree / free.blocks).toBeGreaterThan(0.9);
    expect(fs.statSync(path.join(root, 'disks', 'disk.ext4')).blocks * 512).toBeLessThan(80 * 1024 * 1024);
    // Delete unmounts it and removes its image.
    await provider.delete('disk', h);
    expect(fs.existsSync(path.join(root, 'disks', 'disk.ext4'))).toBe(false);
    expect(fs.existsSync(h.dir)).toBe(false);
    expect(fs.readFileSync('/proc/self/mounts', 'utf8')).not.toContain(` ${h.dir} `);
  }, 60_000);

  it('a process that forks and exits in a loop (its pid never the same twice) is paused and killed all the same', async () => {
    // Each generation forks the next and exits: a list read from /proc is stale before it is used.
    const h = await start(
      'chain',
      "perl -e 'while (1) { exit if fork; select(undef, undef, undef, 0.001) }' & sleep 600",
      { pids_limit: 256 },
    );
    const cmdline = (pid: number) => {
      try {
        return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8');
      } catch {
        return ''; // gone
      }
    };
    const chain = () =>
      cgroups
        .members('chain')
        .filter((pid) => readStat(pid) && readStat(pid)!.state !== 'Z' && cmdline(pid).startsWith('perl'));
    await eventually(() => expect(chain().length).toBeGreaterThan(0), { timeoutMs: 10_000, intervalMs: 20 });
    await provider.pause(h);
    const paused = chain();
    expect(paused.length).toBeGreaterThan(0);
    await new Promise((r) => setTimeout(r, 300));
    expect(chain()).toEqual(paused); // the same generation, stopped: nothing got away
    expect(paused.map((pid) => readStat(pid)!.state)).toEqual(paused.map(() => 'T'));
    await provider.resume(h);
    await eventually(() => expect(chain()).not.toEqual(paused), { timeoutMs: 10_000, intervalMs: 20 }); // it runs again
    await provider.delete('chain', h);
    expect(cgroups.members('chain')).toEqual([]);
  }, 60_000);

  it('delete ends every process of the cgroup (one that left the runtime too) and removes the cgroup', async () => {
    const h = await start(
      'gone',
      '( setsid sh -c "while :; do :; done" & ); ( while :; do sleep 0.01 & done ) & sleep 600',
      {},
    );
    await eventually(() => expect(cgroups.members('gone').length).toBeGreaterThan(3), {
      timeoutMs: 10_000,
      intervalMs: 50,
    });
    const dirs = found.layout.version === 2 ? [found.layout.root] : Object.values(found.layout.roots);
    for (const r of dirs) expect(fs.existsSync(path.join(r, `agent-control-test-${process.pid}`, 'gone'))).toBe(true);
    await provider.delete('gone', h);
    for (const r of dirs) expect(fs.existsSync(path.join(r, `agent-control-test-${process.pid}`, 'gone'))).toBe(false);
    expect(readStat(h.pid) === null || readStat(h.pid)!.state === 'Z').toBe(true);
  }, 30_000);
});

describe('a hierarchy that refuses the parent cgroup', () => {
  it('is found out when the worker starts: auto runs without cgroups and says why, on refuses to start', () => {
    // A cgroup v2 layout whose subtree_control cannot be written (as a container's cgroup that holds processes: EBUSY).
    const mount = fs.mkdtempSync(path.join(os.tmpdir(), 'cgroup-v2-'));
    try {
      fs.writeFileSync(path.join(mount, 'cgroup.controllers'), 'cpuset cpu io memory pids\n');
      fs.mkdirSync(path.join(mount, 'cgroup.subtree_control'));
      const auto = sandboxCgroups('auto', 'agent-control-test-refused', mount);
      expect(auto.cgroups).toBeUndefined();
      expect(auto.why).toMatch(/^the cgroup agent-control-test-refused could not be prepared \(EISDIR/);
      expect(() => sandboxCgroups('on', 'agent-control-test-refused', mount)).toThrow(
        /SANDBOX_CGROUPS=on, but the cgroup agent-control-test-refused could not be prepared/,
      );
      expect(sandboxCgroups('off', 'agent-control-test-refused', mount)).toEqual({ cgroups: undefined, why: null });
    } finally {
      fs.rmSync(mount, { recursive: true, force: true });
    }
  });
});
